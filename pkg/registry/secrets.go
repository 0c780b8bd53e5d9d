package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Secrets is core/v1 secrets: type defaults to Opaque and is immutable.
func Secrets() Strategy {
	return &Resource[*corev1.Secret]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Secret"),
			Resource: "secrets", Singular: "secret",
			Namespaced: true,
		},
		NewFunc:     func() *corev1.Secret { return &corev1.Secret{} },
		NewListFunc: func() runtime.Object { return &corev1.SecretList{} },
		Defaults: func(s *corev1.Secret) {
			if s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
			// stringData is write-only: it is merged into data.
			for k, v := range s.StringData {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[k] = []byte(v)
			}
			s.StringData = nil
		},
		ValidateFunc: func(s *corev1.Secret) field.ErrorList {
			var errs field.ErrorList
			size := 0
			for k, v := range s.Data {
				errs = append(errs, validateDataKey(k, field.NewPath("data").Key(k))...)
				size += len(v)
			}
			if size > maxDataSize {
				errs = append(errs, field.TooLong(field.NewPath("data"), "", maxDataSize))
			}
			return errs
		},
		ValidateUpdateFunc: func(s, old *corev1.Secret) field.ErrorList {
			var errs field.ErrorList
			if s.Type != old.Type {
				errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
			}
			return append(errs, validateImmutableData[string](old.Immutable, s.Immutable, nil, nil, s.Data, old.Data)...)
		},
		Fields: func(s *corev1.Secret) fields.Set { return fields.Set{"type": string(s.Type)} },
	}
}

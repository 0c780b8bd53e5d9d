package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataSize caps the data of a ConfigMap or Secret, as Kubernetes does.
const maxDataSize = 1 << 20

// ConfigMaps is core/v1 configmaps.
func ConfigMaps() Strategy {
	return &Resource[*corev1.ConfigMap]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			Resource: "configmaps", Singular: "configmap", ShortNames: []string{"cm"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
		ValidateFunc: func(c *corev1.ConfigMap) field.ErrorList {
			var errs field.ErrorList
			size := 0
			for k, v := range c.Data {
				errs = append(errs, validateDataKey(k, field.NewPath("data").Key(k))...)
				if _, dup := c.BinaryData[k]; dup {
					errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
				}
				size += len(v)
			}
			for k, v := range c.BinaryData {
				errs = append(errs, validateDataKey(k, field.NewPath("binaryData").Key(k))...)
				size += len(v)
			}
			if size > maxDataSize {
				errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
			}
			return errs
		},
		ValidateUpdateFunc: func(c, old *corev1.ConfigMap) field.ErrorList {
			return validateImmutableData(old.Immutable, c.Immutable, c.Data, old.Data, c.BinaryData, old.BinaryData)
		},
	}
}

func validateDataKey(k string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(k) {
		errs = append(errs, field.Invalid(fld, k, msg))
	}
	return errs
}

// validateImmutableData rejects changes to data marked immutable.
func validateImmutableData[V comparable](oldImm, newImm *bool, data, oldData map[string]V, bin, oldBin map[string][]byte) field.ErrorList {
	if oldImm == nil || !*oldImm {
		return nil
	}
	var errs field.ErrorList
	if newImm == nil || !*newImm {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if !mapsEqual(data, oldData) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	if len(bin) != len(oldBin) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
	} else {
		for k, v := range bin {
			if string(oldBin[k]) != string(v) {
				errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
				break
			}
		}
	}
	return errs
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

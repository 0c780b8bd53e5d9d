package apiextensions

import (
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/apiextensions/schema"
	"github.com/kplane/kplane/pkg/registry"
)

// CRD is the type of the objects CustomResourceDefinitions serves.
type CRD = apiextensionsv1.CustomResourceDefinition

// crdStrategy adds the delete behaviour of CRDs to the generic strategy.
type crdStrategy struct {
	*registry.Resource[*CRD]
}

var (
	_ registry.DeletePreparer = crdStrategy{}
	_ registry.Warner         = crdStrategy{}
)

// Warnings implements registry.Warner: what Kubernetes warns about in a
// CRD's schemas (unknown formats, sets of objects).
func (crdStrategy) Warnings(obj runtime.Object) []string {
	crd := obj.(*CRD)
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			for _, w := range schema.Warnings(v.Schema.OpenAPIV3Schema) {
				if !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// CustomResourceDefinitions is apiextensions.k8s.io/v1
// customresourcedefinitions: cluster-scoped, short names crd and crds,
// with a status subresource that only the server's CRD controller and
// clients writing status change.
func CustomResourceDefinitions() registry.Strategy {
	return crdStrategy{&registry.Resource[*CRD]{
		Meta: registry.Info{
			GVK:      apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
			Resource: "customresourcedefinitions", Singular: "customresourcedefinition",
			ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
			Status: true,
		},
		NewFunc:     func() *CRD { return &CRD{} },
		NewListFunc: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Spec:        func(c *CRD) any { return c.Spec },
		CopyStatus:  func(dst, src *CRD) { dst.Status = *src.Status.DeepCopy(); addStoredVersion(dst) },
		ResetForStatus: func(obj, old *CRD) {
			obj.Spec = old.Spec
		},
		ResetStatus: func(c *CRD) {
			c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			addStoredVersion(c)
		},
		Defaults:           defaultCRD,
		ValidateFunc:       func(c *CRD) field.ErrorList { return validateCRD(c) },
		ValidateUpdateFunc: func(c, old *CRD) field.ErrorList { return validateCRDUpdate(c, old) },
	}}
}

// PrepareForDelete implements registry.DeletePreparer: the first delete
// of a CRD adds the cleanup finalizer, which the server removes once every
// custom resource of the CRD is gone, and marks it Terminating.
func (crdStrategy) PrepareForDelete(obj runtime.Object, now time.Time) {
	crd := obj.(*CRD)
	if !slices.Contains(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
	SetCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Terminating,
		Status:  apiextensionsv1.ConditionTrue,
		Reason:  "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	}, metav1.NewTime(now))
}

// defaultCRD fills in what Kubernetes defaults in a v1 CRD: the singular
// name, the list kind, conversion strategy None, webhook service ports,
// and, for every served version, nothing else (schemas are not defaulted).
func defaultCRD(c *CRD) {
	apiextensionsv1.SetDefaults_CustomResourceDefinitionSpec(&c.Spec)
	if conv := c.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
		if svc := conv.Webhook.ClientConfig.Service; svc != nil {
			apiextensionsv1.SetDefaults_ServiceReference(svc)
		}
	}
}

// addStoredVersion records the current storage version in
// status.storedVersions, as Kubernetes does on every write.
func addStoredVersion(c *CRD) {
	for _, v := range c.Spec.Versions {
		if v.Storage && !slices.Contains(c.Status.StoredVersions, v.Name) {
			c.Status.StoredVersions = append(c.Status.StoredVersions, v.Name)
		}
	}
}

// StorageVersion returns the name of the CRD's storage version, "" when it
// has none (an invalid CRD).
func StorageVersion(c *CRD) string {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

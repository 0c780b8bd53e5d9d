package apiextensions

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FindCondition returns the CRD's condition of type t, or nil.
func FindCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// IsConditionTrue reports whether the CRD's condition of type t is True.
func IsConditionTrue(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	c := FindCondition(crd, t)
	return c != nil && c.Status == apiextensionsv1.ConditionTrue
}

// SetCondition sets c on the CRD, keeping the last transition time of a
// condition whose status does not change and stamping now otherwise. It
// reports whether anything changed.
func SetCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) bool {
	old := FindCondition(crd, c.Type)
	if old == nil {
		c.LastTransitionTime = now
		crd.Status.Conditions = append(crd.Status.Conditions, c)
		return true
	}
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return false
	}
	if old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	} else {
		c.LastTransitionTime = now
	}
	*old = c
	return true
}

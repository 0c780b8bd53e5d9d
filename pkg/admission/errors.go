package admission

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// NewForbidden returns the 403 Kubernetes answers when admission refuses
// the request: `<resource> "<name>" is forbidden: <err>`. As in
// Kubernetes, the resource is named without the subresource, and the name
// is the request's, else the object's name or generateName, else
// "Unknown". A Forbidden err is returned as it is.
func NewForbidden(a *Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := a.Name
	if name == "" {
		name = "Unknown"
		if a.Object != nil {
			if m, merr := meta.Accessor(a.Object); merr == nil {
				switch {
				case m.GetName() != "":
					name = m.GetName()
				case m.GetGenerateName() != "":
					name = m.GetGenerateName()
				}
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}

// toStatus keeps an API error as it is and makes any other a Forbidden.
func toStatus(a *Attributes, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return NewForbidden(a, err)
}

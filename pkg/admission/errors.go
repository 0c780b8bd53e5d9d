package admission

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewForbidden returns the 403 Kubernetes answers when admission refuses
// the request: `<resource> "<name>" is forbidden: <err>`.
func NewForbidden(a *Attributes, err error) error {
	name := a.Name
	if name == "" {
		if m, ok := a.Object.(interface{ GetGenerateName() string }); ok && m.GetGenerateName() != "" {
			name = m.GetGenerateName()
		}
	}
	gr := a.Resource.GroupResource()
	if a.Subresource != "" {
		gr = schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/" + a.Subresource}
	}
	return apierrors.NewForbidden(gr, name, err)
}

// toStatus keeps an API error as it is and makes any other a Forbidden.
func toStatus(a *Attributes, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return NewForbidden(a, err)
}

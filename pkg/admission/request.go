package admission

import (
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NewRequest returns the AdmissionRequest of a request a matched as inv
// (the resource and kind a rule named, which an equivalent match makes
// differ from a's own), as webhooks receive it and CEL expressions read
// it. Its uid, object and oldObject are not set, and its options are a's
// as they are: a webhook call fills them in.
func NewRequest(a *Attributes, inv Invocation) *admissionv1.AdmissionRequest {
	dryRun := a.DryRun
	req := &admissionv1.AdmissionRequest{
		Kind:               metav1.GroupVersionKind{Group: inv.Kind.Group, Version: inv.Kind.Version, Kind: inv.Kind.Kind},
		Resource:           metav1.GroupVersionResource{Group: inv.Resource.Group, Version: inv.Resource.Version, Resource: inv.Resource.Resource},
		SubResource:        inv.Subresource,
		RequestKind:        &metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind},
		RequestResource:    &metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource},
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          admissionv1.Operation(a.Operation),
		DryRun:             &dryRun,
		Options:            runtime.RawExtension{Object: a.Options},
	}
	if u := a.User; u != nil {
		req.UserInfo.Username, req.UserInfo.UID = u.Name, u.UID
		req.UserInfo.Groups = u.Groups
		if len(u.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	return req
}

package apiserver

import (
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The self-review resources answer "who am I" and "may I" for the caller.
// They are created and answered, never stored. kplane authorizes nothing,
// so every access review is allowed (as with kube-apiserver's AlwaysAllow
// authorizer), and the caller is the user the request is served as
// (callerInfo).

// reviewResource is a create-only resource that answers without storing.
type reviewResource struct {
	gvk      schema.GroupVersionKind
	resource string
	singular string
	// answer decodes nothing: it fills in the status of the decoded object.
	newObj func() runtime.Object
	answer func(r *http.Request, obj runtime.Object) error
}

// reviewResources lists the self-review resources, in discovery order.
func reviewResources() []reviewResource {
	return []reviewResource{
		{
			gvk:      authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
			resource: "selfsubjectreviews", singular: "selfsubjectreview",
			newObj: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			answer: func(r *http.Request, obj runtime.Object) error {
				obj.(*authenticationv1.SelfSubjectReview).Status.UserInfo = callerInfo(r)
				return nil
			},
		},
		{
			gvk:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
			resource: "selfsubjectaccessreviews", singular: "selfsubjectaccessreview",
			newObj: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			answer: func(_ *http.Request, obj runtime.Object) error {
				sar := obj.(*authorizationv1.SelfSubjectAccessReview)
				if (sar.Spec.ResourceAttributes == nil) == (sar.Spec.NonResourceAttributes == nil) {
					return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", field.ErrorList{
						field.Invalid(field.NewPath("spec", "resourceAttributes"), sar.Spec.ResourceAttributes,
							"exactly one of nonResourceAttributes or resourceAttributes must be specified"),
					})
				}
				sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: allowReason}
				return nil
			},
		},
		{
			gvk:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
			resource: "selfsubjectrulesreviews", singular: "selfsubjectrulesreview",
			newObj: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			answer: func(_ *http.Request, obj runtime.Object) error {
				obj.(*authorizationv1.SelfSubjectRulesReview).Status = authorizationv1.SubjectRulesReviewStatus{
					ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
					NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
				}
				return nil
			},
		},
	}
}

// allowReason explains every allowed access review.
const allowReason = "kplane does not authorize requests: everything is allowed"

// callerInfo is the user the request is served as: the one its
// authentication (and impersonation) found, see authn.go.
func callerInfo(r *http.Request) authenticationv1.UserInfo {
	u := requestUser(r)
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}

// reviewGroupVersions are the group versions of the self-review resources.
func reviewGroupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, rr := range reviewResources() {
		if gv := rr.gvk.GroupVersion(); len(out) == 0 || out[len(out)-1] != gv {
			out = append(out, gv)
		}
	}
	return out
}

// reviewDiscovery returns the discovery entries of the self-review
// resources in gv.
func reviewDiscovery(gv schema.GroupVersion) []metav1.APIResource {
	var out []metav1.APIResource
	for _, rr := range reviewResources() {
		if rr.gvk.GroupVersion() == gv {
			out = append(out, metav1.APIResource{Name: rr.resource, SingularName: rr.singular, Kind: rr.gvk.Kind, Verbs: metav1.Verbs{"create"}})
		}
	}
	return out
}

// serveReview answers a request for a self-review resource and reports
// whether the path was one.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, rest []string) bool {
	if len(rest) != 1 {
		return false
	}
	var rr *reviewResource
	for _, c := range reviewResources() {
		if c.gvk.GroupVersion() == gv && c.resource == rest[0] {
			rr = &c
		}
	}
	if rr == nil {
		return false
	}
	rec := recordFrom(r.Context())
	rec.verb, rec.group, rec.version, rec.resource, rec.scope = "POST", gv.Group, gv.Version, rr.resource, "cluster"
	if r.Method != http.MethodPost {
		// The router's answer: these paths serve nothing but POST.
		s.writeError(w, r, methodNotAllowed(r))
		return true
	}
	opts, err := parseWriteOptions(r, "CreateOptions")
	if err != nil {
		s.writeError(w, r, err)
		return true
	}
	obj := rr.newObj()
	warnings, err := s.decodeBody(w, r, obj, rr.gvk, opts.fieldValidation, nil)
	if err != nil {
		s.writeError(w, r, err)
		return true
	}
	if err := rr.answer(r, obj); err != nil {
		s.writeError(w, r, err)
		return true
	}
	obj.GetObjectKind().SetGroupVersionKind(rr.gvk)
	addWarnings(w, warnings)
	writeJSON(w, http.StatusCreated, obj)
	return true
}

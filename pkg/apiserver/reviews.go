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

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// The review resources answer "who am I" and "may I" (for the caller, or
// for a subject named in the review). They are created and answered, never
// stored. Without an authorizer (AuthorizationMode AlwaysAllow) every
// access review is allowed, as with kube-apiserver's AlwaysAllow
// authorizer; in RBAC mode the RBAC authorizer and rule resolver answer.
// The caller is the user authentication put on the request context, else
// the subject of its verified TLS client certificate, else
// system:anonymous.

// reviewResource is a create-only resource that answers without storing.
type reviewResource struct {
	gvk      schema.GroupVersionKind
	resource string
	singular string
	// namespaced reviews are posted below /namespaces/{namespace}/.
	namespaced bool
	newObj     func() runtime.Object
	// answer fills in the status of the decoded object; namespace is the
	// request's (empty for cluster-scoped reviews).
	answer func(s *Server, r *http.Request, namespace string, obj runtime.Object) error
}

var (
	sarGK  = authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind()
	ssarGK = authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind()
	lsarGK = authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind()
)

// reviewResources lists the review resources, in discovery order.
func reviewResources() []reviewResource {
	return []reviewResource{
		{
			gvk:      authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
			resource: "selfsubjectreviews", singular: "selfsubjectreview",
			newObj: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			answer: func(_ *Server, r *http.Request, _ string, obj runtime.Object) error {
				obj.(*authenticationv1.SelfSubjectReview).Status.UserInfo = callerInfo(r)
				return nil
			},
		},
		{
			gvk:        authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"),
			resource:   "localsubjectaccessreviews",
			singular:   "localsubjectaccessreview",
			namespaced: true,
			newObj:     func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			answer: func(s *Server, r *http.Request, namespace string, obj runtime.Object) error {
				sar := obj.(*authorizationv1.LocalSubjectAccessReview)
				if sar.Namespace == "" {
					sar.Namespace = namespace
				} else if sar.Namespace != namespace {
					return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
				}
				errs := validateSubjectAccessReviewSpec(sar.Spec)
				if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
					errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
				}
				if sar.Spec.NonResourceAttributes != nil {
					errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), sar.Spec.NonResourceAttributes, "disallowed on this kind of request"))
				}
				if len(errs) > 0 {
					return apierrors.NewInvalid(lsarGK, sar.Name, errs)
				}
				sar.Status = s.decide(r, subjectOf(sar.Spec), sar.Spec.ResourceAttributes, nil)
				return nil
			},
		},
		{
			gvk:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
			resource: "selfsubjectaccessreviews", singular: "selfsubjectaccessreview",
			newObj: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			answer: func(s *Server, r *http.Request, _ string, obj runtime.Object) error {
				sar := obj.(*authorizationv1.SelfSubjectAccessReview)
				if (sar.Spec.ResourceAttributes == nil) == (sar.Spec.NonResourceAttributes == nil) {
					return apierrors.NewInvalid(ssarGK, "", field.ErrorList{exactlyOneAttributes(sar.Spec.ResourceAttributes)})
				}
				sar.Status = s.decide(r, requestUser(r), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
				return nil
			},
		},
		{
			gvk:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
			resource: "selfsubjectrulesreviews", singular: "selfsubjectrulesreview",
			newObj: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			answer: func(s *Server, r *http.Request, _ string, obj runtime.Object) error {
				review := obj.(*authorizationv1.SelfSubjectRulesReview)
				review.Status = s.rulesReview(r, review.Spec.Namespace)
				return nil
			},
		},
		{
			gvk:      authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"),
			resource: "subjectaccessreviews", singular: "subjectaccessreview",
			newObj: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			answer: func(s *Server, r *http.Request, _ string, obj runtime.Object) error {
				sar := obj.(*authorizationv1.SubjectAccessReview)
				if errs := validateSubjectAccessReviewSpec(sar.Spec); len(errs) > 0 {
					return apierrors.NewInvalid(sarGK, sar.Name, errs)
				}
				sar.Status = s.decide(r, subjectOf(sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
				return nil
			},
		},
	}
}

func exactlyOneAttributes(ra *authorizationv1.ResourceAttributes) *field.Error {
	return field.Invalid(field.NewPath("spec", "resourceAttributes"), ra,
		"exactly one of nonResourceAttributes or resourceAttributes must be specified")
}

// validateSubjectAccessReviewSpec checks a SubjectAccessReview's spec as
// Kubernetes does: one kind of attributes, and a user or a group.
func validateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	var errs field.ErrorList
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		errs = append(errs, exactlyOneAttributes(spec.ResourceAttributes))
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// subjectOf is the user a SubjectAccessReview asks about.
func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) *authentication.User {
	u := &authentication.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// decide answers an access review for u with the server's authorizer.
func (s *Server) decide(r *http.Request, u *authentication.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	authz := s.Authorizer()
	if authz == nil {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: allowReason}
	}
	attrs := authorization.Attributes{User: u}
	if ra != nil {
		attrs.ResourceRequest = true
		attrs.Verb, attrs.Namespace, attrs.Name = ra.Verb, ra.Namespace, ra.Name
		attrs.APIGroup, attrs.APIVersion, attrs.Resource, attrs.Subresource = ra.Group, ra.Version, ra.Resource, ra.Subresource
	} else {
		attrs.Verb, attrs.Path = nra.Verb, nra.Path
	}
	d, reason, err := authz.Authorize(r.Context(), attrs)
	st := authorizationv1.SubjectAccessReviewStatus{
		Allowed: d == authorization.DecisionAllow,
		Denied:  d == authorization.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// rulesReview lists what the caller of r may do in namespace.
func (s *Server) rulesReview(r *http.Request, namespace string) authorizationv1.SubjectRulesReviewStatus {
	rr := s.ruleResolver()
	if rr == nil && s.authz != nil {
		return authorizationv1.SubjectRulesReviewStatus{Incomplete: true, EvaluationError: "the server's authorizer does not list rules"}
	}
	if rr == nil {
		return authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
	}
	res, nonRes, incomplete, err := rr.RulesFor(r.Context(), requestUser(r), namespace)
	st := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
		Incomplete:       incomplete,
	}
	for _, x := range res {
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: x.Verbs, APIGroups: x.APIGroups, Resources: x.Resources, ResourceNames: x.ResourceNames})
	}
	for _, x := range nonRes {
		st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: x.Verbs, NonResourceURLs: x.NonResourceURLs})
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
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
			out = append(out, metav1.APIResource{Name: rr.resource, SingularName: rr.singular, Namespaced: rr.namespaced, Kind: rr.gvk.Kind, Verbs: metav1.Verbs{"create"}})
		}
	}
	return out
}

// serveReview answers a request for a self-review resource and reports
// whether the path was one.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, rest []string) bool {
	namespace := ""
	switch {
	case len(rest) == 1:
	case len(rest) == 3 && rest[0] == "namespaces":
		namespace, rest = rest[1], rest[2:]
	default:
		return false
	}
	var rr *reviewResource
	for _, c := range reviewResources() {
		if c.gvk.GroupVersion() == gv && c.resource == rest[0] && c.namespaced == (namespace != "") {
			rr = &c
		}
	}
	if rr == nil {
		return false
	}
	rec := recordFrom(r.Context())
	rec.verb, rec.group, rec.version, rec.resource, rec.scope = "POST", gv.Group, gv.Version, rr.resource, "cluster"
	if rr.namespaced {
		rec.scope = "namespace"
	}
	if r.Method != http.MethodPost {
		// The router's answer: these paths serve nothing but POST.
		s.writeError(w, r, methodNotAllowed(r))
		return true
	}
	f, err := s.negotiate(r, nil)
	if err != nil {
		s.writeError(w, r, err)
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
	if err := rr.answer(s, r, namespace, obj); err != nil {
		s.writeError(w, r, err)
		return true
	}
	obj.GetObjectKind().SetGroupVersionKind(rr.gvk)
	addWarnings(w, warnings)
	s.writeObject(w, r, http.StatusCreated, f, obj)
	return true
}

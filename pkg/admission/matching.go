package admission

import (
	"context"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Invocation is how a webhook or policy sees a request it matches: the
// resource and kind its rule named, which differ from the request's when it
// matched an equivalent resource (matchPolicy Equivalent); the object is
// then converted to Kind before it is sent or evaluated.
type Invocation struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
}

var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

// RuleMatches reports whether rule covers a request of a with resource gvr
// (a's own resource, or one equivalent to it), as Kubernetes matches
// webhook and policy rules: the operation, group, version and resource
// (with "*", "res/*", "*/sub" and "*/*" wildcards for subresources) and
// the scope. The Namespace of a namespace's own request is the
// namespace's name, as in Kubernetes.
func RuleMatches(rule admissionregistrationv1.RuleWithOperations, a *Attributes, gvr schema.GroupVersionResource) bool {
	return scopeMatches(rule.Scope, a, gvr) &&
		operationMatches(rule.Operations, a.Operation) &&
		wildcardMatches(rule.APIGroups, gvr.Group) &&
		wildcardMatches(rule.APIVersions, gvr.Version) &&
		resourceMatches(rule.Resources, gvr.Resource, a.Subresource)
}

func scopeMatches(scope *admissionregistrationv1.ScopeType, a *Attributes, gvr schema.GroupVersionResource) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	isNamespace := gvr.GroupResource() == namespacesResource.GroupResource()
	switch *scope {
	case admissionregistrationv1.NamespacedScope:
		return !isNamespace && a.Namespace != ""
	case admissionregistrationv1.ClusterScope:
		return isNamespace || a.Namespace == ""
	}
	return false
}

func operationMatches(ops []admissionregistrationv1.OperationType, op Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func wildcardMatches(values []string, v string) bool {
	for _, x := range values {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

func resourceMatches(resources []string, resource, subresource string) bool {
	for _, r := range resources {
		res, sub, _ := strings.Cut(r, "/")
		if (res == "*" || res == resource) && (sub == "*" || sub == subresource) {
			return true
		}
	}
	return false
}

// MatchRules returns how a's request is seen by the first of rules that
// covers it; with matchPolicy Equivalent (nil counts as Exact), rules are
// then tried, in order, against the resources equivalent to a's.
func MatchRules(a *Attributes, rules []admissionregistrationv1.RuleWithOperations, policy *admissionregistrationv1.MatchPolicyType) (Invocation, bool) {
	for _, r := range rules {
		if RuleMatches(r, a, a.Resource) {
			return Invocation{Resource: a.Resource, Subresource: a.Subresource, Kind: a.Kind}, true
		}
	}
	if policy == nil || *policy != admissionregistrationv1.Equivalent || a.Objects == nil {
		return Invocation{}, false
	}
	equivalents := a.Objects.EquivalentResources(a.Resource, a.Subresource)
	for _, r := range rules {
		for _, e := range equivalents {
			if e.Resource != a.Resource && RuleMatches(r, a, e.Resource) {
				return Invocation{Resource: e.Resource, Subresource: a.Subresource, Kind: e.Kind}, true
			}
		}
	}
	return Invocation{}, false
}

// MatchNamedRules is MatchRules for a policy's rules, which may also name
// the objects they cover (resourceNames; empty covers all).
func MatchNamedRules(a *Attributes, rules []admissionregistrationv1.NamedRuleWithOperations, policy *admissionregistrationv1.MatchPolicyType) (Invocation, bool) {
	var plain []admissionregistrationv1.RuleWithOperations
	for _, r := range rules {
		if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, a.Name) {
			continue
		}
		plain = append(plain, r.RuleWithOperations)
	}
	return MatchRules(a, plain, policy)
}

// MatchObjectSelector reports whether the labels of a's object or old
// object match sel (an empty selector matches everything, a request
// without objects nothing else).
func MatchObjectSelector(sel labels.Selector, a *Attributes) bool {
	if sel == nil || sel.Empty() {
		return true
	}
	return objectLabelsMatch(a.Object, sel) || objectLabelsMatch(a.OldObject, sel)
}

func objectLabelsMatch(obj runtime.Object, sel labels.Selector) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(m.GetLabels()))
}

// MatchNamespaceSelector reports whether the namespace of a's request has
// labels matching sel, as Kubernetes decides it: requests for
// cluster-scoped objects other than namespaces always match; a namespace
// being created or updated is judged by its new labels; other namespaces
// are read from src (the cache, then the store). A namespace that does not
// exist is its NotFound error.
func MatchNamespaceSelector(ctx context.Context, src Source, sel labels.Selector, a *Attributes) (bool, error) {
	isNamespace := a.Resource.GroupResource() == namespacesResource.GroupResource()
	if a.Namespace == "" && !isNamespace {
		return true, nil
	}
	if sel == nil || sel.Empty() {
		return true, nil
	}
	nsLabels, err := NamespaceLabels(ctx, src, a)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// NamespaceLabels returns the labels of the namespace of a's request: the
// new object's for a namespace being created or updated, otherwise the
// stored namespace's.
func NamespaceLabels(ctx context.Context, src Source, a *Attributes) (map[string]string, error) {
	ns, err := NamespaceOf(ctx, src, a)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(ns)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return m.GetLabels(), nil
}

// NamespaceOf returns the namespace of a's request (shared: do not change
// it): a namespace being created or updated is its new object, others
// are read from src (the cache, then the store when the cache lacks it).
func NamespaceOf(ctx context.Context, src Source, a *Attributes) (runtime.Object, error) {
	isNamespace := a.Resource.GroupResource() == namespacesResource.GroupResource()
	if isNamespace && a.Subresource == "" && (a.Operation == Create || a.Operation == Update) && a.Object != nil {
		return a.Object, nil
	}
	obj, err := src.Get(ctx, namespacesResource, "", a.Namespace)
	if apierrors.IsNotFound(err) {
		obj, err = src.Fetch(ctx, namespacesResource, "", a.Namespace)
	}
	return obj, err
}

// ConfiguresAdmission reports whether a is a request for the objects that
// configure admission (webhook configurations, admission policies and
// their bindings), which no webhook or policy is applied to, as in
// Kubernetes: a broken webhook or policy can always be removed.
func ConfiguresAdmission(a *Attributes) bool {
	if a.Kind.Group != admissionregistrationv1.GroupName {
		return false
	}
	switch a.Kind.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}

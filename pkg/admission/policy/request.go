package policy

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
	"github.com/kplane/kplane/pkg/authorization"
)

// newRequest returns the state of one admission call for a.
func (e *engine) newRequest(a *admission.Attributes) *request {
	return &request{e: e, a: a, authz: newCachingAuthorizer(e.authz)}
}

// request is the state of one admission call of a policy plugin: objects
// converted once per kind, the namespace read once, authorizer decisions
// cached.
type request struct {
	e     *engine
	a     *admission.Attributes
	authz authorization.Authorizer

	converted map[schema.GroupVersionKind]*objectValues
	nsRead    bool
	ns        map[string]any
	nsErr     error
}

type objectValues struct {
	object, oldObject any
	request           map[string]any
	inv               admission.Invocation
}

// matcher is a matchConstraints (policy) or matchResources (binding)
// with its selectors parsed once.
type matcher struct {
	mr       *admissionregistrationv1.MatchResources
	isPolicy bool
	// nsSel and objSel are nil for selectors that match everything;
	// nsErr and objErr keep selectors that do not parse.
	nsSel, objSel labels.Selector
	nsErr, objErr error
	// rules and exclude are the resource rules without resourceNames,
	// when none has any (matched without building them per request).
	rules, exclude []admissionregistrationv1.RuleWithOperations
	plain          bool
}

func newMatcher(mr *admissionregistrationv1.MatchResources, isPolicy bool) *matcher {
	m := &matcher{mr: mr, isPolicy: isPolicy}
	if mr == nil {
		return m
	}
	parse := func(ls *metav1.LabelSelector) (labels.Selector, error) {
		if ls == nil {
			return nil, nil
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil || sel.Empty() {
			return nil, err
		}
		return sel, nil
	}
	m.nsSel, m.nsErr = parse(mr.NamespaceSelector)
	m.objSel, m.objErr = parse(mr.ObjectSelector)
	m.plain = true
	for _, r := range mr.ResourceRules {
		m.plain = m.plain && len(r.ResourceNames) == 0
		m.rules = append(m.rules, r.RuleWithOperations)
	}
	for _, r := range mr.ExcludeResourceRules {
		m.plain = m.plain && len(r.ResourceNames) == 0
		m.exclude = append(m.exclude, r.RuleWithOperations)
	}
	return m
}

func (m *matcher) matchRules(a *admission.Attributes, exclude bool) (admission.Invocation, bool) {
	switch {
	case m.plain && exclude:
		return admission.MatchRules(a, m.exclude, m.mr.MatchPolicy)
	case m.plain:
		return admission.MatchRules(a, m.rules, m.mr.MatchPolicy)
	case exclude:
		return admission.MatchNamedRules(a, m.mr.ExcludeResourceRules, m.mr.MatchPolicy)
	}
	return admission.MatchNamedRules(a, m.mr.ResourceRules, m.mr.MatchPolicy)
}

// matches decides the match as Kubernetes does: the resource rules
// (excludeResourceRules, then resourceRules, none in a binding matching
// everything) and the namespace and object selectors must all match; a
// selector's error counts only for requests the rules cover. Rules are
// checked first, as they are cheap and read nothing.
func (r *request) matches(ctx context.Context, m *matcher) (admission.Invocation, bool, error) {
	a := r.a
	self := admission.Invocation{Resource: a.Resource, Subresource: a.Subresource, Kind: a.Kind}
	mr := m.mr
	if mr == nil {
		return self, !m.isPolicy, nil
	}
	if len(mr.ExcludeResourceRules) > 0 {
		if _, excluded := m.matchRules(a, true); excluded {
			return admission.Invocation{}, false, nil
		}
	}
	inv := self
	if len(mr.ResourceRules) > 0 {
		var ok bool
		if inv, ok = m.matchRules(a, false); !ok {
			return admission.Invocation{}, false, nil
		}
	}
	nsErr := m.nsErr
	if m.nsSel != nil {
		ok, err := admission.MatchNamespaceSelector(ctx, r.e.src, m.nsSel, a)
		if err != nil {
			nsErr = err
		} else if !ok {
			return admission.Invocation{}, false, nil
		}
	}
	if m.objSel != nil && !admission.MatchObjectSelector(m.objSel, a) {
		return admission.Invocation{}, false, nil
	}
	if nsErr != nil {
		return admission.Invocation{}, false, nsErr
	}
	if m.objErr != nil {
		return admission.Invocation{}, false, m.objErr
	}
	return inv, true, nil
}

// objects returns the request's objects as the policy matched them (at
// inv's kind), converted once.
func (r *request) objects(inv admission.Invocation) (*objectValues, error) {
	if ov, ok := r.converted[inv.Kind]; ok {
		return ov, nil
	}
	a := r.a
	obj, old := a.Object, a.OldObject
	if inv.Kind != a.Kind && a.Objects != nil {
		var err error
		if obj != nil {
			if obj, err = a.Objects.ConvertTo(obj, inv.Kind); err != nil {
				return nil, err
			}
		}
		if old != nil {
			if old, err = a.Objects.ConvertTo(old, inv.Kind); err != nil {
				return nil, err
			}
		}
	}
	ov := &objectValues{inv: inv, request: admissioncel.RequestValue(admission.NewRequest(a, inv))}
	m, err := admissioncel.ObjectValue(obj, inv.Kind)
	if err != nil {
		return nil, err
	}
	if m != nil {
		ov.object = m
	}
	if m, err = admissioncel.ObjectValue(old, inv.Kind); err != nil {
		return nil, err
	} else if m != nil {
		ov.oldObject = m
	}
	if r.converted == nil {
		r.converted = map[schema.GroupVersionKind]*objectValues{}
	}
	r.converted[inv.Kind] = ov
	return ov, nil
}

var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

// namespace returns namespaceObject: the request's namespace with the
// fields Kubernetes exposes, nil for cluster-scoped requests and for
// namespaces themselves.
func (r *request) namespace(ctx context.Context) (map[string]any, error) {
	if r.nsRead {
		return r.ns, r.nsErr
	}
	r.nsRead = true
	a := r.a
	if a.Namespace == "" || (a.Kind.Group == "" && a.Kind.Version == "v1" && a.Kind.Kind == "Namespace") {
		return nil, nil
	}
	obj, err := r.e.src.Get(ctx, namespacesResource, "", a.Namespace)
	if apierrors.IsNotFound(err) {
		obj, err = r.e.src.Fetch(ctx, namespacesResource, "", a.Namespace)
	}
	if err != nil {
		r.nsErr = err
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		r.nsErr = apierrors.NewInternalError(fmt.Errorf("namespace %q is a %T", a.Namespace, obj))
		return nil, r.nsErr
	}
	if m, ok := r.e.cachedNamespace(ns); ok {
		r.ns = m
		return m, nil
	}
	exposed := &corev1.Namespace{
		Spec:   ns.Spec,
		Status: ns.Status,
		ObjectMeta: metav1.ObjectMeta{
			Name: ns.Name, GenerateName: ns.GenerateName, Namespace: ns.Namespace, UID: ns.UID,
			ResourceVersion: ns.ResourceVersion, Generation: ns.Generation,
			CreationTimestamp: ns.CreationTimestamp, DeletionTimestamp: ns.DeletionTimestamp,
			DeletionGracePeriodSeconds: ns.DeletionGracePeriodSeconds,
			Labels:                     ns.Labels, Annotations: ns.Annotations, Finalizers: ns.Finalizers,
		},
	}
	m, err := admissioncel.ObjectValue(exposed, corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err != nil {
		r.nsErr = apierrors.NewInternalError(err)
		return nil, r.nsErr
	}
	r.e.cacheNamespace(ns, m)
	r.ns = m
	return m, nil
}

func (e *engine) cachedNamespace(ns *corev1.Namespace) (map[string]any, bool) {
	if ns.ResourceVersion == "" {
		return nil, false
	}
	e.nsMu.Lock()
	defer e.nsMu.Unlock()
	c, ok := e.namespaces[ns.Name]
	if !ok || c.resourceVersion != ns.ResourceVersion {
		return nil, false
	}
	return c.value, true
}

func (e *engine) cacheNamespace(ns *corev1.Namespace, m map[string]any) {
	if ns.ResourceVersion == "" {
		return
	}
	e.nsMu.Lock()
	defer e.nsMu.Unlock()
	if e.namespaces == nil || len(e.namespaces) >= maxCachedNamespaces {
		e.namespaces = map[string]cachedNamespace{}
	}
	e.namespaces[ns.Name] = cachedNamespace{resourceVersion: ns.ResourceVersion, value: m}
}

// collectParams returns the params a binding evaluates its policy with
// (one nil param when it has none), by Kubernetes' rules.
func (r *request) collectParams(ctx context.Context, pk *admissionregistrationv1.ParamKind, src *paramSource, ref *admissionregistrationv1.ParamRef) ([]any, error) {
	if pk == nil || ref == nil {
		return []any{nil}, nil
	}
	ns := ""
	if src.namespaced {
		ns = r.a.Namespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	gvk := schema.FromAPIVersionAndKind(pk.APIVersion, pk.Kind)
	var params []any
	switch {
	case ref.Name != "":
		if ref.Selector != nil {
			return nil, errors.New("paramRef.name and paramRef.selector are mutually exclusive")
		}
		obj, err := r.e.src.Get(ctx, src.gvr, ns, ref.Name)
		if apierrors.IsNotFound(err) {
			obj, err = r.e.src.Fetch(ctx, src.gvr, ns, ref.Name)
		}
		switch {
		case err == nil:
			m, err := admissioncel.ObjectValue(obj, gvk)
			if err != nil {
				return nil, err
			}
			params = append(params, m)
		case apierrors.IsNotFound(err):
		default:
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		objs, _, err := r.e.src.List(ctx, src.gvr, ns)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if !objectLabelsMatch(obj, sel) {
				continue
			}
			m, err := admissioncel.ObjectValue(obj, gvk)
			if err != nil {
				return nil, err
			}
			params = append(params, m)
		}
	default:
		return nil, errors.New("one of name or selector must be provided")
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

func objectLabelsMatch(obj runtime.Object, sel labels.Selector) bool {
	m, ok := obj.(metav1.Object)
	if !ok {
		return false
	}
	return sel.Matches(labels.Set(m.GetLabels()))
}

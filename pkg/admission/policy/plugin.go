package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
	"github.com/kplane/kplane/pkg/authorization"
)

// The resources the plugin reads.
var (
	policiesResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// Validating is the ValidatingAdmissionPolicy plugin. It is safe for
// concurrent use.
type Validating struct {
	src      admission.Source
	authz    authorization.Authorizer
	resolver admission.Resolver
	logger   *slog.Logger
	metrics  *metrics
	clock    clock.PassiveClock

	// mu serializes rebuilding snap.
	mu sync.Mutex
	// snap is the policies and bindings of the last revisions seen,
	// compiled; immutable once published.
	snap atomic.Pointer[snapshot]

	// namespaces caches namespaceObject values by namespace name, valid
	// while the namespace's resourceVersion is the same; the values are
	// shared and never changed. Bounded by maxCachedNamespaces.
	nsMu       sync.Mutex
	namespaces map[string]cachedNamespace
}

// maxCachedNamespaces bounds the namespace cache; it is emptied when full
// (namespaces are few, and a miss only costs a conversion).
const maxCachedNamespaces = 4096

type cachedNamespace struct {
	resourceVersion string
	value           map[string]any
}

var _ admission.ValidationInterface = (*Validating)(nil)

// NewValidating returns the ValidatingAdmissionPolicy plugin
// (admissionregistration.k8s.io/v1 policies and bindings, read from
// cfg.Source). cfg.Source is required; a nil cfg.Authorizer allows every
// authorizer check; a nil cfg.Resolver makes every paramKind unknown; a
// nil cfg.Logger discards; cfg.Metrics, when set, gets Kubernetes'
// apiserver_validating_admission_policy_check_total and
// check_duration_seconds (timed with cfg.Clock, the real clock by
// default).
func NewValidating(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("ValidatingAdmissionPolicy needs a Source")
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	v := &Validating{src: cfg.Source, authz: cfg.Authorizer, resolver: cfg.Resolver, logger: cfg.Logger, metrics: m, clock: cfg.Clock}
	if v.clock == nil {
		v.clock = clock.RealClock{}
	}
	if v.authz == nil {
		v.authz = admissioncel.AllowAll
	}
	if v.logger == nil {
		v.logger = slog.New(slog.DiscardHandler)
	}
	return v, nil
}

// Handles reports true: policies may match any operation.
func (v *Validating) Handles(admission.Operation) bool { return true }

// snapshot is the compiled state of one revision of the policies and
// bindings.
type snapshot struct {
	policiesRev, bindingsRev uint64
	hooks                    []*hook
	// compiled keeps each policy's compilation by name, for the next
	// snapshot to reuse while the policy's resourceVersion is unchanged.
	compiled map[string]compiledEntry
}

type compiledEntry struct {
	resourceVersion string
	compiled        *compiled
}

// hook is a policy with the bindings that name it.
type hook struct {
	policy   *admissionregistrationv1.ValidatingAdmissionPolicy
	bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	compiled *compiled
	// matcher is the policy's matchConstraints; bindingMatchers the
	// bindings' matchResources, in the order of bindings.
	matcher         *matcher
	bindingMatchers []*matcher
	// params is where the policy's params are, when it has a paramKind;
	// paramErr is the misconfiguration when its resource is not served
	// (looked up again on each request until it is).
	params   *paramSource
	paramErr error
}

type paramSource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// hooks returns the compiled policies of the current revisions.
func (v *Validating) hooks(ctx context.Context) ([]*hook, error) {
	policies, prev, err := v.src.List(ctx, policiesResource, "")
	if err != nil {
		return nil, fmt.Errorf("listing validatingadmissionpolicies: %w", err)
	}
	bindings, brev, err := v.src.List(ctx, bindingsResource, "")
	if err != nil {
		return nil, fmt.Errorf("listing validatingadmissionpolicybindings: %w", err)
	}
	if s := v.snap.Load(); s != nil && s.policiesRev == prev && s.bindingsRev == brev {
		return s.hooks, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.snap.Load(); s != nil && s.policiesRev == prev && s.bindingsRev == brev {
		return s.hooks, nil
	}
	var old map[string]compiledEntry
	if s := v.snap.Load(); s != nil {
		old = s.compiled
	}
	s := &snapshot{policiesRev: prev, bindingsRev: brev, compiled: map[string]compiledEntry{}}
	byPolicy := map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, o := range bindings {
		if b, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); ok {
			byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], b)
		}
	}
	for _, o := range policies {
		p, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if !ok || len(byPolicy[p.Name]) == 0 {
			// a policy without bindings does nothing; bindings of a
			// missing policy neither
			continue
		}
		bs := byPolicy[p.Name]
		slices.SortFunc(bs, func(a, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) int {
			return strings.Compare(a.Name, b.Name)
		})
		e, ok := old[p.Name]
		if !ok || e.resourceVersion != p.ResourceVersion || p.ResourceVersion == "" {
			e = compiledEntry{resourceVersion: p.ResourceVersion, compiled: compile(&p.Spec)}
		}
		s.compiled[p.Name] = e
		h := &hook{policy: p, bindings: bs, compiled: e.compiled, matcher: newMatcher(p.Spec.MatchConstraints, true)}
		for _, b := range bs {
			h.bindingMatchers = append(h.bindingMatchers, newMatcher(b.Spec.MatchResources, false))
		}
		h.params, h.paramErr = v.resolveParams(p.Spec.ParamKind)
		s.hooks = append(s.hooks, h)
	}
	slices.SortFunc(s.hooks, func(a, b *hook) int { return strings.Compare(a.policy.Name, b.policy.Name) })
	v.snap.Store(s)
	return s.hooks, nil
}

// resolveParams finds the resource of a paramKind; nil for none.
func (v *Validating) resolveParams(pk *admissionregistrationv1.ParamKind) (*paramSource, error) {
	if pk == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(pk.Kind)
	if v.resolver == nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	gvr, namespaced, err := v.resolver.ResourceFor(gvk)
	if err != nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	return &paramSource{gvr: gvr, namespaced: namespaced}, nil
}

// exempt reports whether a is a request for the configuration of
// admission itself, which no policy applies to (as in Kubernetes).
func exempt(a *admission.Attributes) bool {
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

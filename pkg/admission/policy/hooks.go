package policy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
	"github.com/kplane/kplane/pkg/authorization"
)

// engine is what the policy plugins share: where they read the cluster,
// whom they ask authorizer questions, and the namespaceObject cache. It
// is safe for concurrent use.
type engine struct {
	src      admission.Source
	authz    authorization.Authorizer
	resolver admission.Resolver
	logger   *slog.Logger
	clock    clock.PassiveClock
	// timed is set when there are metrics to time evaluations for.
	timed bool

	// namespaces caches namespaceObject values by namespace name, valid
	// while the namespace's resourceVersion is the same; the values are
	// shared and never changed. Bounded by maxCachedNamespaces.
	nsMu       sync.Mutex
	namespaces map[string]cachedNamespace
}

// newEngine returns the engine of cfg, with the defaults the plugins
// document; name is the plugin's, for errors.
func newEngine(cfg *admission.Config, name string) (*engine, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, fmt.Errorf("%s needs a Source", name)
	}
	e := &engine{src: cfg.Source, authz: cfg.Authorizer, resolver: cfg.Resolver, logger: cfg.Logger, clock: cfg.Clock, timed: cfg.Metrics != nil}
	if e.clock == nil {
		e.clock = clock.RealClock{}
	}
	if e.authz == nil {
		e.authz = admissioncel.AllowAll
	}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// maxCachedNamespaces bounds the namespace cache; it is emptied when full
// (namespaces are few, and a miss only costs a conversion).
const maxCachedNamespaces = 4096

type cachedNamespace struct {
	resourceVersion string
	value           map[string]any
}

// policyMeta is what the shared machinery reads of a policy of either
// kind.
type policyMeta struct {
	name, resourceVersion string
	matchConstraints      *admissionregistrationv1.MatchResources
	paramKind             *admissionregistrationv1.ParamKind
}

// bindingMeta is what the shared machinery reads of a binding.
type bindingMeta struct {
	name, policyName string
	matchResources   *admissionregistrationv1.MatchResources
	paramRef         *admissionregistrationv1.ParamRef
}

// kind describes one kind of policy (validating or mutating) to a
// hookSet: where its policies and bindings are, how to read them, and how
// to compile a policy into C.
type kind[P, B runtime.Object, C any] struct {
	policies, bindings schema.GroupVersionResource
	policy             func(P) policyMeta
	binding            func(B) bindingMeta
	compile            func(P) C
}

// hookSet follows the policies and bindings of one kind, compiled. It is
// safe for concurrent use.
type hookSet[P, B runtime.Object, C any] struct {
	e    *engine
	kind kind[P, B, C]

	// mu serializes rebuilding snap.
	mu sync.Mutex
	// snap is the policies and bindings of the last revisions seen,
	// compiled; immutable once published.
	snap atomic.Pointer[snapshot[P, B, C]]
}

// snapshot is the compiled state of one revision of the policies and
// bindings.
type snapshot[P, B runtime.Object, C any] struct {
	policiesRev, bindingsRev uint64
	hooks                    []*hook[P, B, C]
	// compiled keeps each policy's compilation by name, for the next
	// snapshot to reuse while the policy's resourceVersion is unchanged.
	compiled map[string]compiledEntry[C]
}

type compiledEntry[C any] struct {
	resourceVersion string
	compiled        C
}

// hook is a policy with the bindings that name it.
type hook[P, B runtime.Object, C any] struct {
	policy   P
	meta     policyMeta
	bindings []B
	// bindingMetas are the bindings' metas, in the order of bindings.
	bindingMetas []bindingMeta
	compiled     C
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

// hooks returns the compiled policies of the current revisions, by
// policy name.
func (s *hookSet[P, B, C]) hooks(ctx context.Context) ([]*hook[P, B, C], error) {
	k := &s.kind
	policies, prev, err := s.e.src.List(ctx, k.policies, "")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.policies.Resource, err)
	}
	bindings, brev, err := s.e.src.List(ctx, k.bindings, "")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.bindings.Resource, err)
	}
	if snap := s.snap.Load(); snap != nil && snap.policiesRev == prev && snap.bindingsRev == brev {
		return snap.hooks, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap := s.snap.Load(); snap != nil && snap.policiesRev == prev && snap.bindingsRev == brev {
		return snap.hooks, nil
	}
	var old map[string]compiledEntry[C]
	if snap := s.snap.Load(); snap != nil {
		old = snap.compiled
	}
	snap := &snapshot[P, B, C]{policiesRev: prev, bindingsRev: brev, compiled: map[string]compiledEntry[C]{}}
	byPolicy := map[string][]B{}
	for _, o := range bindings {
		if b, ok := o.(B); ok {
			name := k.binding(b).policyName
			byPolicy[name] = append(byPolicy[name], b)
		}
	}
	for _, o := range policies {
		p, ok := o.(P)
		if !ok {
			continue
		}
		pm := k.policy(p)
		bs := byPolicy[pm.name]
		if len(bs) == 0 {
			// a policy without bindings does nothing; bindings of a
			// missing policy neither
			continue
		}
		slices.SortFunc(bs, func(a, b B) int { return strings.Compare(k.binding(a).name, k.binding(b).name) })
		e, ok := old[pm.name]
		if !ok || e.resourceVersion != pm.resourceVersion || pm.resourceVersion == "" {
			e = compiledEntry[C]{resourceVersion: pm.resourceVersion, compiled: k.compile(p)}
		}
		snap.compiled[pm.name] = e
		h := &hook[P, B, C]{policy: p, meta: pm, bindings: bs, compiled: e.compiled, matcher: newMatcher(pm.matchConstraints, true)}
		for _, b := range bs {
			bm := k.binding(b)
			h.bindingMetas = append(h.bindingMetas, bm)
			h.bindingMatchers = append(h.bindingMatchers, newMatcher(bm.matchResources, false))
		}
		h.params, h.paramErr = s.e.resolveParams(pm.paramKind)
		snap.hooks = append(snap.hooks, h)
	}
	slices.SortFunc(snap.hooks, func(a, b *hook[P, B, C]) int { return strings.Compare(a.meta.name, b.meta.name) })
	s.snap.Store(snap)
	return snap.hooks, nil
}

// resolveParams finds the resource of a paramKind; nil for none.
func (e *engine) resolveParams(pk *admissionregistrationv1.ParamKind) (*paramSource, error) {
	if pk == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(pk.Kind)
	if e.resolver == nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	gvr, namespaced, err := e.resolver.ResourceFor(gvk)
	if err != nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	return &paramSource{gvr: gvr, namespaced: namespaced}, nil
}

// paramsOf returns where h's params are: the resource found when h was
// built, or, when it was not served then, looked up again (a CRD created
// after the policy).
func paramsOf[P, B runtime.Object, C any](e *engine, h *hook[P, B, C]) (*paramSource, error) {
	if h.meta.paramKind == nil || h.paramErr == nil {
		return h.params, nil
	}
	return e.resolveParams(h.meta.paramKind)
}

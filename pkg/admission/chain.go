package admission

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/authorization"
)

// Interface is an admission plugin. Handles reports whether it looks at
// requests of op at all; a plugin that does not is skipped.
type Interface interface {
	Handles(op Operation) bool
}

// MutationInterface is a plugin that may change the object of a request.
type MutationInterface interface {
	Interface
	// Admit may change a.Object. An error refuses the request: an
	// *apierrors.StatusError reaches the client as it is, any other error
	// becomes 403 Forbidden.
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin that may refuse a request without
// changing it.
type ValidationInterface interface {
	Interface
	// Validate returns an error to refuse the request, as Admit.
	Validate(ctx context.Context, a *Attributes) error
}

// Source is the cluster as plugins read it. Get and List read a cache
// that follows the stored objects (started on first use); the objects
// they return are shared and must not be changed. Fetch reads the store
// itself, for decisions that cannot wait for the cache (quota usage).
type Source interface {
	// Get returns one object from the cache, or a NotFound
	// *apierrors.StatusError.
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List returns the objects of gvr in namespace ("" for all) and the
	// cache's revision of gvr, which changes whenever one of its objects
	// does: callers may keep what they derive from a list until it does.
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, uint64, error)
	// Fetch reads one object from the store.
	Fetch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// UpdateStatus writes obj's status when obj's resourceVersion is still
	// the stored one (a Conflict error otherwise) and returns the stored
	// object.
	UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
}

// Config is what plugins are built from.
type Config struct {
	Source Source
	// Authorizer is the server's authorizer (for CEL's authorizer
	// variable); nil when every request is allowed.
	Authorizer authorization.Authorizer
	Clock      clock.Clock
	// Metrics registers the plugins' metrics; nil registers none.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
	// Resolver resolves what webhooks and policies refer to by resource.
	Resolver Resolver
	// Conditions compiles webhooks' matchConditions; nil makes a webhook
	// with matchConditions fail as its failurePolicy says.
	Conditions ConditionCompiler
	// Merger merges apply configurations into objects by the schemas of
	// the resources the server serves (MutatingAdmissionPolicy's
	// ApplyConfiguration mutations); nil makes every such mutation fail
	// as its policy's failurePolicy says.
	Merger Merger
	// DefaultTolerationSeconds is the toleration of not-ready and
	// unreachable nodes DefaultTolerationSeconds adds (300 by default).
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64
}

// Merger merges apply configurations into objects as server-side apply
// merges them. It is safe for concurrent use.
type Merger interface {
	// Merge returns a new object: obj, of kind gvk, with config (an apply
	// configuration of the same kind, as JSON-like maps) merged in by the
	// kind's schema (list types and map keys). An apply configuration
	// that sets an atomic list, map or struct is an error, as is one that
	// does not fit the schema; an error for a kind the server does not
	// know is an *apierrors.StatusError. obj is not changed.
	Merge(gvk schema.GroupVersionKind, obj runtime.Object, config map[string]any) (runtime.Object, error)
}

// Resolver answers questions about the resources the server serves.
type Resolver interface {
	// ResourceFor returns the resource serving gvk (the params of a
	// policy name their kind), and whether it is namespaced.
	ResourceFor(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced bool, err error)
	// Served lists every resource (and subresource, as "pods/status") the
	// server serves, with the kind of its objects.
	Served() []ServedResource
}

// ServedResource is a resource or subresource the server serves.
type ServedResource struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	Namespaced  bool
}

// Factory builds a plugin.
type Factory func(cfg *Config) (Interface, error)

// The plugin names, as Kubernetes spells them.
const (
	NamespaceLifecycle         = "NamespaceLifecycle"
	LimitRanger                = "LimitRanger"
	ServiceAccount             = "ServiceAccount"
	PodSecurity                = "PodSecurity"
	Priority                   = "Priority"
	DefaultTolerationSeconds   = "DefaultTolerationSeconds"
	DefaultStorageClass        = "DefaultStorageClass"
	MutatingAdmissionPolicy    = "MutatingAdmissionPolicy"
	MutatingAdmissionWebhook   = "MutatingAdmissionWebhook"
	ValidatingAdmissionPolicy  = "ValidatingAdmissionPolicy"
	ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook"
	ResourceQuota              = "ResourceQuota"
	AlwaysAdmit                = "AlwaysAdmit"
	AlwaysDeny                 = "AlwaysDeny"
)

// OrderedPlugins are the plugins kplane knows, in the order they run
// (Kubernetes' order, restricted to these).
var OrderedPlugins = []string{
	AlwaysAdmit,
	NamespaceLifecycle,
	LimitRanger,
	ServiceAccount,
	PodSecurity,
	Priority,
	DefaultTolerationSeconds,
	DefaultStorageClass,
	MutatingAdmissionPolicy,
	MutatingAdmissionWebhook,
	ValidatingAdmissionPolicy,
	ValidatingAdmissionWebhook,
	ResourceQuota,
	AlwaysDeny,
}

// DefaultOnPlugins are the plugins enabled unless disabled, as in
// kube-apiserver (MutatingAdmissionPolicy, generally available since
// Kubernetes 1.36, with them).
var DefaultOnPlugins = []string{
	NamespaceLifecycle,
	LimitRanger,
	ServiceAccount,
	PodSecurity,
	Priority,
	DefaultTolerationSeconds,
	DefaultStorageClass,
	MutatingAdmissionPolicy,
	MutatingAdmissionWebhook,
	ValidatingAdmissionPolicy,
	ValidatingAdmissionWebhook,
	ResourceQuota,
}

// Plugins maps plugin names to their factories.
type Plugins map[string]Factory

// Enabled returns the plugins to run, in OrderedPlugins' order: the
// default ones, plus enable, minus disable. Names kplane does not know
// are an error, as kube-apiserver refuses them; a plugin both enabled and
// disabled is an error too.
func Enabled(enable, disable []string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range OrderedPlugins {
		known[n] = true
	}
	on := map[string]bool{}
	for _, n := range DefaultOnPlugins {
		on[n] = true
	}
	for _, n := range enable {
		if !known[n] {
			return nil, fmt.Errorf("enable-admission-plugins plugin %q is unknown (known: %s)", n, strings.Join(sortedNames(known), ", "))
		}
		if slices.Contains(disable, n) {
			return nil, fmt.Errorf("%s in enable-admission-plugins and disable-admission-plugins overlapped", n)
		}
		on[n] = true
	}
	for _, n := range disable {
		if !known[n] {
			return nil, fmt.Errorf("disable-admission-plugins plugin %q is unknown (known: %s)", n, strings.Join(sortedNames(known), ", "))
		}
		delete(on, n)
	}
	var out []string
	for _, n := range OrderedPlugins {
		if on[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

func sortedNames(m map[string]bool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Chain runs plugins in order. The zero Chain admits everything.
type Chain struct {
	names      []string
	mutating   []MutationInterface
	validating []ValidationInterface
	mutNames   []string
	valNames   []string
}

// NewChain builds the plugins names (in that order) from plugins. A name
// without a factory is skipped: the server implements it itself (as
// NamespaceLifecycle).
func NewChain(names []string, plugins Plugins, cfg *Config) (*Chain, error) {
	c := &Chain{names: names}
	for _, n := range names {
		f := plugins[n]
		if f == nil {
			continue
		}
		p, err := f(cfg)
		if err != nil {
			return nil, fmt.Errorf("admission plugin %s: %w", n, err)
		}
		if m, ok := p.(MutationInterface); ok {
			c.mutating = append(c.mutating, m)
			c.mutNames = append(c.mutNames, n)
		}
		if v, ok := p.(ValidationInterface); ok {
			c.validating = append(c.validating, v)
			c.valNames = append(c.valNames, n)
		}
	}
	return c, nil
}

// Enabled reports whether the chain was built with the plugin name.
func (c *Chain) Enabled(name string) bool {
	return c != nil && slices.Contains(c.names, name)
}

// Admit runs the mutating plugins, and once more (as Kubernetes does) if
// one of them asked for reinvocation.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	if err := c.admitOnce(ctx, a); err != nil {
		return err
	}
	a.mu.Lock()
	again := a.reinvoke && a.reinvoked == nil
	if again {
		a.reinvoked = map[string]bool{}
	}
	a.mu.Unlock()
	if again {
		return c.admitOnce(ctx, a)
	}
	return nil
}

func (c *Chain) admitOnce(ctx context.Context, a *Attributes) error {
	for _, p := range c.mutating {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := p.Admit(ctx, a); err != nil {
			return toStatus(a, err)
		}
	}
	return nil
}

// Validate runs the validating plugins; the first refusal ends it.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, p := range c.validating {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := p.Validate(ctx, a); err != nil {
			return toStatus(a, err)
		}
	}
	return nil
}

// ConditionMatcher decides the matchConditions of a webhook.
type ConditionMatcher interface {
	// Match evaluates the conditions for the request a, with object and
	// oldObject as the webhook would receive them (at its version; nil
	// when absent) and request the AdmissionRequest it would be sent. It
	// reports false with the name of a condition that evaluated to false;
	// when none did but one failed to evaluate, it returns that error (the
	// webhook's failurePolicy decides then). True means all held.
	Match(ctx context.Context, a *Attributes, object, oldObject runtime.Object, request *admissionv1.AdmissionRequest) (matched bool, failed string, err error)
}

// ConditionCompiler compiles matchConditions; a compile error makes the
// configuration unusable as its failurePolicy says.
type ConditionCompiler func(conditions []admissionregistrationv1.MatchCondition) (ConditionMatcher, error)

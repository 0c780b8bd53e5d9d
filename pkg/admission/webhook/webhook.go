package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
)

var (
	mutatingConfigurations   = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	validatingConfigurations = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
)

// plugin is what both webhook plugins share: the compiled configurations,
// the clients, the metrics.
type plugin struct {
	mutating   bool
	resource   schema.GroupVersionResource
	src        admission.Source
	conditions admission.ConditionCompiler
	clock      clock.PassiveClock
	logger     *slog.Logger
	metrics    *Metrics
	decoder    runtime.Decoder

	// current is the latest compiled snapshot; read without locks.
	current atomic.Pointer[snapshot]
	// mu serializes compilations and guards clients and usedClients.
	mu          sync.Mutex
	clients     map[clientKey]*client
	usedClients map[clientKey]bool
}

// snapshot is the webhooks of the configurations at one revision of the
// Source, in Kubernetes' order: configurations by name, then their
// webhooks in order. Immutable.
type snapshot struct {
	revision uint64
	hooks    []*hook
}

func newPlugin(cfg *admission.Config, mutating bool) (*plugin, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, fmt.Errorf("webhook admission needs a Source")
	}
	m, err := NewMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := admissionv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := admissionv1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	p := &plugin{
		mutating:   mutating,
		resource:   validatingConfigurations,
		src:        cfg.Source,
		conditions: cfg.Conditions,
		clock:      cfg.Clock,
		logger:     cfg.Logger,
		metrics:    m,
		decoder:    jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{}),
		clients:    map[clientKey]*client{},
	}
	if mutating {
		p.resource = mutatingConfigurations
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Handles reports true: webhooks may register for every operation.
func (p *plugin) Handles(admission.Operation) bool { return true }

// hooks returns the webhooks as currently configured, compiling them
// again when the configurations changed since the last request.
func (p *plugin) hooks(ctx context.Context, a *admission.Attributes) ([]*hook, error) {
	objs, rev, err := p.src.List(ctx, p.resource, "")
	if err != nil {
		p.logger.Warn("cannot list webhook configurations", "resource", p.resource.Resource, "err", err)
		return nil, admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	if s := p.current.Load(); s != nil && s.revision == rev {
		return s.hooks, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.current.Load(); s != nil && s.revision == rev {
		return s.hooks, nil
	}
	s, err := p.compile(objs, rev)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	p.current.Store(s)
	return s.hooks, nil
}

// compile builds the snapshot of objs. Called with p.mu held. Clients no
// longer used by any webhook are closed.
func (p *plugin) compile(objs []runtime.Object, rev uint64) (*snapshot, error) {
	type config struct {
		name  string
		specs []spec
	}
	configs := make([]config, 0, len(objs))
	for _, obj := range objs {
		var c config
		if p.mutating {
			mc, err := typed[admissionregistrationv1.MutatingWebhookConfiguration](obj)
			if err != nil {
				return nil, err
			}
			c.name = mc.Name
			for _, w := range mc.Webhooks {
				c.specs = append(c.specs, spec{
					name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
					matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
					sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, versions: w.AdmissionReviewVersions,
					reinvocation: w.ReinvocationPolicy, matchConditions: w.MatchConditions,
				})
			}
		} else {
			vc, err := typed[admissionregistrationv1.ValidatingWebhookConfiguration](obj)
			if err != nil {
				return nil, err
			}
			c.name = vc.Name
			for _, w := range vc.Webhooks {
				c.specs = append(c.specs, spec{
					name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
					matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
					sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, versions: w.AdmissionReviewVersions,
					matchConditions: w.MatchConditions,
				})
			}
		}
		configs = append(configs, c)
	}
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].name < configs[j].name })
	p.usedClients = map[clientKey]bool{}
	s := &snapshot{revision: rev}
	for _, c := range configs {
		for i, sp := range c.specs {
			s.hooks = append(s.hooks, p.compileHook(c.name, i, sp))
		}
	}
	for key, c := range p.clients {
		if !p.usedClients[key] {
			c.close()
			delete(p.clients, key)
		}
	}
	return s, nil
}

// closeIdle drops the idle connections of every client.
func (p *plugin) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.close()
	}
}

// typed returns obj as a *T: itself, or converted from unstructured.
func typed[T any, PT interface {
	*T
	runtime.Object
}](obj runtime.Object) (PT, error) {
	switch o := obj.(type) {
	case PT:
		return o, nil
	case *unstructured.Unstructured:
		out := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected object %T", obj)
}

func internalError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewInternalError(err)
}

package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "namespace-controller"

// DefaultRecheckInterval is how long a namespace whose content is still
// going (finalizers, graceful deletions) waits before it is looked at
// again: Kubernetes waits half its 15 s finalizer estimate plus a second.
const DefaultRecheckInterval = 8 * time.Second

// DefaultSyncDelay is how long after a namespace event the namespace is
// looked at, as kube-controller-manager waits: other API servers observe
// the deletion meanwhile, and a client deleting a manifest (the namespace,
// then its content) still finds the content it deletes.
const DefaultSyncDelay = 5 * time.Second

// Config configures New.
type Config struct {
	// Client deletes content and writes namespace status and finalize.
	// Required.
	Client *client.Client
	// Informers provides the namespace informer. Required. The controller
	// does not start it.
	Informers *informers.Factory
	// Resources are the namespaced resources whose objects are deleted with
	// a namespace. Nil, the default, discovers them from the server at
	// every sync, as kube-controller-manager does: every namespaced
	// resource of each group's preferred version that can be listed and
	// deleted, events and custom resources included.
	Resources []schema.GroupVersionResource
	// RecheckInterval is how long to wait before looking again at a
	// namespace whose content is still being deleted. Defaults to
	// DefaultRecheckInterval; must not be negative.
	RecheckInterval time.Duration
	// SyncDelay is how long after a namespace event the namespace is
	// synced. Defaults to DefaultSyncDelay; must not be negative.
	SyncDelay time.Duration
	// Clock stamps conditions and paces requeues. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
}

// Controller is the namespace controller. Run it once.
type Controller struct {
	nsInformer *cache.SharedIndexInformer[*corev1.Namespace]
	ctrl       *controller.Controller
}

// New builds the controller and registers its informer handler; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("namespace: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("namespace: informers are required")
	case cfg.RecheckInterval < 0:
		return nil, errors.New("namespace: recheck interval must not be negative")
	case cfg.SyncDelay < 0:
		return nil, errors.New("namespace: sync delay must not be negative")
	}
	if cfg.SyncDelay == 0 {
		cfg.SyncDelay = DefaultSyncDelay
	}
	if cfg.RecheckInterval == 0 {
		cfg.RecheckInterval = DefaultRecheckInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, gvr := range cfg.Resources {
		if gvr.Resource == "" || gvr.Version == "" {
			return nil, fmt.Errorf("namespace: resource %v lacks a version or a name", gvr)
		}
	}
	nsInformer, err := cfg.Informers.Namespaces()
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	queue, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: "namespace", Clock: cfg.Clock}})
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	s := &syncer{
		lister:     nsInformer.Lister(),
		namespaces: client.NewResource(cfg.Client, client.Namespaces),
		client:     cfg.Client,
		resources:  cfg.Resources,
		discovery:  client.NewDiscovery(cfg.Client),
		clock:      cfg.Clock,
		recheck:    cfg.RecheckInterval,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"namespaces": nsInformer.HasSynced},
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	s.enqueueAfter = ctrl.EnqueueKeyAfter
	if _, err := nsInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Namespace]{
		AddFunc:    func(ns *corev1.Namespace, _ bool) { enqueueDeleting(ctrl, ns, cfg.SyncDelay) },
		UpdateFunc: func(_, ns *corev1.Namespace) { enqueueDeleting(ctrl, ns, cfg.SyncDelay) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	return &Controller{nsInformer: nsInformer, ctrl: ctrl}, nil
}

// enqueueDeleting queues a namespace that is being deleted, after delay.
func enqueueDeleting(ctrl *controller.Controller, ns *corev1.Namespace, delay time.Duration) {
	if ns.DeletionTimestamp != nil {
		ctrl.EnqueueKeyAfter(ns.Name, delay)
	}
}

// Run waits for the namespace cache to sync, runs workers workers until ctx
// ends, and returns once they have exited. It returns an error if ctx ends
// before the cache syncs.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx, c.nsInformer.HasSynced) {
		return fmt.Errorf("namespace: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// DefaultResources returns every namespaced built-in resource kplane serves,
// for a Config.Resources that needs no discovery.
func DefaultResources() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, st := range registry.Builtin() {
		if _, other := st.(registry.VersionConverter); other {
			continue // another version of a resource listed in its own
		}
		if info := st.Info(); info.Namespaced {
			out = append(out, info.GroupVersionResource())
		}
	}
	return out
}

package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and events.
const Name = "garbage-collector-controller"

// DefaultAbsentOwnerCacheSize is how many owners verified absent are
// remembered.
const DefaultAbsentOwnerCacheSize = 500

// Resource is one resource the garbage collector watches and may delete
// from.
type Resource struct {
	schema.GroupVersionResource
	// Kind is the kind of the resource's objects, as ownerReferences name
	// it.
	Kind string
	// Namespaced says whether the objects live in namespaces.
	Namespaced bool
}

// GroupVersionKind is the kind of the resource's objects.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// ignoredResources are never monitored, as in Kubernetes: events are many,
// short-lived and never owners.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// DefaultResources lists every resource of registry.Builtin except events,
// each in its storage version.
// All of them support list, watch and delete.
func DefaultResources() []Resource {
	var out []Resource
	for _, s := range registry.Builtin() {
		if _, other := s.(registry.VersionConverter); other {
			continue // another version of a resource listed in its own
		}
		info := s.Info()
		gvr := info.GroupVersionResource()
		if ignoredResources[gvr.GroupResource()] {
			continue
		}
		out = append(out, Resource{GroupVersionResource: gvr, Kind: info.GVK.Kind, Namespaced: info.Namespaced})
	}
	return out
}

// EventRecorder records Events; *record.Recorder is one. Implementations
// must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// Config configures New.
type Config struct {
	// Client reads, patches and deletes objects. Required.
	Client *client.Client
	// Informers provides one informer per monitored resource. Required.
	// The collector registers its informers in New and does not start the
	// factory: start it after New.
	Informers *informers.Factory
	// Resources, if set, are the resources to monitor, and only they:
	// owners of kinds not listed are never resolved (their dependents are
	// retried with backoff and kept). Nil, the default, monitors
	// DefaultResources() and every other resource discovery finds that can
	// be listed, watched and deleted (custom resources, aggregated APIs),
	// following the server as it changes: see DiscoveryPeriod. Built-in
	// resources are watched through the factory's typed informers (shared
	// with other controllers); any other resource through a metadata-only
	// informer (*metav1.PartialObjectMetadata).
	Resources []Resource
	// DiscoveryPeriod is how often discovery is read again when Resources
	// is nil; it also bounds how long workers wait for new monitors to
	// sync. Defaults to DefaultDiscoveryPeriod. A CustomResourceDefinition
	// created, changed or deleted, and an owner of a kind not monitored,
	// start a round at once.
	DiscoveryPeriod time.Duration
	// API overrides how objects are read and written. Defaults to Client.
	API ObjectAPI
	// Recorder receives Warning events about invalid ownerReferences.
	// Defaults to dropping them.
	Recorder EventRecorder
	// Clock paces retries. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// AbsentOwnerCacheSize defaults to DefaultAbsentOwnerCacheSize.
	AbsentOwnerCacheSize int
	// QueueMetrics, if set, receives the metrics of the collector's three
	// work queues, named QueueGraphChanges, QueueAttemptToDelete and
	// QueueAttemptToOrphan. Nil, the default, means no queue metrics.
	QueueMetrics workqueue.MetricsProvider
}

// Names of the collector's work queues in their metrics.
const (
	QueueGraphChanges    = "garbage_collector_graph_changes"
	QueueAttemptToDelete = "garbage_collector_attempt_to_delete"
	QueueAttemptToOrphan = "garbage_collector_attempt_to_orphan"
)

// GarbageCollector deletes objects whose owners are gone and carries out
// foreground and orphan deletions. Run it once.
type GarbageCollector struct {
	builder         *graphBuilder
	collector       *collector
	graphChanges    *workqueue.Queue[*event]
	attemptToDelete *workqueue.RateLimitingQueue[*node]
	attemptToOrphan *workqueue.RateLimitingQueue[*node]
	// synced reports, per fixed resource, whether its informer synced.
	synced map[schema.GroupResource]func() bool
	// discovery follows the resources the server serves; nil with fixed
	// Config.Resources.
	discovery *discovery
	// workerLock is held shared by workers handling an item and
	// exclusively while monitors change and sync.
	workerLock sync.RWMutex
	clock      clock.WithTicker
	logger     *slog.Logger
	ran        sync.Once
}

// New builds the collector and registers handlers on the informers of
// every monitored resource; it starts nothing.
func New(cfg Config) (*GarbageCollector, error) {
	switch {
	case cfg.Client == nil && cfg.API == nil:
		return nil, errors.New("garbagecollector: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("garbagecollector: informers are required")
	case cfg.AbsentOwnerCacheSize < 0:
		return nil, errors.New("garbagecollector: absent owner cache size must not be negative")
	case cfg.DiscoveryPeriod < 0:
		return nil, errors.New("garbagecollector: discovery period must not be negative")
	}
	discover := cfg.Resources == nil && cfg.Client != nil
	if cfg.Resources == nil {
		cfg.Resources = DefaultResources()
	}
	if cfg.DiscoveryPeriod == 0 {
		cfg.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if cfg.API == nil {
		cfg.API = clientAPI{c: cfg.Client}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = discardRecorder{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AbsentOwnerCacheSize == 0 {
		cfg.AbsentOwnerCacheSize = DefaultAbsentOwnerCacheSize
	}
	logger := cfg.Logger.With("controller", Name)
	resources := map[schema.GroupKind]Resource{}
	fixed := map[schema.GroupResource]Resource{}
	for _, r := range cfg.Resources {
		if r.Resource == "" || r.Version == "" || r.Kind == "" {
			return nil, fmt.Errorf("garbagecollector: resource %v needs a version, a resource and a kind", r)
		}
		gk := r.GroupVersionKind().GroupKind()
		if _, dup := resources[gk]; dup {
			return nil, fmt.Errorf("garbagecollector: kind %s listed twice", gk)
		}
		resources[gk] = r
		fixed[r.GroupResource()] = r
	}

	graphChanges, err := workqueue.New[*event](workqueue.Config{Name: QueueGraphChanges, Metrics: cfg.QueueMetrics, Clock: cfg.Clock})
	if err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	attemptToDelete, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[*node]{Config: workqueue.Config{Name: QueueAttemptToDelete, Metrics: cfg.QueueMetrics, Clock: cfg.Clock}})
	if err != nil {
		graphChanges.ShutDown()
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	attemptToOrphan, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[*node]{Config: workqueue.Config{Name: QueueAttemptToOrphan, Metrics: cfg.QueueMetrics, Clock: cfg.Clock}})
	if err != nil {
		graphChanges.ShutDown()
		attemptToDelete.ShutDown()
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	g := newGraph()
	absent := newAbsentCache(cfg.AbsentOwnerCacheSize)
	gc := &GarbageCollector{
		builder: &graphBuilder{
			graph:           g,
			absent:          absent,
			attemptToDelete: attemptToDelete,
			attemptToOrphan: attemptToOrphan,
			recorder:        cfg.Recorder,
			logger:          logger,
		},
		collector: &collector{
			graph:         g,
			api:           cfg.API,
			absent:        absent,
			enqueueDelete: attemptToDelete.Add,
			enqueueEvent:  graphChanges.Add,
			recorder:      cfg.Recorder,
			logger:        logger,
		},
		graphChanges:    graphChanges,
		attemptToDelete: attemptToDelete,
		attemptToOrphan: attemptToOrphan,
		clock:           cfg.Clock,
		logger:          logger,
	}
	gc.synced = map[schema.GroupResource]func() bool{}
	gc.collector.kinds.Store(&resources)
	gc.collector.retired.Store(&map[schema.GroupKind]bool{})
	if discover {
		gc.discovery = &discovery{
			client:  cfg.Client,
			disc:    client.NewDiscovery(cfg.Client),
			period:  cfg.DiscoveryPeriod,
			fixed:   fixed,
			resync:  make(chan struct{}, 1),
			dynamic: map[schema.GroupResource]*dynamicMonitor{},
		}
		gc.collector.missed = gc.discovery.requestResync
	}
	for _, r := range cfg.Resources {
		synced, err := gc.monitor(cfg.Informers, r)
		if err != nil {
			gc.shutDownQueues()
			return nil, fmt.Errorf("garbagecollector: monitor %s: %w", r.GroupVersionResource, err)
		}
		gc.synced[r.GroupResource()] = synced
	}
	return gc, nil
}

// monitor registers the graph's handlers on the informer of r. Built-in
// resources use the factory's typed informer, shared with other
// controllers; any other resource gets a metadata-only one.
func (gc *GarbageCollector) monitor(f *informers.Factory, r Resource) (func() bool, error) {
	switch r.GroupVersionResource {
	case client.Pods.GroupVersionResource:
		return monitorTyped(gc, f, client.Pods, r)
	case client.Nodes.GroupVersionResource:
		return monitorTyped(gc, f, client.Nodes, r)
	case client.Namespaces.GroupVersionResource:
		return monitorTyped(gc, f, client.Namespaces, r)
	case client.Events.GroupVersionResource:
		return monitorTyped(gc, f, client.Events, r)
	case client.ConfigMaps.GroupVersionResource:
		return monitorTyped(gc, f, client.ConfigMaps, r)
	case client.Secrets.GroupVersionResource:
		return monitorTyped(gc, f, client.Secrets, r)
	case client.Deployments.GroupVersionResource:
		return monitorTyped(gc, f, client.Deployments, r)
	case client.ReplicaSets.GroupVersionResource:
		return monitorTyped(gc, f, client.ReplicaSets, r)
	case client.Leases.GroupVersionResource:
		return monitorTyped(gc, f, client.Leases, r)
	}
	inf, err := informers.ForMetadata(f, r.GroupVersionResource)
	if err != nil {
		return nil, err
	}
	return monitorInformer(gc, inf, r)
}

func metadataResource(r Resource) client.Resource[*metav1.PartialObjectMetadata] {
	return client.Resource[*metav1.PartialObjectMetadata]{GroupVersionResource: r.GroupVersionResource, Kind: r.Kind, Namespaced: r.Namespaced}
}

// monitorTyped feeds the events of res's typed informer into the graph.
func monitorTyped[T cache.Object](gc *GarbageCollector, f *informers.Factory, res client.Resource[T], r Resource) (func() bool, error) {
	inf, err := informers.ForResource(f, res)
	if err != nil {
		return nil, err
	}
	return monitorInformer(gc, inf, r)
}

// monitorInformer feeds the events of inf, the informer of r, into the graph.
func monitorInformer[T cache.Object](gc *GarbageCollector, inf *cache.SharedIndexInformer[T], r Resource) (func() bool, error) {
	gvk := r.GroupVersionKind()
	_, err := inf.AddEventHandler(cache.HandlerFuncs[T]{
		AddFunc: func(obj T, _ bool) {
			gc.graphChanges.Add(&event{typ: addEvent, obj: obj, gvk: gvk})
		},
		UpdateFunc: func(old, obj T) {
			gc.graphChanges.Add(&event{typ: updateEvent, obj: obj, old: old, gvk: gvk})
		},
		DeleteFunc: func(obj any) {
			o, err := cache.Unwrap[T](obj)
			if err != nil {
				gc.logger.Error("can not handle deleted object", "resource", r.GroupVersionResource.String(), "err", err)
				return
			}
			gc.graphChanges.Add(&event{typ: deleteEvent, obj: o, gvk: gvk})
		},
	}, cache.HandlerOptions{})
	if err != nil {
		return nil, err
	}
	return inf.HasSynced, nil
}

// Run waits for the informers to sync and the graph to take in their
// initial state, runs workers workers on each of the attempt-to-delete and
// attempt-to-orphan queues until ctx ends, and returns once every goroutine
// it started has exited. It returns an error if ctx ends before the caches
// sync, or if called twice.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		return fmt.Errorf("garbagecollector: workers must be at least 1, got %d", workers)
	}
	first := false
	gc.ran.Do(func() { first = true })
	if !first {
		return errors.New("garbagecollector: Run called twice")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer gc.shutDownQueues()
	if gc.discovery != nil {
		defer gc.discovery.stopDynamic()
	}

	wg.Go(func() {
		for {
			ev, shutdown := gc.graphChanges.Get()
			if shutdown {
				return
			}
			gc.builder.processEvent(ev)
			gc.graphChanges.Done(ev)
		}
	})

	if gc.discovery != nil {
		// The resources served now are monitored (and synced, for up to a
		// discovery period) before the workers start; later changes are
		// followed by the discovery loop.
		if err := gc.watchCRDs(ctx); err != nil {
			return fmt.Errorf("garbagecollector: watch CustomResourceDefinitions: %w", err)
		}
		gc.syncMonitors(ctx)
	}
	gc.logger.Info("waiting for caches to sync")
	if !cache.WaitForCacheSync(ctx, gc.fixedSynced()...) {
		return fmt.Errorf("garbagecollector: caches did not sync: %w", context.Cause(ctx))
	}
	if !gc.waitGraphSync(ctx) {
		return fmt.Errorf("garbagecollector: graph did not sync: %w", context.Cause(ctx))
	}
	gc.logger.Info("graph synced, starting workers", "workers", workers, "nodes", gc.builder.graph.len())
	if gc.discovery != nil {
		wg.Go(func() { gc.discoveryLoop(ctx) })
	}

	for range workers {
		wg.Go(func() {
			for gc.processAttemptToDelete(ctx) {
			}
		})
		wg.Go(func() {
			for gc.processAttemptToOrphan(ctx) {
			}
		})
	}
	<-ctx.Done()
	gc.logger.Info("shutting down")
	return nil
}

// fixedSynced returns the synced functions of the fixed monitors to wait
// for: all of them, or with discovery those the server serves (a built-in
// an older server lacks would never sync).
func (gc *GarbageCollector) fixedSynced() []func() bool {
	var served map[schema.GroupResource]bool
	if gc.discovery != nil {
		served = gc.discovery.servedFixed()
	}
	out := make([]func() bool, 0, len(gc.synced))
	for gr, synced := range gc.synced {
		if served == nil || served[gr] {
			out = append(out, synced)
		} else {
			gc.logger.Warn("not waiting for a resource the server does not serve", "resource", gr.String())
		}
	}
	return out
}

// waitGraphSync waits until the graph has taken in every event queued so
// far: everything the informers delivered before they synced is queued
// before the marker it adds, so once the marker is processed the graph
// holds their state and foreground deletions see all blocking dependents.
// It reports false if ctx ended first.
func (gc *GarbageCollector) waitGraphSync(ctx context.Context) bool {
	done := make(chan struct{})
	gc.graphChanges.Add(&event{typ: syncEvent, done: done})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

func (gc *GarbageCollector) shutDownQueues() {
	gc.graphChanges.ShutDown()
	gc.attemptToDelete.ShutDown()
	gc.attemptToOrphan.ShutDown()
}

// processAttemptToDelete handles one node of the attempt-to-delete queue;
// it reports false once the queue is shut down.
func (gc *GarbageCollector) processAttemptToDelete(ctx context.Context) bool {
	n, shutdown := gc.attemptToDelete.Get()
	if shutdown {
		return false
	}
	defer gc.attemptToDelete.Done(n)
	if ctx.Err() != nil {
		return false
	}
	gc.workerLock.RLock()
	err := gc.collector.attemptToDeleteItem(ctx, n)
	gc.workerLock.RUnlock()
	switch {
	case errors.Is(err, errVirtualDeleteQueued), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		gc.attemptToDelete.Forget(n)
	case err != nil:
		gc.logger.Info("attempt to delete failed, retrying", "item", n.identity.String(), "err", err)
		gc.attemptToDelete.AddRateLimited(n)
	case !gc.builder.graph.state(n).observed && gc.builder.graph.holds(n):
		// A virtual node found to exist is retried until an informer
		// shows it, so one added and deleted while a watch was down is
		// not kept in the graph for ever. A node the graph has since
		// replaced (observed under other coordinates) is done with.
		gc.attemptToDelete.AddRateLimited(n)
	default:
		gc.attemptToDelete.Forget(n)
	}
	return true
}

// processAttemptToOrphan handles one node of the attempt-to-orphan queue;
// it reports false once the queue is shut down.
func (gc *GarbageCollector) processAttemptToOrphan(ctx context.Context) bool {
	n, shutdown := gc.attemptToOrphan.Get()
	if shutdown {
		return false
	}
	defer gc.attemptToOrphan.Done(n)
	if ctx.Err() != nil {
		return false
	}
	gc.workerLock.RLock()
	err := gc.collector.orphanDependents(ctx, n)
	gc.workerLock.RUnlock()
	if err != nil {
		gc.logger.Info("orphaning dependents failed, retrying", "owner", n.identity.String(), "err", err)
		gc.attemptToOrphan.AddRateLimited(n)
		return true
	}
	gc.attemptToOrphan.Forget(n)
	return true
}

// clientAPI is ObjectAPI over a kplane client, reading metadata only.
type clientAPI struct{ c *client.Client }

var _ ObjectAPI = clientAPI{}

func (a clientAPI) rc(res Resource, namespace string) *client.ResourceClient[*metav1.PartialObjectMetadata] {
	return client.NewResource(a.c, metadataResource(res)).Namespace(namespace)
}

func (a clientAPI) Get(ctx context.Context, res Resource, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	return a.rc(res, namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) Delete(ctx context.Context, res Resource, namespace, name string, opts metav1.DeleteOptions) error {
	return a.rc(res, namespace).Delete(ctx, name, opts)
}

func (a clientAPI) Patch(ctx context.Context, res Resource, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.rc(res, namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

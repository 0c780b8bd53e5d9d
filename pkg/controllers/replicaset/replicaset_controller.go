package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "replicaset-controller"

// DefaultBurstReplicas is how many pods one sync creates or deletes at most.
const DefaultBurstReplicas = 500

// replicaSetKind is written into the ownerReferences of the pods.
var replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// EventRecorder records Events about ReplicaSets; *record.Recorder is one.
// Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes pods and ReplicaSet status. Required.
	Client *client.Client
	// Informers provides the ReplicaSet and pod informers. Required. The
	// controller does not start it.
	Informers *informers.Factory
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock decides pod availability and paces requeues. Defaults to the
	// real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// BurstReplicas caps the creations or deletions of one sync. Defaults to
	// DefaultBurstReplicas; must not be negative.
	BurstReplicas int
	// FeatureGates decide the features of Features. Defaults to their
	// defaults. A feature the gates do not know is off.
	FeatureGates featuregate.Gates
	// NewQueue builds the controller's work queue, given the controller's
	// name ("replicaset"). Nil keeps the default: a workqueue.RateLimitingQueue
	// of that name, on the real clock, without metrics. A
	// *workqueue.PriorityQueue makes initial-list and resync events wait
	// behind other work. The controller shuts the queue down when Run
	// returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
	// Source, if set, makes the controller manage another kind of object
	// in the ReplicaSet's shape (see Source); Informers still provides the
	// pods. Nil manages ReplicaSets. A Source's objects have no
	// status.terminatingReplicas: DeploymentReplicaSetTerminatingReplicas
	// does not apply to them.
	Source *Source
}

// Controller is the ReplicaSet controller. Run it once.
type Controller struct {
	rsInformer  *cache.SharedIndexInformer[*appsv1.ReplicaSet]
	podInformer *cache.SharedIndexInformer[*corev1.Pod]
	ctrl        *controller.Controller
	syncer      *syncer
	logger      *slog.Logger
	// wakeups requeues keys after a delay on the injected clock.
	wakeups *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("replicaset: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("replicaset: informers are required")
	case cfg.BurstReplicas < 0:
		return nil, errors.New("replicaset: burst replicas must not be negative")
	}
	if cfg.BurstReplicas == 0 {
		cfg.BurstReplicas = DefaultBurstReplicas
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = discardRecorder{}
	}
	if cfg.FeatureGates == nil {
		gates, err := defaultGates()
		if err != nil {
			return nil, fmt.Errorf("replicaset: %w", err)
		}
		cfg.FeatureGates = gates
	}
	name, queueName := Name, "replicaset"
	var rsInformer *cache.SharedIndexInformer[*appsv1.ReplicaSet]
	if cfg.Source != nil {
		if err := cfg.Source.validate(); err != nil {
			return nil, err
		}
		name, queueName, rsInformer = cfg.Source.Name, cfg.Source.QueueName, cfg.Source.Informer
	} else {
		inf, err := cfg.Informers.ReplicaSets()
		if err != nil {
			return nil, fmt.Errorf("replicaset: %w", err)
		}
		rsInformer = inf
	}
	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	if err := controller.AddControllerUIDIndex(podInformer.Indexer()); err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	expectations, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	queue, err := cfg.NewQueue(queueName)
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	api := clientAPI{
		pods: client.NewResource(cfg.Client, client.Pods),
		rss:  client.NewResource(cfg.Client, client.ReplicaSets),
	}
	var status replicaSetWriter = api
	var kind schema.GroupVersionKind
	if cfg.Source != nil {
		status, kind = cfg.Source.Status, cfg.Source.Kind
	}
	s := &syncer{
		rsLister:         rsInformer.Lister(),
		podLister:        podInformer.Lister(),
		podIndexer:       podInformer.Indexer(),
		pods:             api,
		replicaSets:      status,
		kind:             kind,
		recorder:         cfg.Recorder,
		expectations:     expectations,
		clock:            cfg.Clock,
		burstReplicas:    cfg.BurstReplicas,
		countTerminating: cfg.FeatureGates.Enabled(DeploymentReplicaSetTerminatingReplicas) && cfg.Source == nil,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"replicasets": rsInformer.HasSynced,
			"pods":        podInformer.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	c := &Controller{rsInformer: rsInformer, podInformer: podInformer, ctrl: ctrl, syncer: s, logger: cfg.Logger.With("controller", name)}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After

	if _, err := rsInformer.AddEventHandler(cache.HandlerFuncs[*appsv1.ReplicaSet]{
		AddFunc:    func(rs *appsv1.ReplicaSet, _ bool) { ctrl.Enqueue(rs) },
		UpdateFunc: func(_, rs *appsv1.ReplicaSet) { ctrl.Enqueue(rs) },
		DeleteFunc: c.deleteReplicaSet,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	if _, err := podInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { c.addPod(pod) },
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	return c, nil
}

// Run waits for the ReplicaSet and pod caches to sync, runs workers workers
// until ctx ends, and returns once they have exited. It returns an error if
// ctx ends before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	// Wait here on the real clock, so that the cache-sync poll of the worker
	// loop, which runs on the injected clock, finds the caches synced.
	if !cache.WaitForCacheSync(ctx, c.rsInformer.HasSynced, c.podInformer.HasSynced) {
		return fmt.Errorf("replicaset: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// deleteReplicaSet forgets the expectations of a deleted ReplicaSet and
// enqueues it, so a sync sees it gone.
func (c *Controller) deleteReplicaSet(obj any) {
	key := ""
	if rs, err := cache.Unwrap[*appsv1.ReplicaSet](obj); err == nil {
		key, _ = cache.ObjectKey(rs)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*appsv1.ReplicaSet]); ok {
		key = t.Key
	}
	if key == "" {
		c.logger.Error("can not handle deleted replicaset", "object", fmt.Sprintf("%T", obj))
		return
	}
	c.syncer.expectations.DeleteExpectations(key)
	c.wakeups.Forget(key)
	c.ctrl.EnqueueKey(key)
}

// resolveControllerRef returns the ReplicaSet ref names in namespace if it
// is the one the reference means (same uid), else nil.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != c.syncer.ownerKind().Kind {
		return nil
	}
	rs, err := c.syncer.rsLister.Namespace(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// matchingReplicaSets returns the ReplicaSets whose selector matches an
// orphan pod: the candidates to adopt it.
func (c *Controller) matchingReplicaSets(pod *corev1.Pod) []*appsv1.ReplicaSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	rss, err := c.syncer.rsLister.Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, rs)
		}
	}
	return out
}

// addPod observes a created pod: its controller's expectation is lowered
// and the controller enqueued; an orphan wakes every ReplicaSet that could
// adopt it.
func (c *Controller) addPod(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		// Restarted with a pod already on its way out: count it as deleted
		// so that expectations are not left waiting for it.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		rs := c.resolveControllerRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key := keyOf(rs)
		c.syncer.expectations.CreationObserved(key)
		c.ctrl.EnqueueKey(key)
		return
	}
	for _, rs := range c.matchingReplicaSets(pod) {
		c.ctrl.Enqueue(rs)
	}
}

// updatePod enqueues the ReplicaSets a pod change matters to: the old and
// new controller, and for an orphan whose labels changed, every ReplicaSet
// that could adopt it.
func (c *Controller) updatePod(oldPod, curPod *corev1.Pod) {
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		// A resync: nothing changed.
		return
	}
	labelChanged := !labels.Equals(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion began: the ReplicaSet may replace the pod now
		// rather than when it is finally gone.
		c.deletePod(curPod)
		if labelChanged {
			c.deletePod(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := !equalRefs(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := c.resolveControllerRef(oldPod.Namespace, oldRef); rs != nil {
			c.ctrl.Enqueue(rs)
		}
	}
	if curRef != nil {
		rs := c.resolveControllerRef(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		c.ctrl.Enqueue(rs)
		if !isPodReady(oldPod) && isPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			// The pod becomes available minReadySeconds from now; look
			// again then (a second later, so the clock has passed it).
			c.wakeups.After(keyOf(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelChanged || refChanged {
		for _, rs := range c.matchingReplicaSets(curPod) {
			c.ctrl.Enqueue(rs)
		}
	}
}

// deletePod observes a pod deleted (or being deleted): its controller's
// expectation for it is met and the controller enqueued.
func (c *Controller) deletePod(obj any) {
	pod, err := cache.Unwrap[*corev1.Pod](obj)
	if err != nil {
		c.logger.Error("can not handle deleted pod", "err", err)
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	rs := c.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key := keyOf(rs)
	c.syncer.expectations.DeletionObserved(key, podKey(pod))
	c.ctrl.EnqueueKey(key)
}

func equalRefs(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UID == b.UID
}

// keyOf is a namespaced object's queue key.
func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// podKey names a pod in the expected deletions.
func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// discardRecorder drops events.
type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// clientAPI adapts the typed clients to podWriter and replicaSetWriter.
type clientAPI struct {
	pods *client.ResourceClient[*corev1.Pod]
	rss  *client.ResourceClient[*appsv1.ReplicaSet]
}

func (a clientAPI) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Namespace(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.pods.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a clientAPI) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.pods.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

func (a clientAPI) GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return a.rss.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.rss.Namespace(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

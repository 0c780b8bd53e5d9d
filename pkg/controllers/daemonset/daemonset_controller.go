package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "daemonset-controller"

// DefaultBurstReplicas is how many pods one sync creates or deletes at
// most, as kube-controller-manager's.
const DefaultBurstReplicas = 250

// backoffGCInterval is how often idle failed-pod back-off entries are
// dropped.
const backoffGCInterval = time.Minute

// daemonSetKind is written into the ownerReferences of pods and revisions.
var daemonSetKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// EventRecorder records Events about DaemonSets; *record.Recorder is one.
// Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes pods, revisions and DaemonSet status. Required.
	Client *client.Client
	// Informers provides the DaemonSet, pod, node and ControllerRevision
	// informers. Required. The controller does not start it.
	Informers *informers.Factory
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock decides pod availability, failed-pod back-off and requeues.
	// Defaults to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// BurstReplicas caps the creations, and separately the deletions, of
	// one sync. Defaults to DefaultBurstReplicas; must not be negative.
	BurstReplicas int
	// NewQueue builds the controller's work queue, given the controller's
	// name ("daemonset"). Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name, on the real clock, without
	// metrics. The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the DaemonSet controller. Run it once.
type Controller struct {
	dsInformer   *cache.SharedIndexInformer[*appsv1.DaemonSet]
	podInformer  *cache.SharedIndexInformer[*corev1.Pod]
	nodeInformer *cache.SharedIndexInformer[*corev1.Node]
	revInformer  *cache.SharedIndexInformer[*appsv1.ControllerRevision]
	ctrl         *controller.Controller
	syncer       *syncer
	clock        clock.WithTicker
	logger       *slog.Logger
	// wakeups requeues keys after a delay on the injected clock.
	wakeups *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("daemonset: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("daemonset: informers are required")
	case cfg.BurstReplicas < 0:
		return nil, errors.New("daemonset: burst replicas must not be negative")
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
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	dsInformer, err := cfg.Informers.DaemonSets()
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	if err := controller.AddControllerUIDIndex(podInformer.Indexer()); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	nodeInformer, err := cfg.Informers.Nodes()
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	revInformer, err := cfg.Informers.ControllerRevisions()
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	expectations, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	queue, err := cfg.NewQueue("daemonset")
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	api := clientAPI{
		pods: client.NewResource(cfg.Client, client.Pods),
		dss:  client.NewResource(cfg.Client, client.DaemonSets),
		revs: client.NewResource(cfg.Client, client.ControllerRevisions),
	}
	s := &syncer{
		dsLister:      dsInformer.Lister(),
		podIndexer:    podInformer.Indexer(),
		nodeLister:    nodeInformer.Lister(),
		revLister:     revInformer.Lister(),
		pods:          api,
		daemonSets:    api,
		revisions:     api,
		recorder:      cfg.Recorder,
		expectations:  expectations,
		clock:         cfg.Clock,
		backoff:       newBackoff(cfg.Clock),
		burstReplicas: cfg.BurstReplicas,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"daemonsets":          dsInformer.HasSynced,
			"pods":                podInformer.HasSynced,
			"nodes":               nodeInformer.HasSynced,
			"controllerrevisions": revInformer.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	c := &Controller{
		dsInformer: dsInformer, podInformer: podInformer, nodeInformer: nodeInformer, revInformer: revInformer,
		ctrl: ctrl, syncer: s, clock: cfg.Clock, logger: cfg.Logger.With("controller", Name),
	}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After

	if _, err := dsInformer.AddEventHandler(cache.HandlerFuncs[*appsv1.DaemonSet]{
		AddFunc:    func(ds *appsv1.DaemonSet, _ bool) { ctrl.Enqueue(ds) },
		UpdateFunc: func(_, ds *appsv1.DaemonSet) { ctrl.Enqueue(ds) },
		DeleteFunc: c.deleteDaemonSet,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	if _, err := podInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { c.addPod(pod) },
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	if _, err := nodeInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Node]{
		AddFunc:    func(node *corev1.Node, _ bool) { c.enqueueAll() },
		UpdateFunc: c.updateNode,
		DeleteFunc: func(any) { c.enqueueAll() },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	if _, err := revInformer.AddEventHandler(controller.EnqueueOwnerHandler[*appsv1.ControllerRevision](ctrl, daemonSetKind), cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("daemonset: %w", err)
	}
	return c, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	// Wait here on the real clock, so that the cache-sync poll of the worker
	// loop, which runs on the injected clock, finds the caches synced.
	if !cache.WaitForCacheSync(ctx, c.dsInformer.HasSynced, c.podInformer.HasSynced, c.nodeInformer.HasSynced, c.revInformer.HasSynced) {
		return fmt.Errorf("daemonset: caches did not sync: %w", context.Cause(ctx))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		t := c.clock.NewTicker(backoffGCInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				c.syncer.backoff.gc()
			}
		}
	})
	return c.ctrl.Run(ctx, workers)
}

// deleteDaemonSet forgets a deleted DaemonSet's expectations and enqueues
// it, so a sync sees it gone.
func (c *Controller) deleteDaemonSet(obj any) {
	key := ""
	if ds, err := cache.Unwrap[*appsv1.DaemonSet](obj); err == nil {
		key, _ = cache.ObjectKey(ds)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*appsv1.DaemonSet]); ok {
		key = t.Key
	}
	if key == "" {
		c.logger.Error("can not handle deleted daemonset", "object", fmt.Sprintf("%T", obj))
		return
	}
	c.syncer.expectations.DeleteExpectations(key)
	c.wakeups.Forget(key)
	c.ctrl.EnqueueKey(key)
}

// enqueueAll enqueues every DaemonSet: a node came, went or changed in a
// way that may change where daemon pods belong.
func (c *Controller) enqueueAll() {
	dss, err := c.syncer.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range dss {
		c.ctrl.Enqueue(ds)
	}
}

// updateNode enqueues the DaemonSets when a node changed in what the
// daemon predicates read: its labels, taints or name-bound fields. Status
// heartbeats are ignored.
func (c *Controller) updateNode(old, cur *corev1.Node) {
	if maps.Equal(old.Labels, cur.Labels) && apiequality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) &&
		old.Spec.Unschedulable == cur.Spec.Unschedulable {
		return
	}
	c.enqueueAll()
}

// resolveControllerRef returns the DaemonSet ref names in namespace if it
// is the one the reference means (same uid), else nil.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	if ref.Kind != daemonSetKind.Kind {
		return nil
	}
	ds, err := c.syncer.dsLister.Namespace(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// matchingDaemonSets returns the DaemonSets whose selector matches an
// orphan pod: the candidates to adopt it.
func (c *Controller) matchingDaemonSets(pod *corev1.Pod) []*appsv1.DaemonSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	dss, err := c.syncer.dsLister.Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(dss, func(ds *appsv1.DaemonSet) bool {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		return err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels))
	})
}

// addPod observes a created pod: its DaemonSet's expectation is lowered
// and the DaemonSet enqueued; an orphan wakes every DaemonSet that could
// adopt it.
func (c *Controller) addPod(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		ds := c.resolveControllerRef(pod.Namespace, ref)
		if ds == nil {
			return
		}
		key := keyOf(ds)
		c.syncer.expectations.CreationObserved(key)
		c.ctrl.EnqueueKey(key)
		return
	}
	for _, ds := range c.matchingDaemonSets(pod) {
		c.ctrl.Enqueue(ds)
	}
}

// updatePod enqueues the DaemonSets a pod change matters to.
func (c *Controller) updatePod(oldPod, curPod *corev1.Pod) {
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	labelChanged := !labels.Equals(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		c.deletePod(curPod)
		if labelChanged {
			c.deletePod(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := (curRef == nil) != (oldRef == nil) || curRef != nil && curRef.UID != oldRef.UID
	if refChanged && oldRef != nil {
		if ds := c.resolveControllerRef(oldPod.Namespace, oldRef); ds != nil {
			c.ctrl.Enqueue(ds)
		}
	}
	if curRef != nil {
		ds := c.resolveControllerRef(curPod.Namespace, curRef)
		if ds == nil {
			return
		}
		c.ctrl.Enqueue(ds)
		if !isPodReady(oldPod) && isPodReady(curPod) && ds.Spec.MinReadySeconds > 0 {
			// Available minReadySeconds from now: look again then (a second
			// later, so the clock has passed it).
			c.wakeups.After(keyOf(ds), time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelChanged || refChanged {
		for _, ds := range c.matchingDaemonSets(curPod) {
			c.ctrl.Enqueue(ds)
		}
	}
}

// deletePod observes a pod deleted (or being deleted).
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
	ds := c.resolveControllerRef(pod.Namespace, ref)
	if ds == nil {
		return
	}
	key := keyOf(ds)
	c.syncer.expectations.DeletionObserved(key, podKey(pod))
	c.ctrl.EnqueueKey(key)
}

// keyOf is a namespaced object's queue key.
func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// podKey names a pod in the expected deletions.
func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// discardRecorder drops events.
type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// clientAPI adapts the typed clients to the sync's writer interfaces.
type clientAPI struct {
	pods *client.ResourceClient[*corev1.Pod]
	dss  *client.ResourceClient[*appsv1.DaemonSet]
	revs *client.ResourceClient[*appsv1.ControllerRevision]
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

func (a clientAPI) GetDaemonSet(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error) {
	return a.dss.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	return a.dss.Namespace(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
}

func (a clientAPI) CreateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return a.revs.Namespace(rev.Namespace).Create(ctx, rev, metav1.CreateOptions{})
}

func (a clientAPI) GetRevision(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	return a.revs.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return a.revs.Namespace(rev.Namespace).Update(ctx, rev, metav1.UpdateOptions{})
}

func (a clientAPI) DeleteRevision(ctx context.Context, namespace, name string) error {
	return a.revs.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

func (a clientAPI) PatchRevision(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.revs.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

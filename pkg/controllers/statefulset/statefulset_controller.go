package statefulset

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/history"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "statefulset-controller"

// controllerKind is written into the owner references of the set's pods,
// revisions and PVCs.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// EventRecorder records Events about StatefulSets; *record.Recorder is
// one. Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes pods, PVCs, revisions and StatefulSet status. Required.
	Client *client.Client
	// Informers provides the StatefulSet, pod, PVC and ControllerRevision
	// informers. Required. The controller does not start it.
	Informers *informers.Factory
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock decides pod availability (minReadySeconds) and paces requeues.
	// Defaults to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// FeatureGates decide the features of Features. Defaults to their
	// defaults. A feature the gates do not know is off.
	FeatureGates featuregate.Gates
	// NewQueue builds the controller's work queue, given the controller's
	// name ("statefulset"). Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name, on the real clock, without
	// metrics. The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the StatefulSet controller. Run it once.
type Controller struct {
	setInformer *cache.SharedIndexInformer[*appsv1.StatefulSet]
	podInformer *cache.SharedIndexInformer[*corev1.Pod]
	pvcInformer *cache.SharedIndexInformer[*corev1.PersistentVolumeClaim]
	revInformer *cache.SharedIndexInformer[*appsv1.ControllerRevision]
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
		return nil, errors.New("statefulset: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("statefulset: informers are required")
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
			return nil, fmt.Errorf("statefulset: %w", err)
		}
		cfg.FeatureGates = gates
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	setInformer, err := cfg.Informers.StatefulSets()
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	if err := controller.AddControllerUIDIndex(podInformer.Indexer()); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	pvcInformer, err := cfg.Informers.PersistentVolumeClaims()
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	revInformer, err := cfg.Informers.ControllerRevisions()
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	hist, err := history.New(history.Config{Lister: revInformer.Lister(), Client: history.ClientFor(cfg.Client)})
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	expectations, err := controller.NewExpectations(controller.ExpectationsConfig{Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	queue, err := cfg.NewQueue("statefulset")
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	api := clientAPI{
		pods: client.NewResource(cfg.Client, client.Pods),
		pvcs: client.NewResource(cfg.Client, client.PersistentVolumeClaims),
		sets: client.NewResource(cfg.Client, client.StatefulSets),
	}
	s := &syncer{
		setLister:      setInformer.Lister(),
		podIndexer:     podInformer.Indexer(),
		pvcLister:      pvcInformer.Lister(),
		history:        hist,
		api:            api,
		sets:           api,
		recorder:       cfg.Recorder,
		expectations:   expectations,
		clock:          cfg.Clock,
		maxUnavailable: cfg.FeatureGates.Enabled(MaxUnavailableStatefulSet),
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"statefulsets":           setInformer.HasSynced,
			"pods":                   podInformer.HasSynced,
			"persistentvolumeclaims": pvcInformer.HasSynced,
			"controllerrevisions":    revInformer.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	c := &Controller{
		setInformer: setInformer, podInformer: podInformer, pvcInformer: pvcInformer, revInformer: revInformer,
		ctrl: ctrl, syncer: s, logger: cfg.Logger.With("controller", Name),
	}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After

	if _, err := setInformer.AddEventHandler(cache.HandlerFuncs[*appsv1.StatefulSet]{
		AddFunc:    func(set *appsv1.StatefulSet, _ bool) { ctrl.Enqueue(set) },
		UpdateFunc: func(_, set *appsv1.StatefulSet) { ctrl.Enqueue(set) },
		DeleteFunc: c.deleteSet,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	if _, err := podInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { c.addPod(pod) },
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	return c, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	if !cache.WaitForCacheSync(ctx, c.setInformer.HasSynced, c.podInformer.HasSynced, c.pvcInformer.HasSynced, c.revInformer.HasSynced) {
		return fmt.Errorf("statefulset: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// deleteSet forgets a deleted set's expectations and enqueues it.
func (c *Controller) deleteSet(obj any) {
	key := ""
	if set, err := cache.Unwrap[*appsv1.StatefulSet](obj); err == nil {
		key = keyOf(set)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*appsv1.StatefulSet]); ok {
		key = t.Key
	}
	if key == "" {
		c.logger.Error("can not handle deleted statefulset", "object", fmt.Sprintf("%T", obj))
		return
	}
	c.syncer.expectations.DeleteExpectations(key)
	c.wakeups.Forget(key)
	c.ctrl.EnqueueKey(key)
}

// resolveControllerRef returns the set ref names in namespace if it is the
// one the reference means (same uid), else nil.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	set, err := c.syncer.setLister.Namespace(namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil
	}
	return set
}

// setsForOrphan returns the sets whose selector matches an orphan pod.
func (c *Controller) setsForOrphan(pod *corev1.Pod) []*appsv1.StatefulSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	sets, err := c.syncer.setLister.Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.StatefulSet
	for _, set := range sets {
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, set)
		}
	}
	return out
}

// addPod observes a created pod: its set's expected creation is met and
// the set enqueued; an orphan wakes every set that could adopt it.
func (c *Controller) addPod(pod *corev1.Pod) {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		set := c.resolveControllerRef(pod.Namespace, ref)
		if set == nil {
			return
		}
		key := keyOf(set)
		c.syncer.expectations.CreationObserved(key)
		c.ctrl.EnqueueKey(key)
		return
	}
	for _, set := range c.setsForOrphan(pod) {
		c.ctrl.Enqueue(set)
	}
}

// updatePod enqueues the sets a pod change matters to. The start of a
// graceful deletion meets the set's expected deletion.
func (c *Controller) updatePod(oldPod, curPod *corev1.Pod) {
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if set := c.resolveControllerRef(oldPod.Namespace, oldRef); set != nil {
			c.ctrl.Enqueue(set)
		}
	}
	if curRef != nil {
		set := c.resolveControllerRef(curPod.Namespace, curRef)
		if set == nil {
			return
		}
		key := keyOf(set)
		if oldPod.DeletionTimestamp == nil && curPod.DeletionTimestamp != nil {
			c.syncer.expectations.DeletionObserved(key)
		}
		c.ctrl.EnqueueKey(key)
		if !isPodReady(oldPod) && isPodReady(curPod) && set.Spec.MinReadySeconds > 0 {
			// Available minReadySeconds from now; look again then.
			c.wakeups.After(key, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if !labels.Equals(oldPod.Labels, curPod.Labels) || oldRef != nil {
		for _, set := range c.setsForOrphan(curPod) {
			c.ctrl.Enqueue(set)
		}
	}
}

// deletePod observes a pod gone: unless its graceful deletion was already
// observed, the set's expected deletion is met; the set is enqueued.
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
	set := c.resolveControllerRef(pod.Namespace, ref)
	if set == nil {
		return
	}
	key := keyOf(set)
	if pod.DeletionTimestamp == nil {
		c.syncer.expectations.DeletionObserved(key)
	}
	c.ctrl.EnqueueKey(key)
}

// keyOf is a namespaced object's queue key.
func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// discardRecorder drops events.
type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// clientAPI adapts the typed clients to objectWriter and setWriter.
type clientAPI struct {
	pods *client.ResourceClient[*corev1.Pod]
	pvcs *client.ResourceClient[*corev1.PersistentVolumeClaim]
	sets *client.ResourceClient[*appsv1.StatefulSet]
}

func (a clientAPI) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Namespace(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (a clientAPI) UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.pods.Namespace(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.pods.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a clientAPI) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.pods.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

func (a clientAPI) CreateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	return a.pvcs.Namespace(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
}

func (a clientAPI) UpdateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	return a.pvcs.Namespace(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
}

func (a clientAPI) GetStatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	return a.sets.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	return a.sets.Namespace(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

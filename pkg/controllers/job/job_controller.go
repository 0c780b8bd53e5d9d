package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
const Name = "job-controller"

// Defaults of Config.
const (
	// DefaultPodFailureBackoff is the delay before a failed pod is
	// replaced, doubled for every further failure since the last success.
	DefaultPodFailureBackoff = 10 * time.Second
	// DefaultMaxPodFailureBackoff caps that delay.
	DefaultMaxPodFailureBackoff = 6 * time.Minute
	// DefaultSyncBatchPeriod is how long pod events for one Job are
	// gathered before it is synced.
	DefaultSyncBatchPeriod = time.Second
	// DefaultBurst is how many pods one sync creates or deletes at most.
	DefaultBurst = 500
)

// jobKind is written into the ownerReferences of the pods.
var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// EventRecorder records Events about Jobs; *record.Recorder is one.
// Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes pods and Job status. Required.
	Client *client.Client
	// Informers provides the Job and pod informers. Required. The
	// controller does not start it.
	Informers *informers.Factory
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock measures deadlines and backoff and paces requeues. Defaults to
	// the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// PodFailureBackoff defaults to DefaultPodFailureBackoff and
	// MaxPodFailureBackoff to DefaultMaxPodFailureBackoff; neither may be
	// negative.
	PodFailureBackoff    time.Duration
	MaxPodFailureBackoff time.Duration
	// SyncBatchPeriod defaults to DefaultSyncBatchPeriod; a negative value
	// syncs on every pod event at once.
	SyncBatchPeriod time.Duration
	// Burst caps the pod creations or deletions of one sync. Defaults to
	// DefaultBurst; must not be negative.
	Burst int
	// NewQueue builds the controller's work queue, given the controller's
	// name ("job"). Nil keeps the default: a workqueue.RateLimitingQueue of
	// that name, on the real clock, without metrics. The controller shuts
	// the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the Job controller. Run it once.
type Controller struct {
	jobInformer *cache.SharedIndexInformer[*batchv1.Job]
	podInformer *cache.SharedIndexInformer[*corev1.Pod]
	ctrl        *controller.Controller
	syncer      *syncer
	logger      *slog.Logger
	batch       time.Duration
	// wakeups requeues keys after a delay on the injected clock.
	wakeups *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("job: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("job: informers are required")
	case cfg.Burst < 0, cfg.PodFailureBackoff < 0, cfg.MaxPodFailureBackoff < 0:
		return nil, errors.New("job: burst and backoffs must not be negative")
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.PodFailureBackoff == 0 {
		cfg.PodFailureBackoff = DefaultPodFailureBackoff
	}
	if cfg.MaxPodFailureBackoff == 0 {
		cfg.MaxPodFailureBackoff = DefaultMaxPodFailureBackoff
	}
	if cfg.SyncBatchPeriod == 0 {
		cfg.SyncBatchPeriod = DefaultSyncBatchPeriod
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
	jobInformer, err := cfg.Informers.Jobs()
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if err := controller.AddControllerUIDIndex(podInformer.Indexer()); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if err := controller.AddIndex(podInformer.Indexer(), controllerJobIndex, controllerJobIndexFunc); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	expectations, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	queue, err := cfg.NewQueue("job")
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	api := clientAPI{
		pods: client.NewResource(cfg.Client, client.Pods),
		jobs: client.NewResource(cfg.Client, client.Jobs),
	}
	s := &syncer{
		jobLister:    jobInformer.Lister(),
		podIndexer:   podInformer.Indexer(),
		pods:         api,
		jobs:         api,
		recorder:     cfg.Recorder,
		expectations: expectations,
		finalizers:   newFinalizerExpectations(),
		clock:        cfg.Clock,
		backoff:      cfg.PodFailureBackoff,
		maxBackoff:   cfg.MaxPodFailureBackoff,
		burst:        cfg.Burst,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"jobs": jobInformer.HasSynced,
			"pods": podInformer.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	c := &Controller{
		jobInformer: jobInformer, podInformer: podInformer, ctrl: ctrl, syncer: s,
		logger: cfg.Logger.With("controller", Name), batch: cfg.SyncBatchPeriod,
	}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After

	if _, err := jobInformer.AddEventHandler(cache.HandlerFuncs[*batchv1.Job]{
		AddFunc:    func(j *batchv1.Job, _ bool) { ctrl.Enqueue(j) },
		UpdateFunc: func(_, j *batchv1.Job) { ctrl.Enqueue(j) },
		DeleteFunc: c.deleteJob,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if _, err := podInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { c.addPod(pod) },
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return c, nil
}

// Run waits for the Job and pod caches to sync, runs workers workers until
// ctx ends, and returns once they have exited. It returns an error if ctx
// ends before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	if !cache.WaitForCacheSync(ctx, c.jobInformer.HasSynced, c.podInformer.HasSynced) {
		return fmt.Errorf("job: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// deleteJob forgets a deleted Job's expectations and enqueues it, so a
// sync releases the finalizers its pods still hold.
func (c *Controller) deleteJob(obj any) {
	key := ""
	if j, err := cache.Unwrap[*batchv1.Job](obj); err == nil {
		key = keyOf(j)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*batchv1.Job]); ok {
		key = t.Key
	}
	if key == "" {
		c.logger.Error("can not handle deleted job", "object", fmt.Sprintf("%T", obj))
		return
	}
	c.syncer.expectations.DeleteExpectations(key)
	c.wakeups.Forget(key)
	c.ctrl.EnqueueKey(key)
}

// enqueueBatched syncs key after the batch period, gathering the pod events
// that arrive meanwhile into one sync.
func (c *Controller) enqueueBatched(key string) {
	if c.batch < 0 {
		c.ctrl.EnqueueKey(key)
		return
	}
	c.wakeups.After(key, c.batch)
}

// jobKeyOfRef is the key of the Job a controller reference names, whether
// or not it still exists.
func jobKeyOfRef(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil || ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
		return ""
	}
	return namespace + "/" + ref.Name
}

// controllerJobIndex names the pod index by the key (namespace/name) of
// the Job a pod's controller reference names, whatever that Job's uid: it
// finds the pods a deleted Job left behind for a sync of its name.
const controllerJobIndex = "job-controller/controllerJob"

// controllerJobIndexFunc indexes a pod by its controlling Job's key.
func controllerJobIndexFunc(p *corev1.Pod) ([]string, error) {
	if key := jobKeyOfRef(p.Namespace, metav1.GetControllerOfNoCopy(p)); key != "" {
		return []string{key}, nil
	}
	return nil, nil
}

// resolveControllerRef returns the Job ref names if it is the one the
// reference means (same uid), else nil.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if jobKeyOfRef(namespace, ref) == "" {
		return nil
	}
	j, err := c.syncer.jobLister.Namespace(namespace).Get(ref.Name)
	if err != nil || j.UID != ref.UID {
		return nil
	}
	return j
}

// matchingJobs returns the Jobs whose selector matches an orphan pod.
func (c *Controller) matchingJobs(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	jobs, err := c.syncer.jobLister.Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, j := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, j)
		}
	}
	return out
}

func (c *Controller) addPod(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		key := jobKeyOfRef(pod.Namespace, ref)
		if key == "" {
			return
		}
		if c.resolveControllerRef(pod.Namespace, ref) != nil {
			c.syncer.expectations.CreationObserved(key)
		}
		c.enqueueBatched(key)
		return
	}
	for _, j := range c.matchingJobs(pod) {
		c.enqueueBatched(keyOf(j))
	}
}

func (c *Controller) updatePod(oldPod, curPod *corev1.Pod) {
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	if !hasTrackingFinalizer(curPod) {
		if key := jobKeyOfRef(curPod.Namespace, curRef); key != "" {
			c.syncer.finalizers.observed(key, curPod.UID)
		}
	}
	if curPod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil {
		if key := jobKeyOfRef(curPod.Namespace, curRef); key != "" {
			c.syncer.expectations.DeletionObserved(key, podKey(curPod))
		}
	}
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if key := jobKeyOfRef(oldPod.Namespace, oldRef); key != "" {
			c.enqueueBatched(key)
		}
	}
	if key := jobKeyOfRef(curPod.Namespace, curRef); key != "" {
		// A pod that finished is counted at once rather than after the
		// batch period, as Kubernetes does.
		if isFinished(curPod) && !isFinished(oldPod) || curPod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil {
			c.ctrl.EnqueueKey(key)
		} else {
			c.enqueueBatched(key)
		}
		return
	}
	if curRef == nil && !labels.Equals(oldPod.Labels, curPod.Labels) {
		for _, j := range c.matchingJobs(curPod) {
			c.enqueueBatched(keyOf(j))
		}
	}
}

func (c *Controller) deletePod(obj any) {
	pod, err := cache.Unwrap[*corev1.Pod](obj)
	if err != nil {
		c.logger.Error("can not handle deleted pod", "err", err)
		return
	}
	key := jobKeyOfRef(pod.Namespace, metav1.GetControllerOf(pod))
	if key == "" {
		return
	}
	c.syncer.expectations.DeletionObserved(key, podKey(pod))
	c.syncer.finalizers.observed(key, pod.UID)
	c.ctrl.EnqueueKey(key)
}

// keyOf is a namespaced object's queue key.
func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// podKey names a pod in the expected deletions.
func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// finalizerExpectations holds, per Job key, the uids of pods whose
// tracking finalizer the controller removed and the informer has not yet
// shown removed; such pods are already counted and must not be counted
// again from a stale cache. It is safe for concurrent use.
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]struct{}
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: map[string]map[types.UID]struct{}{}}
}

func (f *finalizerExpectations) expect(key string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.uids[key]
	if m == nil {
		m = map[types.UID]struct{}{}
		f.uids[key] = m
	}
	m[uid] = struct{}{}
}

func (f *finalizerExpectations) observed(key string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.uids[key]; m != nil {
		delete(m, uid)
		if len(m) == 0 {
			delete(f.uids, key)
		}
	}
}

func (f *finalizerExpectations) pending(key string, uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.uids[key][uid]
	return ok
}

// discardRecorder drops events.
type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// clientAPI adapts the typed clients to podWriter and jobWriter.
type clientAPI struct {
	pods *client.ResourceClient[*corev1.Pod]
	jobs *client.ResourceClient[*batchv1.Job]
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

func (a clientAPI) GetJob(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return a.jobs.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, j *batchv1.Job) (*batchv1.Job, error) {
	return a.jobs.Namespace(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

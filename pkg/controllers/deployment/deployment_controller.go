package deployment

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "deployment"

// Config configures New.
type Config struct {
	// Informers supplies the deployment, replicaset and pod informers.
	// Required. The caller starts it (after New) and shuts it down; Run
	// waits for the three caches to sync.
	Informers *informers.Factory
	// Client writes ReplicaSets and Deployments. Required.
	Client *client.Client
	// Clock reads the time for conditions and progress deadlines.
	// Default: the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Recorder records events. Default: a recorder writing through Client,
	// run by Run. A recorder given here is run by the caller.
	Recorder *record.Recorder
	// Metrics defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the controller's
	// name (Name). Nil keeps the default: a workqueue.RateLimitingQueue
	// of that name, on the real clock, without metrics. A
	// *workqueue.PriorityQueue makes initial-list and resync events wait
	// behind other work. The controller shuts the queue down when Run
	// returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller rolls Deployments out through ReplicaSets; see the package
// documentation. Build it with New and Run it once.
type Controller struct {
	// ownRecorder is the recorder New made, run by Run; nil when the
	// caller supplied one.
	ownRecorder *record.Recorder
	ctrl        *controller.Controller
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Informers == nil {
		return nil, errors.New("deployment controller: Informers is required")
	}
	if cfg.Client == nil {
		return nil, errors.New("deployment controller: Client is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	deployments, err := cfg.Informers.Deployments()
	if err != nil {
		return nil, err
	}
	replicaSets, err := cfg.Informers.ReplicaSets()
	if err != nil {
		return nil, err
	}
	pods, err := cfg.Informers.Pods()
	if err != nil {
		return nil, err
	}
	c := &Controller{}
	recorder := cfg.Recorder
	if recorder == nil {
		recorder, err = record.New(record.Config{
			Sink:      record.ClientSink{Events: client.NewResource(cfg.Client, client.Events)},
			Component: "deployment-controller",
			Clock:     cfg.Clock,
			Logger:    cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		c.ownRecorder = recorder
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	queue, err := cfg.NewQueue(Name)
	if err != nil {
		return nil, err
	}
	dClient := client.NewResource(cfg.Client, client.Deployments)
	rsClient := client.NewResource(cfg.Client, client.ReplicaSets)
	s := &syncer{
		deployments: deployments.Lister(),
		replicaSets: replicaSets.Lister(),
		pods:        pods.Lister(),
		rsWriter:    rsAPI{rsClient},
		dWriter:     deploymentAPI{dClient},
		recorder:    recorder,
		clock:       cfg.Clock,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"deployments": deployments.HasSynced, "replicasets": replicaSets.HasSynced, "pods": pods.HasSynced,
		},
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}
	c.ctrl = ctrl
	s.enqueueAfter = ctrl.EnqueueKeyAfter

	h := handlers{ctrl: ctrl, deployments: s.deployments, replicaSets: s.replicaSets}
	if _, err := deployments.AddEventHandler(controller.EnqueueHandler[*appsv1.Deployment](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	if _, err := replicaSets.AddEventHandler(cache.HandlerFuncs[*appsv1.ReplicaSet]{
		AddFunc:    func(rs *appsv1.ReplicaSet, _ bool) { h.replicaSetChanged(nil, rs) },
		UpdateFunc: func(old, rs *appsv1.ReplicaSet) { h.replicaSetChanged(old, rs) },
		DeleteFunc: func(obj any) { controller.EnqueueControllerOfDeleted[*appsv1.ReplicaSet](ctrl, obj, deploymentKind) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	if _, err := pods.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		DeleteFunc: h.podDeleted,
	}, cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run waits for the caches, runs workers workers (and the event recorder
// New made) until ctx ends, and returns after all of them have exited.
func (c *Controller) Run(ctx context.Context, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if c.ownRecorder != nil {
		wg.Go(func() { _ = c.ownRecorder.Run(ctx) })
	}
	err := c.ctrl.Run(ctx, workers)
	cancel()
	wg.Wait()
	return err
}

// handlers maps informer events to Deployment keys.
type handlers struct {
	ctrl        *controller.Controller
	deployments *cache.Lister[*appsv1.Deployment]
	replicaSets *cache.Lister[*appsv1.ReplicaSet]
}

// replicaSetChanged enqueues the Deployment controlling rs (and the former
// one when the controller changed); for an orphan whose labels or owner
// changed, every Deployment that selects it, so one can adopt it.
func (h handlers) replicaSetChanged(old, rs *appsv1.ReplicaSet) {
	if old != nil && old.ResourceVersion == rs.ResourceVersion {
		return
	}
	if rs.DeletionTimestamp != nil {
		h.ctrl.EnqueueControllerOf(rs, deploymentKind)
		return
	}
	newRef := metav1.GetControllerOf(rs)
	if old != nil {
		if oldRef := metav1.GetControllerOf(old); oldRef != nil && (newRef == nil || oldRef.UID != newRef.UID) {
			h.ctrl.EnqueueControllerOf(old, deploymentKind)
		}
	}
	if newRef != nil {
		h.ctrl.EnqueueControllerOf(rs, deploymentKind)
		return
	}
	if old != nil && labels.Equals(old.Labels, rs.Labels) && metav1.GetControllerOf(old) == nil {
		return
	}
	for _, d := range h.selecting(rs) {
		h.ctrl.Enqueue(d)
	}
}

// selecting lists the Deployments in rs's namespace whose selector matches
// its labels.
func (h handlers) selecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := h.deployments.Namespace(rs.Namespace).List(labels.Everything())
	if err != nil || len(rs.Labels) == 0 {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(rs.Labels)) {
			out = append(out, d)
		}
	}
	return out
}

// podDeleted wakes a Recreate Deployment waiting for its old pods to go.
func (h handlers) podDeleted(obj any) {
	pod, err := cache.Unwrap[*corev1.Pod](obj)
	if err != nil || pod == nil {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := h.replicaSets.Namespace(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	dRef := metav1.GetControllerOf(rs)
	if dRef == nil || dRef.Kind != deploymentKind.Kind {
		return
	}
	d, err := h.deployments.Namespace(rs.Namespace).Get(dRef.Name)
	if err != nil || d.UID != dRef.UID || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return
	}
	h.ctrl.Enqueue(d)
}

// rsAPI adapts the typed ReplicaSet client to replicaSetWriter.
type rsAPI struct {
	c *client.ResourceClient[*appsv1.ReplicaSet]
}

func (a rsAPI) Create(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.c.Namespace(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func (a rsAPI) Update(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.c.Namespace(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

func (a rsAPI) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.c.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a rsAPI) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.c.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

// deploymentAPI adapts the typed Deployment client to deploymentWriter.
type deploymentAPI struct {
	c *client.ResourceClient[*appsv1.Deployment]
}

func (a deploymentAPI) Get(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return a.c.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a deploymentAPI) UpdateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.c.Namespace(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
}

func (a deploymentAPI) Update(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.c.Namespace(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

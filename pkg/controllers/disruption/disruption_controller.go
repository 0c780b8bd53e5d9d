package disruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
const Name = "disruption-controller"

// EventRecorder records Events about budgets; *record.Recorder is one.
// Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes budget status and reads scale subresources. Required.
	Client *client.Client
	// Informers provides the budget, pod, ReplicaSet, Deployment,
	// StatefulSet and ReplicationController informers. Required. The
	// controller does not start it.
	Informers *informers.Factory
	// Mapper finds the resource of a controller kind that is not built in,
	// to read its scale subresource. Defaults to a client.RESTMapper over
	// Client's discovery.
	Mapper apimeta.RESTMapper
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock ages disruptedPods and paces requeues. Defaults to the real
	// clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "disruption". Nil keeps the default: a workqueue.RateLimitingQueue of
	// that name on Clock, without metrics. The controller shuts the queue
	// down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the disruption controller. Run it once.
type Controller struct {
	synced  []func() bool
	ctrl    *controller.Controller
	syncer  *syncer
	logger  *slog.Logger
	wakeups *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("disruption: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("disruption: informers are required")
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
	if cfg.Mapper == nil {
		m, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(cfg.Client), Clock: cfg.Clock})
		if err != nil {
			return nil, fmt.Errorf("disruption: %w", err)
		}
		cfg.Mapper = m
	}
	if cfg.NewQueue == nil {
		clk := cfg.Clock
		cfg.NewQueue = func(name string) (workqueue.RateLimitingInterface[string], error) {
			return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name, Clock: clk}})
		}
	}
	pdbInf, err := cfg.Informers.PodDisruptionBudgets()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	podInf, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	rsInf, err := cfg.Informers.ReplicaSets()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	dInf, err := cfg.Informers.Deployments()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	ssInf, err := cfg.Informers.StatefulSets()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	rcInf, err := cfg.Informers.ReplicationControllers()
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	queue, err := cfg.NewQueue("disruption")
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	s := &syncer{
		pdbLister:        pdbInf.Lister(),
		podLister:        podInf.Lister(),
		rsLister:         rsInf.Lister(),
		deploymentLister: dInf.Lister(),
		ssLister:         ssInf.Lister(),
		rcLister:         rcInf.Lister(),
		scales:           scaleClient{mapper: cfg.Mapper, dynamic: client.NewDynamic(cfg.Client)},
		pdbs:             pdbClient{client.NewResource(cfg.Client, client.PodDisruptionBudgets)},
		recorder:         cfg.Recorder,
		clock:            cfg.Clock,
	}
	synced := map[string]controller.InformerSynced{
		"poddisruptionbudgets":   pdbInf.HasSynced,
		"pods":                   podInf.HasSynced,
		"replicasets":            rsInf.HasSynced,
		"deployments":            dInf.HasSynced,
		"statefulsets":           ssInf.HasSynced,
		"replicationcontrollers": rcInf.HasSynced,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  synced,
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	c := &Controller{ctrl: ctrl, syncer: s, logger: cfg.Logger.With("controller", Name)}
	for _, f := range synced {
		c.synced = append(c.synced, f)
	}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After

	if _, err := pdbInf.AddEventHandler(cache.HandlerFuncs[*policyv1.PodDisruptionBudget]{
		AddFunc:    func(pdb *policyv1.PodDisruptionBudget, _ bool) { ctrl.Enqueue(pdb) },
		UpdateFunc: func(_, pdb *policyv1.PodDisruptionBudget) { ctrl.Enqueue(pdb) },
		DeleteFunc: c.deletePDB,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	if _, err := podInf.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) { c.enqueueBudgetsOf(pod) },
		UpdateFunc: func(old, cur *corev1.Pod) {
			c.enqueueBudgetsOf(cur)
			if !labels.Equals(old.Labels, cur.Labels) {
				c.enqueueBudgetsOf(old)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, err := cache.Unwrap[*corev1.Pod](obj); err == nil {
				c.enqueueBudgetsOf(pod)
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	return c, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	if !cache.WaitForCacheSync(ctx, c.synced...) {
		return fmt.Errorf("disruption: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

func (c *Controller) deletePDB(obj any) {
	key := ""
	if pdb, err := cache.Unwrap[*policyv1.PodDisruptionBudget](obj); err == nil {
		key = keyOf(pdb)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*policyv1.PodDisruptionBudget]); ok {
		key = t.Key
	}
	if key == "" {
		return
	}
	c.wakeups.Forget(key)
	c.ctrl.EnqueueKey(key)
}

// enqueueBudgetsOf enqueues every budget of pod's namespace that covers it.
func (c *Controller) enqueueBudgetsOf(pod *corev1.Pod) {
	pdbs, err := c.syncer.pdbLister.Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			c.ctrl.Enqueue(pdb)
		}
	}
}

// discardRecorder drops events.
type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// pdbClient adapts the typed client to pdbWriter.
type pdbClient struct {
	pdbs *client.ResourceClient[*policyv1.PodDisruptionBudget]
}

func (p pdbClient) UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, err := p.pdbs.Namespace(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err
}

// scaleClient reads scale subresources through the dynamic client.
type scaleClient struct {
	mapper  apimeta.RESTMapper
	dynamic *client.DynamicClient
}

func (s scaleClient) Scale(ctx context.Context, gk schema.GroupKind, namespace, name string) (types.UID, int32, error) {
	mapping, err := s.mapper.RESTMapping(gk)
	if err != nil {
		return "", 0, fmt.Errorf("resource of %s: %w", gk, err)
	}
	obj, err := s.dynamic.Resource(mapping.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}, "scale")
	if err != nil {
		return "", 0, err
	}
	n, _, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil {
		return "", 0, fmt.Errorf("scale of %s %s/%s: %w", gk, namespace, name, err)
	}
	return obj.GetUID(), int32(n), nil
}

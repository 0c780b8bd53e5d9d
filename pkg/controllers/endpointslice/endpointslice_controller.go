package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "endpointslice-controller"

// Limits of Config.MaxEndpointsPerSlice, as kube-controller-manager's
// --max-endpoints-per-slice has them.
const (
	DefaultMaxEndpointsPerSlice = 100
	MaxMaxEndpointsPerSlice     = 1000
)

// sliceChangeMinSyncDelay is how long after a change of one of its slices
// by someone else a Service is synced at the earliest, as in Kubernetes:
// it batches bursts of such changes.
const sliceChangeMinSyncDelay = time.Second

// Config configures New.
type Config struct {
	// Client writes the EndpointSlices. Required.
	Client *client.Client
	// Informers provides the Service, pod, EndpointSlice and node
	// informers. Required. The controller does not start it.
	Informers *informers.Factory
	// MaxEndpointsPerSlice is the most endpoints one slice holds. Defaults
	// to DefaultMaxEndpointsPerSlice; at most MaxMaxEndpointsPerSlice.
	MaxEndpointsPerSlice int
	// EndpointUpdatesBatchPeriod delays the sync of a Service after a pod
	// change, so that changes in quick succession make one write. Defaults
	// to 0: no delay. Must not be negative.
	EndpointUpdatesBatchPeriod time.Duration
	// Clock paces delays and retries. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "endpointslice". Nil keeps the default: a workqueue.RateLimitingQueue
	// of that name on Clock, without metrics. The controller shuts the
	// queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the EndpointSlice controller. Run it once.
type Controller struct {
	ctrl *controller.Controller
}

// New builds the controller and registers its informer handlers; it
// starts nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("endpointslice: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("endpointslice: informers are required")
	case cfg.MaxEndpointsPerSlice < 0 || cfg.MaxEndpointsPerSlice > MaxMaxEndpointsPerSlice:
		return nil, fmt.Errorf("endpointslice: max endpoints per slice %d is not within 1 and %d", cfg.MaxEndpointsPerSlice, MaxMaxEndpointsPerSlice)
	case cfg.EndpointUpdatesBatchPeriod < 0:
		return nil, fmt.Errorf("endpointslice: negative endpoint updates batch period %v", cfg.EndpointUpdatesBatchPeriod)
	}
	if cfg.MaxEndpointsPerSlice == 0 {
		cfg.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NewQueue == nil {
		clk := cfg.Clock
		cfg.NewQueue = func(name string) (workqueue.RateLimitingInterface[string], error) {
			return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name, Clock: clk}})
		}
	}
	svcInf, err := cfg.Informers.Services()
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	podInf, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	sliceInf, err := cfg.Informers.EndpointSlices()
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	nodeInf, err := cfg.Informers.Nodes()
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	queue, err := cfg.NewQueue("endpointslice")
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	slicesClient := client.NewResource(cfg.Client, client.EndpointSlices)
	s := &syncer{
		services:    svcInf.Lister(),
		pods:        podInf.Lister(),
		slices:      sliceInf.Lister(),
		nodes:       nodeInf.Lister(),
		writer:      clientWriter{slicesClient},
		tracker:     newTracker(),
		triggers:    &podendpoint.TriggerTimes{},
		maxPerSlice: cfg.MaxEndpointsPerSlice,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"services": svcInf.HasSynced, "pods": podInf.HasSynced,
			"endpointslices": sliceInf.HasSynced, "nodes": nodeInf.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	c := &Controller{ctrl: ctrl}

	if _, err := svcInf.AddEventHandler(controller.EnqueueHandler[*corev1.Service](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}

	services := svcInf.Lister()
	batch := cfg.EndpointUpdatesBatchPeriod
	enqueue := func(keys []string, err error) {
		if err != nil {
			cfg.Logger.Error("can not find the services of a pod", "err", err)
			return
		}
		for _, k := range keys {
			ctrl.EnqueueKeyAfter(k, batch)
		}
	}
	if _, err := podInf.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) { enqueue(podendpoint.ServicesOf(services.Namespace(p.Namespace), p)) },
		UpdateFunc: func(old, cur *corev1.Pod) {
			enqueue(podendpoint.ServicesToSync(services.Namespace(cur.Namespace), old, cur))
		},
		DeleteFunc: func(obj any) {
			if p, err := cache.Unwrap[*corev1.Pod](obj); err == nil {
				enqueue(podendpoint.ServicesOf(services.Namespace(p.Namespace), p))
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}

	delay := max(sliceChangeMinSyncDelay, batch)
	queueFor := func(sl *discoveryv1.EndpointSlice) {
		if k := serviceKey(sl); k != "" {
			ctrl.EnqueueKeyAfter(k, delay)
		}
	}
	managed := func(sl *discoveryv1.EndpointSlice) bool {
		return sl.Labels[discoveryv1.LabelManagedBy] == ControllerName
	}
	if _, err := sliceInf.AddEventHandler(cache.HandlerFuncs[*discoveryv1.EndpointSlice]{
		AddFunc: func(sl *discoveryv1.EndpointSlice, _ bool) {
			if managed(sl) && s.tracker.shouldSync(sl) {
				queueFor(sl)
			}
		},
		UpdateFunc: func(old, cur *discoveryv1.EndpointSlice) {
			// Labels do not bump the generation: a slice moved to another
			// Service, or taken over or given up, concerns both.
			if old.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName] {
				queueFor(old)
				queueFor(cur)
				return
			}
			if managed(old) != managed(cur) || (managed(cur) && s.tracker.shouldSync(cur)) {
				queueFor(cur)
			}
		},
		DeleteFunc: func(obj any) {
			sl, err := cache.Unwrap[*discoveryv1.EndpointSlice](obj)
			if err != nil || !managed(sl) || !s.tracker.has(sl) {
				return
			}
			if !s.tracker.handleDeletion(sl) {
				queueFor(sl)
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	return c, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.ctrl.Run(ctx, workers)
}

// clientWriter writes slices through the API.
type clientWriter struct {
	c *client.ResourceClient[*discoveryv1.EndpointSlice]
}

func (w clientWriter) Create(ctx context.Context, sl *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error) {
	return w.c.Namespace(sl.Namespace).Create(ctx, sl, metav1.CreateOptions{})
}

func (w clientWriter) Update(ctx context.Context, sl *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error) {
	return w.c.Namespace(sl.Namespace).Update(ctx, sl, metav1.UpdateOptions{})
}

func (w clientWriter) Delete(ctx context.Context, namespace, name string) error {
	return w.c.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

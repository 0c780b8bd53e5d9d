//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served and maintained, as kube-controller-manager 1.37 still does

package endpoints

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
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
const Name = "endpoints-controller"

// leaderAnnotation marks Endpoints used as a leader-election lock by old
// components; they have no Service and are never deleted.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Config configures New.
type Config struct {
	// Client writes the Endpoints. Required.
	Client *client.Client
	// Informers provides the Service, pod and Endpoints informers.
	// Required. The controller does not start it.
	Informers *informers.Factory
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
	// "endpoint". Nil keeps the default: a workqueue.RateLimitingQueue of
	// that name on Clock, without metrics. The controller shuts the queue
	// down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the Endpoints controller. Run it once.
type Controller struct {
	ctrl *controller.Controller
}

// New builds the controller and registers its informer handlers; it
// starts nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("endpoints: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("endpoints: informers are required")
	case cfg.EndpointUpdatesBatchPeriod < 0:
		return nil, fmt.Errorf("endpoints: negative endpoint updates batch period %v", cfg.EndpointUpdatesBatchPeriod)
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
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	podInf, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	epInf, err := cfg.Informers.Endpoints()
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	queue, err := cfg.NewQueue("endpoint")
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	s := &syncer{
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
		writer:    clientWriter{client.NewResource(cfg.Client, client.Endpoints)},
		triggers:  &podendpoint.TriggerTimes{},
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"services": svcInf.HasSynced, "pods": podInf.HasSynced, "endpoints": epInf.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	if _, err := svcInf.AddEventHandler(controller.EnqueueHandler[*corev1.Service](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
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
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	if _, err := epInf.AddEventHandler(cache.HandlerFuncs[*corev1.Endpoints]{
		// Endpoints found at start whose Service may be gone: the sync
		// deletes them then (leader-election locks excepted).
		AddFunc: func(ep *corev1.Endpoints, initial bool) {
			if _, lock := ep.Annotations[leaderAnnotation]; initial && !lock {
				ctrl.Enqueue(ep)
			}
		},
		// Endpoints deleted while their Service exists are made again.
		DeleteFunc: func(obj any) { controller.EnqueueDeleted[*corev1.Endpoints](ctrl, obj) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	return &Controller{ctrl: ctrl}, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.ctrl.Run(ctx, workers)
}

// clientWriter writes Endpoints through the API.
type clientWriter struct {
	c *client.ResourceClient[*corev1.Endpoints]
}

func (w clientWriter) Create(ctx context.Context, ep *corev1.Endpoints) error {
	_, err := w.c.Namespace(ep.Namespace).Create(ctx, ep, metav1.CreateOptions{})
	return err
}

func (w clientWriter) Update(ctx context.Context, ep *corev1.Endpoints) error {
	_, err := w.c.Namespace(ep.Namespace).Update(ctx, ep, metav1.UpdateOptions{})
	return err
}

func (w clientWriter) Delete(ctx context.Context, namespace, name string) error {
	return w.c.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

package ttlafterfinished

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "ttl-after-finished-controller"

// Config configures New.
type Config struct {
	// Client reads and deletes Jobs. Required.
	Client *client.Client
	// Informers provides the Job informer. Required; not started by the
	// controller.
	Informers *informers.Factory
	// Clock decides when a TTL has expired and paces requeues. Defaults to
	// the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the work queue, given the name "ttl-after-finished".
	// Nil keeps a workqueue.RateLimitingQueue on the real clock.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the TTL-after-finished controller. Run it once.
type Controller struct {
	informer *cache.SharedIndexInformer[*batchv1.Job]
	ctrl     *controller.Controller
	wakeups  *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil {
		return nil, errors.New("ttlafterfinished: client and informers are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = func(name string) (workqueue.RateLimitingInterface[string], error) {
			return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
		}
	}
	inf, err := cfg.Informers.Jobs()
	if err != nil {
		return nil, fmt.Errorf("ttlafterfinished: %w", err)
	}
	queue, err := cfg.NewQueue("ttl-after-finished")
	if err != nil {
		return nil, fmt.Errorf("ttlafterfinished: %w", err)
	}
	jobs := client.NewResource(cfg.Client, client.Jobs)
	s := &syncer{
		lister: inf.Lister(),
		jobs: jobAPI{
			get: func(ctx context.Context, ns, name string) (*batchv1.Job, error) {
				return jobs.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			},
			del: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
				return jobs.Namespace(ns).Delete(ctx, name, opts)
			},
		},
		clock: cfg.Clock,
	}
	ctrl, err := controller.New(controller.Config{
		Name: Name, Queue: queue, SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{"jobs": inf.HasSynced},
		Clock:      cfg.Clock, Logger: cfg.Logger, Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("ttlafterfinished: %w", err)
	}
	c := &Controller{informer: inf, ctrl: ctrl}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After
	enqueue := func(j *batchv1.Job) {
		if needsCleanup(j) {
			ctrl.Enqueue(j)
		}
	}
	if _, err := inf.AddEventHandler(cache.HandlerFuncs[*batchv1.Job]{
		AddFunc:    func(j *batchv1.Job, _ bool) { enqueue(j) },
		UpdateFunc: func(_, j *batchv1.Job) { enqueue(j) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("ttlafterfinished: %w", err)
	}
	return c, nil
}

// Run waits for the Job cache, runs workers workers until ctx ends and
// returns once they have exited.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	if !cache.WaitForCacheSync(ctx, c.informer.HasSynced) {
		return fmt.Errorf("ttlafterfinished: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// jobAPI adapts the typed client to jobClient.
type jobAPI struct {
	get func(ctx context.Context, ns, name string) (*batchv1.Job, error)
	del func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
}

func (a jobAPI) GetJob(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	return a.get(ctx, ns, name)
}

func (a jobAPI) DeleteJob(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return a.del(ctx, ns, name, opts)
}

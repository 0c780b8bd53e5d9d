package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "serviceaccount-controller"

// DefaultServiceAccount is the ServiceAccount every namespace gets.
const DefaultServiceAccount = "default"

// Config configures New.
type Config struct {
	// Client creates the ServiceAccounts. Required.
	Client *client.Client
	// Informers provides the namespace and ServiceAccount informers.
	// Required. The controller does not start it.
	Informers *informers.Factory
	// ServiceAccounts names the ServiceAccounts every active namespace
	// gets. Defaults to {DefaultServiceAccount}.
	ServiceAccounts []string
	// Clock paces retries. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "serviceaccount". Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name on Clock, without metrics.
	// The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the ServiceAccounts controller. Run it once.
type Controller struct {
	ctrl *controller.Controller
}

// New builds the controller and registers its informer handlers; it
// starts nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("serviceaccount: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("serviceaccount: informers are required")
	}
	if cfg.ServiceAccounts == nil {
		cfg.ServiceAccounts = []string{DefaultServiceAccount}
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
	nsInf, err := cfg.Informers.Namespaces()
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	saInf, err := cfg.Informers.ServiceAccounts()
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	queue, err := cfg.NewQueue("serviceaccount")
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	sas := client.NewResource(cfg.Client, client.ServiceAccounts)
	s := &syncer{
		namespaces: nsInf.Lister(),
		accounts:   saInf.Lister(),
		writer: creatorFunc(func(ctx context.Context, sa *corev1.ServiceAccount) error {
			_, err := sas.Namespace(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return err
		}),
		names: cfg.ServiceAccounts,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"namespaces": nsInf.HasSynced, "serviceaccounts": saInf.HasSynced},
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	if _, err := nsInf.AddEventHandler(cache.HandlerFuncs[*corev1.Namespace]{
		AddFunc:    func(ns *corev1.Namespace, _ bool) { ctrl.EnqueueKey(ns.Name) },
		UpdateFunc: func(_, ns *corev1.Namespace) { ctrl.EnqueueKey(ns.Name) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	if _, err := saInf.AddEventHandler(cache.HandlerFuncs[*corev1.ServiceAccount]{
		DeleteFunc: func(obj any) {
			if sa, err := cache.Unwrap[*corev1.ServiceAccount](obj); err == nil {
				ctrl.EnqueueKey(sa.Namespace)
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	return &Controller{ctrl: ctrl}, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.ctrl.Run(ctx, workers)
}

// creatorFunc adapts a function to creator.
type creatorFunc func(ctx context.Context, sa *corev1.ServiceAccount) error

// Create implements creator.
func (f creatorFunc) Create(ctx context.Context, sa *corev1.ServiceAccount) error { return f(ctx, sa) }

package rootcacertpublisher

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
const Name = "root-ca-certificate-publisher-controller"

// Config configures New.
type Config struct {
	// Client writes the ConfigMaps. Required.
	Client *client.Client
	// Informers provides the namespace and ConfigMap informers. Required.
	// The controller does not start it.
	Informers *informers.Factory
	// RootCA is the PEM CA bundle to publish. Required: New refuses an
	// empty one.
	RootCA []byte
	// Clock paces retries. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "root_ca_cert_publisher". Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name on Clock, without metrics.
	// The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the root CA certificate publisher. Run it once.
type Controller struct {
	ctrl *controller.Controller
}

// New builds the controller and registers its informer handlers; it
// starts nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("rootcacertpublisher: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("rootcacertpublisher: informers are required")
	case len(cfg.RootCA) == 0:
		return nil, errors.New("rootcacertpublisher: root CA is required")
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
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	cmInf, err := cfg.Informers.ConfigMaps()
	if err != nil {
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	queue, err := cfg.NewQueue("root_ca_cert_publisher")
	if err != nil {
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	cms := client.NewResource(cfg.Client, client.ConfigMaps)
	s := &syncer{configMaps: cmInf.Lister(), writer: clientWriter{cms}, rootCA: string(cfg.RootCA)}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"namespaces": nsInf.HasSynced, "configmaps": cmInf.HasSynced},
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	if _, err := nsInf.AddEventHandler(cache.HandlerFuncs[*corev1.Namespace]{
		AddFunc:    func(ns *corev1.Namespace, _ bool) { ctrl.EnqueueKey(ns.Name) },
		UpdateFunc: func(_, ns *corev1.Namespace) { ctrl.EnqueueKey(ns.Name) },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	if _, err := cmInf.AddEventHandler(cache.HandlerFuncs[*corev1.ConfigMap]{
		UpdateFunc: func(_, cm *corev1.ConfigMap) {
			if cm.Name == ConfigMapName {
				ctrl.EnqueueKey(cm.Namespace)
			}
		},
		DeleteFunc: func(obj any) {
			if cm, err := cache.Unwrap[*corev1.ConfigMap](obj); err == nil && cm.Name == ConfigMapName {
				ctrl.EnqueueKey(cm.Namespace)
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("rootcacertpublisher: %w", err)
	}
	return &Controller{ctrl: ctrl}, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.ctrl.Run(ctx, workers)
}

// clientWriter writes ConfigMaps through the API.
type clientWriter struct {
	c *client.ResourceClient[*corev1.ConfigMap]
}

func (w clientWriter) Create(ctx context.Context, cm *corev1.ConfigMap) error {
	_, err := w.c.Namespace(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (w clientWriter) Update(ctx context.Context, cm *corev1.ConfigMap) error {
	_, err := w.c.Namespace(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

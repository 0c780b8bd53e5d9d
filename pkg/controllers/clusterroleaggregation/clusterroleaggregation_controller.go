package clusterroleaggregation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "clusterrole-aggregation-controller"

// Config configures New.
type Config struct {
	// Client writes the aggregated ClusterRoles. Required.
	Client *client.Client
	// Informers provides the ClusterRole informer. Required. The controller
	// does not start it.
	Informers *informers.Factory
	// Clock paces the queue's retries. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "clusterrole-aggregation". Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name on Clock, without metrics.
	// The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the ClusterRole aggregation controller. Run it once.
type Controller struct {
	informer *cache.SharedIndexInformer[*rbacv1.ClusterRole]
	ctrl     *controller.Controller
}

// New builds the controller and registers its informer handler; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("clusterroleaggregation: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("clusterroleaggregation: informers are required")
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
	inf, err := cfg.Informers.ClusterRoles()
	if err != nil {
		return nil, fmt.Errorf("clusterroleaggregation: %w", err)
	}
	queue, err := cfg.NewQueue("clusterrole-aggregation")
	if err != nil {
		return nil, fmt.Errorf("clusterroleaggregation: %w", err)
	}
	roles := client.NewResource(cfg.Client, client.ClusterRoles)
	s := &syncer{
		roles: inf.Lister(),
		writer: updaterFunc(func(ctx context.Context, r *rbacv1.ClusterRole) error {
			// As kube-controller-manager's, the rules are applied
			// server-side, forced: the controller owns them. A server
			// without server-side apply gets an update.
			_, err := roles.Apply(ctx, aggregatedRules(r), client.ApplyOptions{FieldManager: FieldManager, Force: true})
			if apierrors.IsUnsupportedMediaType(err) {
				_, err = roles.Update(ctx, r, metav1.UpdateOptions{})
			}
			return err
		}),
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"clusterroles": inf.HasSynced},
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("clusterroleaggregation: %w", err)
	}
	c := &Controller{informer: inf, ctrl: ctrl}
	lister := inf.Lister()
	enqueueAggregating := func() {
		all, err := lister.List(labels.Everything())
		if err != nil {
			return
		}
		for _, r := range all {
			if r.AggregationRule != nil {
				ctrl.EnqueueKey(r.Name)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.HandlerFuncs[*rbacv1.ClusterRole]{
		AddFunc:    func(*rbacv1.ClusterRole, bool) { enqueueAggregating() },
		UpdateFunc: func(_, _ *rbacv1.ClusterRole) { enqueueAggregating() },
		DeleteFunc: func(any) { enqueueAggregating() },
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("clusterroleaggregation: %w", err)
	}
	return c, nil
}

// Run waits for the ClusterRole cache to sync, runs workers workers until
// ctx ends, and returns once they have exited. It returns an error if ctx
// ends before the cache syncs.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx, c.informer.HasSynced) {
		return fmt.Errorf("clusterroleaggregation: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

// FieldManager is the field manager of the rules the controller applies,
// kube-controller-manager's.
const FieldManager = Name

// appliedClusterRole is the configuration the controller applies: the
// role's name and rules, nothing else.
type appliedClusterRole struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Metadata   appliedMeta         `json:"metadata"`
	Rules      []rbacv1.PolicyRule `json:"rules,omitempty"`
}

type appliedMeta struct {
	Name string `json:"name"`
}

func aggregatedRules(r *rbacv1.ClusterRole) appliedClusterRole {
	return appliedClusterRole{
		APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole",
		Metadata: appliedMeta{Name: r.Name}, Rules: r.Rules,
	}
}

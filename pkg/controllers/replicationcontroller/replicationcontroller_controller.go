package replicationcontroller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "replication-controller"

// rcKind is written into the ownerReferences of the pods.
var rcKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// EventRecorder records Events about ReplicationControllers;
// *record.Recorder is one. Implementations must be safe for concurrent use
// and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes pods and ReplicationController status. Required.
	Client *client.Client
	// Informers provides the pod informer and holds the controller's
	// informer of ReplicationControllers seen as ReplicaSets. Required. The
	// controller does not start it.
	Informers *informers.Factory
	// Recorder receives the controller's Events, about the
	// ReplicationControllers. Defaults to dropping them.
	Recorder EventRecorder
	// Clock decides pod availability and paces requeues. Defaults to the
	// real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// BurstReplicas caps the creations or deletions of one sync. Defaults to
	// replicaset.DefaultBurstReplicas; must not be negative.
	BurstReplicas int
	// NewQueue builds the controller's work queue, given the name
	// "replicationmanager". Nil keeps the default: a
	// workqueue.RateLimitingQueue of that name, on the real clock, without
	// metrics. The controller shuts the queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the ReplicationController controller. Run it once.
type Controller struct {
	rs *replicaset.Controller
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("replicationcontroller: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("replicationcontroller: informers are required")
	}
	rcs := client.NewResource(cfg.Client, client.ReplicationControllers)
	// An informer of its own type, so that it sits in the factory beside
	// the typed ReplicationController informer without being confused
	// with it.
	inf, err := informers.For(cfg.Informers, client.ReplicationControllers.GroupVersionResource, func(namespace string) cache.ListerWatcher[*appsv1.ReplicaSet] {
		return listerWatcher{rcs: rcs.Namespace(namespace)}
	})
	if err != nil {
		return nil, fmt.Errorf("replicationcontroller: %w", err)
	}
	var rec replicaset.EventRecorder
	if cfg.Recorder != nil {
		rec = recorder{cfg.Recorder}
	}
	rs, err := replicaset.New(replicaset.Config{
		Client:        cfg.Client,
		Informers:     cfg.Informers,
		Recorder:      rec,
		Clock:         cfg.Clock,
		Logger:        cfg.Logger,
		Metrics:       cfg.Metrics,
		BurstReplicas: cfg.BurstReplicas,
		NewQueue:      cfg.NewQueue,
		Source: &replicaset.Source{
			Name:      Name,
			QueueName: "replicationmanager",
			Kind:      rcKind,
			Informer:  inf,
			Status:    statusWriter{rcs: rcs},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("replicationcontroller: %w", err)
	}
	return &Controller{rs: rs}, nil
}

// Run waits for the caches to sync, runs workers workers until ctx ends,
// and returns once they have exited. It returns an error if ctx ends
// before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.rs.Run(ctx, workers)
}

// statusWriter reads and writes ReplicationControllers for the ReplicaSet
// logic, converting both ways.
type statusWriter struct {
	rcs *client.ResourceClient[*corev1.ReplicationController]
}

func (w statusWriter) GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := w.rcs.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (w statusWriter) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := w.rcs.Namespace(rs.Namespace).UpdateStatus(ctx, toReplicationController(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

// recorder records the ReplicaSet logic's Events on the
// ReplicationControllers they are about.
type recorder struct{ EventRecorder }

func (r recorder) Event(obj record.Object, eventType, reason, message string) {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		obj = toReplicationController(rs)
	}
	r.EventRecorder.Event(obj, eventType, reason, message)
}

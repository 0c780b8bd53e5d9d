package podgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
)

// Name is the controller's name in logs.
const Name = "pod-garbage-collector"

// Defaults of Config, as kube-controller-manager has them.
const (
	// DefaultTerminatedPodThreshold is --terminated-pod-gc-threshold.
	DefaultTerminatedPodThreshold = 12500
	// DefaultPeriod is how often a pass runs.
	DefaultPeriod = 20 * time.Second
	// DefaultQuarantine is how long a node must be missing before its pods
	// are orphans.
	DefaultQuarantine = 40 * time.Second
)

// Config configures New.
type Config struct {
	// Client deletes pods and reads nodes. Required.
	Client *client.Client
	// Informers provides the pod and node informers. Required. The
	// controller does not start it.
	Informers *informers.Factory
	// TerminatedPodThreshold is how many terminated pods are kept. Zero
	// means DefaultTerminatedPodThreshold; negative keeps them all.
	TerminatedPodThreshold int
	// Period is the time between passes. Defaults to DefaultPeriod; must
	// not be negative.
	Period time.Duration
	// Quarantine is how long a node must be missing from the cache before
	// it is checked past it. Defaults to DefaultQuarantine; must not be
	// negative.
	Quarantine time.Duration
	// Clock paces the passes and the quarantine. Defaults to the real
	// clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Controller is the pod garbage collector. Run it once.
type Controller struct {
	podInformer  *cache.SharedIndexInformer[*corev1.Pod]
	nodeInformer *cache.SharedIndexInformer[*corev1.Node]
	collector    *collector
	clock        clock.WithTicker
	period       time.Duration
	logger       *slog.Logger
}

// New builds the collector; it starts nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("podgc: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("podgc: informers are required")
	case cfg.Period < 0:
		return nil, errors.New("podgc: period must not be negative")
	case cfg.Quarantine < 0:
		return nil, errors.New("podgc: quarantine must not be negative")
	}
	if cfg.TerminatedPodThreshold == 0 {
		cfg.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Quarantine == 0 {
		cfg.Quarantine = DefaultQuarantine
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("podgc: %w", err)
	}
	nodeInformer, err := cfg.Informers.Nodes()
	if err != nil {
		return nil, fmt.Errorf("podgc: %w", err)
	}
	return &Controller{
		podInformer:  podInformer,
		nodeInformer: nodeInformer,
		collector: &collector{
			podLister:    podInformer.Lister(),
			nodeLister:   nodeInformer.Lister(),
			api:          clientAPI{pods: client.NewResource(cfg.Client, client.Pods), nodes: client.NewResource(cfg.Client, client.Nodes)},
			clock:        cfg.Clock,
			threshold:    cfg.TerminatedPodThreshold,
			quarantine:   cfg.Quarantine,
			missingSince: map[string]time.Time{},
		},
		clock:  cfg.Clock,
		period: cfg.Period,
		logger: cfg.Logger.With("controller", Name),
	}, nil
}

// Run waits for the pod and node caches to sync, then runs a pass at once
// and every Period until ctx ends. It returns once the pass in flight has
// finished; workers is ignored (passes run one at a time). It returns an
// error if ctx ends before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx, c.podInformer.HasSynced, c.nodeInformer.HasSynced) {
		return fmt.Errorf("podgc: caches did not sync: %w", context.Cause(ctx))
	}
	ctx = controller.WithLogger(ctx, c.logger)
	ticker := c.clock.NewTicker(c.period)
	defer ticker.Stop()
	for {
		c.collector.gc(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// clientAPI adapts the typed clients to podAPI.
type clientAPI struct {
	pods  *client.ResourceClient[*corev1.Pod]
	nodes *client.ResourceClient[*corev1.Node]
}

func (a clientAPI) PatchPodStatus(ctx context.Context, namespace, name string, data []byte) error {
	_, err := a.pods.Namespace(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	return err
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.pods.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
}

func (a clientAPI) NodeExists(ctx context.Context, name string) (bool, error) {
	_, err := a.nodes.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

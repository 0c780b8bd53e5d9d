package nodesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the simulator's name in logs and metrics.
const Name = "node-simulator"

// Defaults of Config.
const (
	DefaultNodes             = 3
	DefaultNamePrefix        = "kplane-node-"
	DefaultStartupDelay      = 100 * time.Millisecond
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultLeaseDuration     = 40 * time.Second
	// DefaultMaxPods is the pods capacity of a node, as kubelet's default.
	DefaultMaxPods = 110
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

// Config configures New.
type Config struct {
	// Nodes is how many nodes to simulate. Defaults to DefaultNodes; must
	// not be negative.
	Nodes int
	// NamePrefix starts every node name; the node's index follows.
	// Defaults to DefaultNamePrefix.
	NamePrefix string
	// Client talks to the API server. Required.
	Client *client.Client
	// Informers provides the pod and node informers. Required. The
	// simulator does not start it.
	Informers *informers.Factory
	// Clock paces heartbeats, startup, termination and completion.
	// Defaults to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// StartupDelay is how long a bound pod's containers take to start.
	// Defaults to DefaultStartupDelay; a negative value means none.
	StartupDelay time.Duration
	// TerminationDelay is how long containers take to stop, at most the
	// pod's grace period. Zero, the default, stops them at once.
	TerminationDelay time.Duration
	// RunTime, when positive, is how long the containers of a pod with
	// restartPolicy Never or OnFailure and none of the run annotations
	// (CompleteAfterAnnotation, ExitCodeAnnotation, FailTimesAnnotation)
	// run before they exit 0 and the pod is Succeeded, so that Jobs finish
	// as on a cluster. Zero, the default, runs such pods until deleted.
	RunTime time.Duration
	// NoScheduling leaves pods without spec.nodeName to another scheduler
	// (kube-scheduler, say): the simulator then only runs the pods bound
	// to its nodes. False, the default, schedules them as described in
	// the package documentation.
	NoScheduling bool
	// HeartbeatInterval is how often the node Leases are renewed. Defaults
	// to DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// LeaseDuration is the Leases' leaseDurationSeconds. Defaults to
	// DefaultLeaseDuration.
	LeaseDuration time.Duration
	// Capacity of every node. Defaults to 4 CPUs, 16Gi of memory and
	// DefaultMaxPods pods; a missing "pods" entry gets DefaultMaxPods.
	Capacity corev1.ResourceList
	// Labels are added to every node's own (kubernetes.io/hostname, os
	// and arch).
	Labels map[string]string
	// NewQueue builds the controller's work queue, given the controller's
	// name ("nodesim"). Nil keeps the default: a workqueue.RateLimitingQueue
	// of that name, on the real clock, without metrics. A
	// *workqueue.PriorityQueue makes initial-list and resync events wait
	// behind other work. The controller shuts the queue down when Run
	// returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Simulator runs simulated nodes. Run it once.
type Simulator struct {
	cfg         Config
	podInformer *cache.SharedIndexInformer[*corev1.Pod]
	nodeInfo    *cache.SharedIndexInformer[*corev1.Node]
	ctrl        *controller.Controller
	syncer      *syncer
	heartbeat   *heartbeat
	wakeups     *wakeup.Delayer
	logger      *slog.Logger
}

// New builds the simulator and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Simulator, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("nodesim: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("nodesim: informers are required")
	case cfg.Nodes < 0:
		return nil, errors.New("nodesim: nodes must not be negative")
	case cfg.TerminationDelay < 0, cfg.RunTime < 0, cfg.HeartbeatInterval < 0, cfg.LeaseDuration < 0:
		return nil, errors.New("nodesim: delays and intervals must not be negative")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = DefaultNodes
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = DefaultNamePrefix
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.StartupDelay == 0:
		cfg.StartupDelay = DefaultStartupDelay
	case cfg.StartupDelay < 0:
		cfg.StartupDelay = 0
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
	}
	if cfg.Capacity != nil {
		capacity = cfg.Capacity.DeepCopy()
		if _, ok := capacity[corev1.ResourcePods]; !ok {
			capacity[corev1.ResourcePods] = *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI)
		}
	}
	cfg.Capacity = capacity
	cfg.Labels = maps.Clone(cfg.Labels)

	podInformer, err := cfg.Informers.Pods()
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	nodeInformer, err := cfg.Informers.Nodes()
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = defaultQueue
	}
	queue, err := cfg.NewQueue("nodesim")
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	specs := make([]nodeSpec, cfg.Nodes)
	for i := range specs {
		specs[i] = newNodeSpec(cfg, i)
	}
	nodes := newNodeSet(specs)
	api := clientAPI{
		c:      cfg.Client,
		pods:   client.NewResource(cfg.Client, client.Pods),
		nodes:  client.NewResource(cfg.Client, client.Nodes),
		leases: client.NewResource(cfg.Client, client.Leases),
		ns:     client.NewResource(cfg.Client, client.Namespaces),
	}
	s := &syncer{
		podLister:        podInformer.Lister(),
		nodeLister:       nodeInformer.Lister(),
		pods:             api,
		clock:            cfg.Clock,
		nodes:            nodes,
		startupDelay:     cfg.StartupDelay,
		terminationDelay: cfg.TerminationDelay,
		runTime:          cfg.RunTime,
		noScheduling:     cfg.NoScheduling,
		states:           map[string]*podState{},
		assumed:          map[string]string{},
		bound:            map[string]string{},
		load:             map[string]int64{},
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{
			"pods":  podInformer.HasSynced,
			"nodes": nodeInformer.HasSynced,
		},
		Clock:   cfg.Clock,
		Logger:  cfg.Logger,
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	sim := &Simulator{
		cfg:         cfg,
		podInformer: podInformer,
		nodeInfo:    nodeInformer,
		ctrl:        ctrl,
		syncer:      s,
		wakeups:     wakeup.New(cfg.Clock, ctrl.EnqueueKey),
		logger:      cfg.Logger.With("controller", Name),
	}
	s.enqueueAfter = sim.wakeups.After
	sim.heartbeat = &heartbeat{api: api, clock: cfg.Clock, nodes: nodes, interval: cfg.HeartbeatInterval,
		leaseDuration: cfg.LeaseDuration, logger: sim.logger}

	if _, err := podInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { sim.podChanged(pod) },
		UpdateFunc: func(_, pod *corev1.Pod) { sim.podChanged(pod) },
		DeleteFunc: sim.podDeleted,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	if _, err := nodeInformer.AddEventHandler(cache.HandlerFuncs[*corev1.Node]{
		AddFunc:    func(node *corev1.Node, _ bool) { sim.nodeChanged(node) },
		UpdateFunc: func(_, node *corev1.Node) { sim.nodeChanged(node) },
		DeleteFunc: sim.nodeDeleted,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	return sim, nil
}

// NodeNames returns the names of the simulated nodes, sorted. Safe for
// concurrent use; the caller owns the slice.
func (sim *Simulator) NodeNames() []string {
	return sim.syncer.nodes.names()
}

// Run registers the nodes, renews their Leases, and schedules, starts and
// stops pods with workers workers, or one per simulated node when there
// are more nodes (up to MaxWorkers), until ctx ends: each node of a real
// cluster has its own kubelet writing its pods' statuses, so the nodes do
// not queue behind a fixed pool. It returns once every goroutine it
// started has exited. It returns an error if ctx ends before
// the pod and node caches sync.
func (sim *Simulator) Run(ctx context.Context, workers int) error {
	defer sim.wakeups.Stop()
	// Deferred in this order so that the heartbeat is cancelled before it
	// is waited for, on every way out.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	registered, ticker := sim.heartbeat.start(ctx)
	wg.Go(func() { sim.heartbeat.run(ctx, ticker) })
	// Schedule nothing before the nodes registered are in the cache, or
	// the first pods would all crowd onto the nodes seen first. Wait on
	// the real clock, so that the cache-sync poll of the worker loop,
	// which runs on the injected clock, finds the caches synced.
	nodesVisible := func() bool {
		for _, name := range registered {
			n, err := sim.syncer.nodeLister.Get(name)
			if err != nil || nodeCondition(n, corev1.NodeReady) == nil {
				return false
			}
		}
		return true
	}
	if !cache.WaitForCacheSync(ctx, sim.podInformer.HasSynced, sim.nodeInfo.HasSynced, nodesVisible) {
		return fmt.Errorf("nodesim: caches did not sync: %w", context.Cause(ctx))
	}
	return sim.ctrl.Run(ctx, max(workers, min(sim.syncer.nodes.len(), MaxWorkers)))
}

// MaxWorkers is the most workers Run adds to match the node count.
const MaxWorkers = 64

// podChanged enqueues a pod the simulator may have to act on: unbound, or
// bound to one of its nodes.
func (sim *Simulator) podChanged(pod *corev1.Pod) {
	if sim.syncer.observe(pod) {
		sim.retryUnschedulable()
	}
	if pod.Spec.NodeName == "" && !sim.cfg.NoScheduling || sim.syncer.nodes.get(pod.Spec.NodeName) != nil {
		sim.ctrl.Enqueue(pod)
	}
}

func (sim *Simulator) podDeleted(obj any) {
	key := ""
	if pod, err := cache.Unwrap[*corev1.Pod](obj); err == nil {
		key, _ = cache.ObjectKey(pod)
	} else if t, ok := obj.(cache.DeletedFinalStateUnknown[*corev1.Pod]); ok {
		key = t.Key
	}
	if key == "" {
		return
	}
	if sim.syncer.unobserve(key) {
		sim.retryUnschedulable()
	}
	sim.wakeups.Forget(key)
	sim.ctrl.EnqueueKey(key)
}

// nodeChanged gives the pods waiting for a node another try when one of
// the simulated nodes changes; a pod leaving a node does the same.
func (sim *Simulator) nodeChanged(node *corev1.Node) {
	if sim.syncer.nodes.get(node.Name) == nil {
		return
	}
	sim.retryUnschedulable()
}

// nodeDeleted notices a simulated node's Node object deleted (kubectl
// delete node): the node registers itself again on its next heartbeat.
func (sim *Simulator) nodeDeleted(obj any) {
	node, err := cache.Unwrap[*corev1.Node](obj)
	if err != nil || sim.syncer.nodes.get(node.Name) == nil {
		return
	}
	sim.heartbeat.lost(node.Name)
}

// retryUnschedulable enqueues the pods found to fit no node, after a
// change that may make room for them.
func (sim *Simulator) retryUnschedulable() {
	if sim.cfg.NoScheduling {
		return
	}
	pods, err := sim.syncer.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && unschedulable(p) {
			sim.ctrl.Enqueue(p)
		}
	}
}

// unschedulable reports whether the pod was found to fit no node.
func unschedulable(p *corev1.Pod) bool {
	c := podCondition(&p.Status, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionFalse
}

// defaultQueue is the work queue used when Config.NewQueue is nil.
func defaultQueue(name string) (workqueue.RateLimitingInterface[string], error) {
	return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
}

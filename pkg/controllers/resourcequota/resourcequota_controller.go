package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "resourcequota-controller"

// DefaultResyncPeriod is how often every quota is recalculated, whatever
// changed: kube-controller-manager's --resource-quota-sync-period.
const DefaultResyncPeriod = 5 * time.Minute

// Config configures New.
type Config struct {
	// Client writes quota status and counts the resources no informer
	// holds. Required.
	Client *client.Client
	// Informers provides the quota informer and those of the resources
	// counted from a cache. Required. The controller does not start it.
	Informers *informers.Factory
	// Mapper finds the resource a count/<resource>.<group> names, for the
	// resources counted through the API. Defaults to a client.RESTMapper
	// over Client's discovery.
	Mapper apimeta.RESTMapper
	// ResyncPeriod is how often every quota is recalculated. Defaults to
	// DefaultResyncPeriod; must not be negative.
	ResyncPeriod time.Duration
	// Clock paces the resync and the queue's retries, and decides when a
	// pod stuck terminating stops counting. Defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the controller's work queue, given the name
	// "resourcequota". Nil keeps the default: a workqueue.RateLimitingQueue
	// of that name on Clock, without metrics. The controller shuts the
	// queue down when Run returns.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the resource quota controller. Run it once.
type Controller struct {
	synced []func() bool
	ctrl   *controller.Controller
	syncer *syncer
	clock  clock.WithTicker
	resync time.Duration
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("resourcequota: client is required")
	case cfg.Informers == nil:
		return nil, errors.New("resourcequota: informers are required")
	case cfg.ResyncPeriod < 0:
		return nil, errors.New("resourcequota: resync period must not be negative")
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Mapper == nil {
		m, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(cfg.Client), Clock: cfg.Clock})
		if err != nil {
			return nil, fmt.Errorf("resourcequota: %w", err)
		}
		cfg.Mapper = m
	}
	if cfg.NewQueue == nil {
		clk := cfg.Clock
		cfg.NewQueue = func(name string) (workqueue.RateLimitingInterface[string], error) {
			return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name, Clock: clk}})
		}
	}
	f := cfg.Informers
	quotaInf, err := f.ResourceQuotas()
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	podInf, err := f.Pods()
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	svcInf, err := f.Services()
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	pvcInf, err := f.PersistentVolumeClaims()
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	queue, err := cfg.NewQueue("resourcequota")
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	s := &syncer{
		quotaLister:   quotaInf.Lister(),
		podLister:     podInf.Lister(),
		serviceLister: svcInf.Lister(),
		pvcLister:     pvcInf.Lister(),
		counts:        map[schema.GroupResource]countFunc{},
		others:        apiCounter{mapper: cfg.Mapper, metadata: client.NewMetadata(cfg.Client)},
		quotas:        quotaClient{client.NewResource(cfg.Client, client.ResourceQuotas)},
		clock:         cfg.Clock,
	}
	c := &Controller{syncer: s, clock: cfg.Clock, resync: cfg.ResyncPeriod}
	cacheSyncs := map[string]controller.InformerSynced{
		"resourcequotas":         quotaInf.HasSynced,
		"pods":                   podInf.HasSynced,
		"services":               svcInf.HasSynced,
		"persistentvolumeclaims": pvcInf.HasSynced,
	}
	// The resources counted from a cache: every change of one recalculates
	// the quotas of its namespace.
	counted := []struct {
		gr  schema.GroupResource
		add func() (countFunc, func() bool, error)
	}{
		{schema.GroupResource{Resource: "configmaps"}, typed(f.ConfigMaps, c)},
		{schema.GroupResource{Resource: "secrets"}, typed(f.Secrets, c)},
		{schema.GroupResource{Resource: "replicationcontrollers"}, typed(f.ReplicationControllers, c)},
		{schema.GroupResource{Resource: "resourcequotas"}, func() (countFunc, func() bool, error) {
			return listerCount(quotaInf.Lister()), quotaInf.HasSynced, nil
		}},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, typed(f.Deployments, c)},
		{schema.GroupResource{Group: "apps", Resource: "replicasets"}, typed(f.ReplicaSets, c)},
		{schema.GroupResource{Group: "apps", Resource: "statefulsets"}, typed(f.StatefulSets, c)},
		{schema.GroupResource{Group: "apps", Resource: "daemonsets"}, typed(f.DaemonSets, c)},
		{schema.GroupResource{Group: "batch", Resource: "jobs"}, typed(f.Jobs, c)},
		{schema.GroupResource{Group: "batch", Resource: "cronjobs"}, typed(f.CronJobs, c)},
	}
	for _, x := range counted {
		count, synced, err := x.add()
		if err != nil {
			return nil, fmt.Errorf("resourcequota: %w", err)
		}
		s.counts[x.gr] = count
		cacheSyncs[x.gr.String()] = synced
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  cacheSyncs,
		Clock:       cfg.Clock,
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	c.ctrl = ctrl
	for _, f := range cacheSyncs {
		c.synced = append(c.synced, f)
	}

	if _, err := quotaInf.AddEventHandler(cache.HandlerFuncs[*corev1.ResourceQuota]{
		// Every quota of the namespace counts a new one under
		// resourcequotas; the new one is among them.
		AddFunc: func(q *corev1.ResourceQuota, _ bool) { c.enqueueNamespace(q.Namespace) },
		UpdateFunc: func(old, cur *corev1.ResourceQuota) {
			// Its own status writes come back here: only a change of what
			// is counted, or a status that does not say it, needs a sync.
			if !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) || !equalLists(cur.Spec.Hard, cur.Status.Hard) {
				ctrl.Enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if q, err := cache.Unwrap[*corev1.ResourceQuota](obj); err == nil {
				c.enqueueNamespace(q.Namespace)
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	if _, err := podInf.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) { c.enqueueNamespace(p.Namespace) },
		UpdateFunc: func(old, cur *corev1.Pod) {
			if podUsageMayDiffer(old, cur) {
				c.enqueueNamespace(cur.Namespace)
			}
		},
		DeleteFunc: c.enqueueNamespaceOf,
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	if err := addNamespaceHandler(svcInf, c); err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	if err := addNamespaceHandler(pvcInf, c); err != nil {
		return nil, fmt.Errorf("resourcequota: %w", err)
	}
	return c, nil
}

// typed returns the setup of a resource counted from its shared informer.
func typed[T cache.Object](get func() (*cache.SharedIndexInformer[T], error), c *Controller) func() (countFunc, func() bool, error) {
	return func() (countFunc, func() bool, error) {
		inf, err := get()
		if err != nil {
			return nil, nil, err
		}
		if err := addNamespaceHandler(inf, c); err != nil {
			return nil, nil, err
		}
		return listerCount(inf.Lister()), inf.HasSynced, nil
	}
}

// addNamespaceHandler recalculates the quotas of a namespace on every
// add, update and delete of one of inf's objects in it.
func addNamespaceHandler[T cache.Object](inf *cache.SharedIndexInformer[T], c *Controller) error {
	_, err := inf.AddEventHandler(cache.HandlerFuncs[T]{
		AddFunc: func(obj T, _ bool) { c.enqueueNamespace(obj.GetNamespace()) },
		UpdateFunc: func(old, cur T) {
			if old.GetResourceVersion() != cur.GetResourceVersion() {
				c.enqueueNamespace(cur.GetNamespace())
			}
		},
		DeleteFunc: func(obj any) {
			if o, err := cache.Unwrap[T](obj); err == nil {
				c.enqueueNamespace(o.GetNamespace())
			}
		},
	}, cache.HandlerOptions{})
	return err
}

// podUsageMayDiffer reports whether a pod update may change what it is
// charged: its phase, deletion, resources or scope-deciding fields.
func podUsageMayDiffer(old, cur *corev1.Pod) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return false
	}
	if old.Status.Phase != cur.Status.Phase || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		old.Spec.PriorityClassName != cur.Spec.PriorityClassName ||
		!apiequality.Semantic.DeepEqual(old.Spec.ActiveDeadlineSeconds, cur.Spec.ActiveDeadlineSeconds) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Resources, cur.Spec.Resources) {
		return true
	}
	if len(old.Spec.Containers) != len(cur.Spec.Containers) {
		return true
	}
	for i := range cur.Spec.Containers {
		if !apiequality.Semantic.DeepEqual(old.Spec.Containers[i].Resources, cur.Spec.Containers[i].Resources) {
			return true
		}
	}
	return false
}

// enqueueNamespace enqueues every quota of namespace.
func (c *Controller) enqueueNamespace(namespace string) {
	qs, err := c.syncer.quotaLister.Namespace(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		c.ctrl.Enqueue(q)
	}
}

func (c *Controller) enqueueNamespaceOf(obj any) {
	if p, err := cache.Unwrap[*corev1.Pod](obj); err == nil {
		c.enqueueNamespace(p.Namespace)
	}
}

// Run waits for the caches to sync, runs workers workers and the full
// resync until ctx ends, and returns once they have exited. It returns an
// error if ctx ends before the caches sync.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx, c.synced...) {
		return fmt.Errorf("resourcequota: caches did not sync: %w", context.Cause(ctx))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { c.resyncLoop(ctx) })
	return c.ctrl.Run(ctx, workers)
}

// resyncLoop enqueues every quota each resync period until ctx ends.
func (c *Controller) resyncLoop(ctx context.Context) {
	ticker := c.clock.NewTicker(c.resync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		qs, err := c.syncer.quotaLister.List(labels.Everything())
		if err != nil {
			continue
		}
		for _, q := range qs {
			c.ctrl.Enqueue(q)
		}
	}
}

// quotaClient adapts the typed client to quotaWriter.
type quotaClient struct {
	quotas *client.ResourceClient[*corev1.ResourceQuota]
}

func (q quotaClient) UpdateStatus(ctx context.Context, rq *corev1.ResourceQuota) error {
	_, err := q.quotas.Namespace(rq.Namespace).UpdateStatus(ctx, rq, metav1.UpdateOptions{})
	return err
}

// apiCounter counts a resource's objects with a metadata list.
type apiCounter struct {
	mapper   apimeta.RESTMapper
	metadata *client.MetadataClient
}

func (a apiCounter) Count(ctx context.Context, gr schema.GroupResource, namespace string) (int64, bool, error) {
	gvr, err := a.mapper.ResourceFor(gr.WithVersion(""))
	if errNoMatch(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var n int64
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.metadata.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return 0, false, err
		}
		n += int64(len(list.Items))
		if list.Continue == "" {
			return n, true, nil
		}
		opts.Continue = list.Continue
	}
}

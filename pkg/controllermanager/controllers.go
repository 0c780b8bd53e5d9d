package controllermanager

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kplane/kplane/pkg/controllers/clusterroleaggregation"
	"github.com/kplane/kplane/pkg/controllers/cronjob"
	"github.com/kplane/kplane/pkg/controllers/daemonset"
	"github.com/kplane/kplane/pkg/controllers/deployment"
	"github.com/kplane/kplane/pkg/controllers/disruption"
	"github.com/kplane/kplane/pkg/controllers/endpoints"
	"github.com/kplane/kplane/pkg/controllers/endpointslice"
	"github.com/kplane/kplane/pkg/controllers/garbagecollector"
	"github.com/kplane/kplane/pkg/controllers/job"
	"github.com/kplane/kplane/pkg/controllers/namespace"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/controllers/podgc"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/controllers/replicationcontroller"
	"github.com/kplane/kplane/pkg/controllers/resourcequota"
	"github.com/kplane/kplane/pkg/controllers/rootcacertpublisher"
	"github.com/kplane/kplane/pkg/controllers/serviceaccount"
	"github.com/kplane/kplane/pkg/controllers/statefulset"
	"github.com/kplane/kplane/pkg/controllers/ttlafterfinished"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Names of the controllers, as Config.Controllers takes them.
const (
	DeploymentController       = "deployment"
	ReplicaSetController       = "replicaset"
	GarbageCollectorController = "garbagecollector"
	// StatefulSetController runs the pods, PVCs and revisions of
	// StatefulSets.
	StatefulSetController = "statefulset"
	// NamespaceController empties namespaces being deleted and then
	// finalizes them, so that they go.
	NamespaceController = "namespace"
	// ClusterRoleAggregationController fills in the rules of ClusterRoles
	// with an aggregationRule.
	ClusterRoleAggregationController = "clusterrole-aggregation"
	// PodGCController deletes terminated pods beyond a threshold and the
	// pods of nodes that are gone.
	PodGCController = "podgc"
	// DisruptionController keeps the status of PodDisruptionBudgets.
	DisruptionController = "disruption"
	// ResourceQuotaController keeps the status (usage) of ResourceQuotas.
	ResourceQuotaController = "resourcequota"
	// ReplicationControllerController runs ReplicationControllers with the
	// ReplicaSet logic.
	ReplicationControllerController = "replicationcontroller"
	// NodeSimulator runs simulated nodes (Config.Nodes of them) that
	// schedule and run pods. It is off by default, as it stands in for
	// kubelets: `kplane up` turns it on.
	NodeSimulator = "nodesim"
	// EndpointSliceController keeps the EndpointSlices of Services with a
	// selector.
	EndpointSliceController = "endpointslice"
	// EndpointsController keeps the (legacy) Endpoints of Services with a
	// selector; "endpoint", as kube-controller-manager names it.
	EndpointsController = "endpoint"
	// ServiceAccountController keeps a default ServiceAccount in every
	// namespace.
	ServiceAccountController = "serviceaccount"
	// RootCACertPublisher keeps the kube-root-ca.crt ConfigMap in every
	// namespace. It is on by default but only starts when Config.RootCA
	// is set.
	RootCACertPublisher = "root-ca-cert-publisher"
	// DaemonSetController runs one pod of each DaemonSet on every
	// eligible node.
	DaemonSetController = "daemonset"
	// JobController runs Jobs' pods to completion.
	JobController = "job"
	// CronJobController starts Jobs on CronJobs' schedules.
	CronJobController = "cronjob"
	// TTLAfterFinishedController deletes finished Jobs after their
	// ttlSecondsAfterFinished.
	TTLAfterFinishedController = "ttl-after-finished"
)

// runner is a built controller: Run blocks until ctx ends.
type runner interface {
	Run(ctx context.Context, workers int) error
}

// deps is what a controller is built from.
type deps struct {
	cfg Config
	// metrics is the controllers' reconcile metrics sink.
	metrics controllerMetrics
	// newQueue builds a controller's work queue (see queueFactory).
	newQueue func(name string) (workqueue.RateLimitingInterface[string], error)
	// queueMetrics receives the work queues' metrics.
	queueMetrics workqueue.MetricsProvider
}

// queueFactory returns the constructor of the controllers' work queues:
// priority queues when ControllerPriorityQueue is on, rate-limiting FIFO
// queues when it is off; named after their controller, on the manager's
// clock, reporting to metrics.
func queueFactory(cfg Config, metrics workqueue.MetricsProvider) func(name string) (workqueue.RateLimitingInterface[string], error) {
	priority := cfg.Gates.Enabled(ControllerPriorityQueue)
	return func(name string) (workqueue.RateLimitingInterface[string], error) {
		qc := workqueue.Config{Name: name, Metrics: metrics, Clock: cfg.Clock}
		if priority {
			return workqueue.NewPriority(workqueue.PriorityConfig[string]{Config: qc})
		}
		return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: qc})
	}
}

// descriptor describes one controller the manager knows.
type descriptor struct {
	name      string
	enabledBy bool // on under "*"
	// serviceAccount is the ServiceAccount in kube-system the controller
	// runs as with Config.UseServiceAccountCredentials, named as
	// kube-controller-manager names it (the subject of the bootstrap
	// system:controller:<serviceAccount> binding); "" keeps the manager's
	// client (the node simulator, which has its own NodeClient).
	serviceAccount string
	build          func(d deps) (runner, error)
}

// knownControllers lists every controller in start order.
func knownControllers() []descriptor {
	return []descriptor{
		{name: DeploymentController, enabledBy: true, serviceAccount: "deployment-controller", build: func(d deps) (runner, error) {
			return deployment.New(deployment.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: ReplicaSetController, enabledBy: true, serviceAccount: "replicaset-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("replicaset-controller")
			if err != nil {
				return nil, err
			}
			r, err := replicaset.New(replicaset.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock, FeatureGates: d.cfg.Gates,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: StatefulSetController, enabledBy: true, serviceAccount: "statefulset-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("statefulset-controller")
			if err != nil {
				return nil, err
			}
			r, err := statefulset.New(statefulset.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock, FeatureGates: d.cfg.Gates,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: GarbageCollectorController, enabledBy: true, serviceAccount: "generic-garbage-collector", build: func(d deps) (runner, error) {
			return garbagecollector.New(garbagecollector.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock, Logger: d.cfg.Logger,
				QueueMetrics: d.queueMetrics,
			})
		}},
		{name: NamespaceController, enabledBy: true, serviceAccount: "namespace-controller", build: func(d deps) (runner, error) {
			return namespace.New(namespace.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics,
			})
		}},
		{name: ClusterRoleAggregationController, enabledBy: true, serviceAccount: "clusterrole-aggregation-controller", build: func(d deps) (runner, error) {
			return clusterroleaggregation.New(clusterroleaggregation.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: PodGCController, enabledBy: true, serviceAccount: "pod-garbage-collector", build: func(d deps) (runner, error) {
			return podgc.New(podgc.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock, Logger: d.cfg.Logger,
			})
		}},
		{name: DisruptionController, enabledBy: true, serviceAccount: "disruption-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("controllermanager")
			if err != nil {
				return nil, err
			}
			r, err := disruption.New(disruption.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: ResourceQuotaController, enabledBy: true, serviceAccount: "resourcequota-controller", build: func(d deps) (runner, error) {
			return resourcequota.New(resourcequota.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: ReplicationControllerController, enabledBy: true, serviceAccount: "replication-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("replication-controller")
			if err != nil {
				return nil, err
			}
			r, err := replicationcontroller.New(replicationcontroller.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: EndpointSliceController, enabledBy: true, serviceAccount: "endpointslice-controller", build: func(d deps) (runner, error) {
			return endpointslice.New(endpointslice.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: EndpointsController, enabledBy: true, serviceAccount: "endpoint-controller", build: func(d deps) (runner, error) {
			return endpoints.New(endpoints.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: ServiceAccountController, enabledBy: true, serviceAccount: "service-account-controller", build: func(d deps) (runner, error) {
			return serviceaccount.New(serviceaccount.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: RootCACertPublisher, enabledBy: true, serviceAccount: "root-ca-cert-publisher", build: func(d deps) (runner, error) {
			if len(d.cfg.RootCA) == 0 {
				return nil, nil
			}
			return rootcacertpublisher.New(rootcacertpublisher.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock, RootCA: d.cfg.RootCA,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: DaemonSetController, enabledBy: true, serviceAccount: "daemon-set-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("daemonset-controller")
			if err != nil {
				return nil, err
			}
			r, err := daemonset.New(daemonset.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: JobController, enabledBy: true, serviceAccount: "job-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("job-controller")
			if err != nil {
				return nil, err
			}
			r, err := job.New(job.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: CronJobController, enabledBy: true, serviceAccount: "cronjob-controller", build: func(d deps) (runner, error) {
			rec, err := d.recorder("cronjob-controller")
			if err != nil {
				return nil, err
			}
			r, err := cronjob.New(cronjob.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue, Recorder: rec,
			})
			return withRecorder(r, rec, err)
		}},
		{name: TTLAfterFinishedController, enabledBy: true, serviceAccount: "ttl-after-finished-controller", build: func(d deps) (runner, error) {
			return ttlafterfinished.New(ttlafterfinished.Config{
				Informers: d.cfg.informers, Client: d.cfg.Client, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
		{name: NodeSimulator, enabledBy: false, build: func(d deps) (runner, error) {
			c := d.cfg.NodeClient
			if c == nil {
				c = d.cfg.Client
			}
			return nodesim.New(nodesim.Config{
				Nodes: d.cfg.Nodes, RunTime: d.cfg.NodeRunTime, NoScheduling: d.cfg.NoNodeScheduling, Informers: d.cfg.informers, Client: c, Clock: d.cfg.Clock,
				Logger: d.cfg.Logger, Metrics: d.metrics, NewQueue: d.newQueue,
			})
		}},
	}
}

// KnownControllers returns the names Config.Controllers accepts, sorted.
func KnownControllers() []string {
	var names []string
	for _, d := range knownControllers() {
		names = append(names, d.name)
	}
	slices.Sort(names)
	return names
}

// DefaultControllers returns the controllers "*" enables, sorted.
func DefaultControllers() []string {
	var names []string
	for _, d := range knownControllers() {
		if d.enabledBy {
			names = append(names, d.name)
		}
	}
	slices.Sort(names)
	return names
}

// enabledControllers resolves a --controllers list: a controller is on if
// it is named, or "*" is given and it is on by default, unless "-name"
// names it; when both "name" and "-name" appear, the first one wins, as in
// kube-controller-manager. An empty list means "*". Unknown names are an
// error.
func enabledControllers(list []string) ([]descriptor, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	known := knownControllers()
	isKnown := func(name string) bool {
		return slices.ContainsFunc(known, func(d descriptor) bool { return d.name == name })
	}
	star := false
	on, off := map[string]bool{}, map[string]bool{}
	for _, item := range list {
		item = strings.TrimSpace(item)
		switch {
		case item == "*":
			star = true
		case strings.HasPrefix(item, "-"):
			name := item[1:]
			if !isKnown(name) {
				return nil, fmt.Errorf("controllermanager: unknown controller %q in %q; known controllers: %s", name, item, strings.Join(KnownControllers(), ", "))
			}
			if !on[name] {
				off[name] = true
			}
		case item == "":
			return nil, fmt.Errorf("controllermanager: empty controller name in %q", strings.Join(list, ","))
		default:
			if !isKnown(item) {
				return nil, fmt.Errorf("controllermanager: unknown controller %q; known controllers: %s", item, strings.Join(KnownControllers(), ", "))
			}
			if !off[item] {
				on[item] = true
			}
		}
	}
	var out []descriptor
	for _, d := range known {
		if off[d.name] {
			continue
		}
		if on[d.name] || (star && d.enabledBy) {
			out = append(out, d)
		}
	}
	return out, nil
}

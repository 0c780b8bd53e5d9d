package resourcequota

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fakeWriter struct {
	written []*corev1.ResourceQuota
}

func (f *fakeWriter) UpdateStatus(_ context.Context, q *corev1.ResourceQuota) error {
	f.written = append(f.written, q)
	return nil
}

// fakeCounter serves the counts of resources no informer holds.
type fakeCounter map[schema.GroupResource]int64

func (f fakeCounter) Count(_ context.Context, gr schema.GroupResource, _ string) (int64, bool, error) {
	n, ok := f[gr]
	return n, ok, nil
}

func indexer[T cache.Object](t *testing.T, objs []T) *cache.Indexer[T] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := x.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

type world struct {
	pods       []*corev1.Pod
	services   []*corev1.Service
	claims     []*corev1.PersistentVolumeClaim
	configMaps []*corev1.ConfigMap
	others     fakeCounter
}

func syncQuota(t *testing.T, q *corev1.ResourceQuota, w world) (*fakeWriter, *syncer) {
	t.Helper()
	fw := &fakeWriter{}
	s := &syncer{
		quotaLister:   cache.NewLister(indexer(t, []*corev1.ResourceQuota{q}), corev1.Resource("resourcequotas")),
		podLister:     cache.NewLister(indexer(t, w.pods), corev1.Resource("pods")),
		serviceLister: cache.NewLister(indexer(t, w.services), corev1.Resource("services")),
		pvcLister:     cache.NewLister(indexer(t, w.claims), corev1.Resource("persistentvolumeclaims")),
		counts: map[schema.GroupResource]countFunc{
			{Resource: "configmaps"}:     listerCount(cache.NewLister(indexer(t, w.configMaps), corev1.Resource("configmaps"))),
			{Resource: "resourcequotas"}: func(string) (int64, error) { return 1, nil },
		},
		others: w.others,
		quotas: fw,
		clock:  clocktesting.NewFakeClock(t0),
	}
	if err := s.sync(t.Context(), q.Namespace+"/"+q.Name); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return fw, s
}

func quota(hard map[string]string, edit ...func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: list(hard)}}
	for _, e := range edit {
		e(q)
	}
	return q
}

func list(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// strs renders a resource list for comparison.
func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(m map[string]string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list(m) }
}

func limits(m map[string]string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = list(m) }
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func TestSyncUsed(t *testing.T) {
	withScopes := func(scopes ...corev1.ResourceQuotaScope) func(*corev1.ResourceQuota) {
		return func(q *corev1.ResourceQuota) { q.Spec.Scopes = scopes }
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) func(*corev1.ResourceQuota) {
		return func(q *corev1.ResourceQuota) {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values,
			}}}
		}
	}
	deadline := func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }
	class := func(name string) podOpt { return func(p *corev1.Pod) { p.Spec.PriorityClassName = name } }
	stuck := func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-time.Minute)}
		p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	}
	stopping := func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
		p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	}
	svc := func(name string, typ corev1.ServiceType, ports int, edit ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
		for i := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
		}
		for _, e := range edit {
			e(s)
		}
		return s
	}
	claim := func(name, class, size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if class != "" {
			c.Spec.StorageClassName = &class
		}
		c.Spec.Resources.Requests = list(map[string]string{"storage": size})
		return c
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		world world
		want  map[string]string
	}{{
		name:  "pods counts the pods that have not finished",
		quota: quota(map[string]string{"pods": "10", "count/pods": "10"}),
		world: world{pods: []*corev1.Pod{pod("a"), pod("b", phase(corev1.PodPending)), pod("done", phase(corev1.PodSucceeded)), pod("failed", phase(corev1.PodFailed))}},
		want:  map[string]string{"pods": "2", "count/pods": "2"},
	}, {
		name:  "pods stuck terminating past their grace period are not charged",
		quota: quota(map[string]string{"pods": "10"}),
		world: world{pods: []*corev1.Pod{pod("stuck", stuck), pod("stopping", stopping)}},
		want:  map[string]string{"pods": "1"},
	}, {
		name:  "requests and limits sum over pods, cpu and memory meaning requests",
		quota: quota(map[string]string{"requests.cpu": "10", "cpu": "10", "requests.memory": "10Gi", "memory": "10Gi", "limits.cpu": "10", "limits.memory": "10Gi"}),
		world: world{pods: []*corev1.Pod{
			pod("a", requests(map[string]string{"cpu": "250m", "memory": "1Gi"}), limits(map[string]string{"cpu": "1", "memory": "2Gi"})),
			pod("b", requests(map[string]string{"cpu": "500m"})),
			// A limit alone counts as the request.
			pod("c", limits(map[string]string{"memory": "512Mi"})),
			pod("done", requests(map[string]string{"cpu": "8"}), phase(corev1.PodSucceeded)),
		}},
		want: map[string]string{
			"requests.cpu": "750m", "cpu": "750m", "requests.memory": "1536Mi", "memory": "1536Mi",
			"limits.cpu": "1", "limits.memory": "2560Mi",
		},
	}, {
		name:  "a resource nothing uses is 0",
		quota: quota(map[string]string{"requests.cpu": "1", "pods": "1"}),
		want:  map[string]string{"requests.cpu": "0", "pods": "0"},
	}, {
		name:  "init containers count by their peak",
		quota: quota(map[string]string{"requests.cpu": "10"}),
		world: world{pods: []*corev1.Pod{pod("a", requests(map[string]string{"cpu": "1"}), func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: list(map[string]string{"cpu": "3"})}}}
		})}},
		want: map[string]string{"requests.cpu": "3"},
	}, {
		name:  "extended resources count as requests",
		quota: quota(map[string]string{"requests.example.com/gpu": "4"}),
		world: world{pods: []*corev1.Pod{pod("a", requests(map[string]string{"example.com/gpu": "2"}), limits(map[string]string{"example.com/gpu": "2"}))}},
		want:  map[string]string{"requests.example.com/gpu": "2"},
	}, {
		name:  "Terminating scope counts pods with an active deadline",
		quota: quota(map[string]string{"pods": "10"}, withScopes(corev1.ResourceQuotaScopeTerminating)),
		world: world{pods: []*corev1.Pod{pod("job", deadline), pod("web")}},
		want:  map[string]string{"pods": "1"},
	}, {
		name:  "NotTerminating scope counts pods without an active deadline",
		quota: quota(map[string]string{"pods": "10"}, withScopes(corev1.ResourceQuotaScopeNotTerminating)),
		world: world{pods: []*corev1.Pod{pod("job", deadline), pod("web"), pod("web2")}},
		want:  map[string]string{"pods": "2"},
	}, {
		name:  "BestEffort scope counts pods without cpu or memory requests or limits",
		quota: quota(map[string]string{"pods": "10"}, withScopes(corev1.ResourceQuotaScopeBestEffort)),
		world: world{pods: []*corev1.Pod{pod("be"), pod("burst", requests(map[string]string{"cpu": "1"})), pod("gpu", limits(map[string]string{"example.com/gpu": "1"}))}},
		want:  map[string]string{"pods": "2"},
	}, {
		name:  "NotBestEffort scope counts pods with cpu or memory",
		quota: quota(map[string]string{"pods": "10", "requests.cpu": "10"}, withScopes(corev1.ResourceQuotaScopeNotBestEffort)),
		world: world{pods: []*corev1.Pod{pod("be"), pod("burst", requests(map[string]string{"cpu": "1"}))}},
		want:  map[string]string{"pods": "1", "requests.cpu": "1"},
	}, {
		name:  "PriorityClass In scope counts the pods of the named classes",
		quota: quota(map[string]string{"pods": "10"}, priority(corev1.ScopeSelectorOpIn, "high", "mid")),
		world: world{pods: []*corev1.Pod{pod("h", class("high")), pod("m", class("mid")), pod("l", class("low")), pod("none")}},
		want:  map[string]string{"pods": "2"},
	}, {
		name:  "PriorityClass NotIn scope counts the other pods",
		quota: quota(map[string]string{"pods": "10"}, priority(corev1.ScopeSelectorOpNotIn, "high")),
		world: world{pods: []*corev1.Pod{pod("h", class("high")), pod("l", class("low")), pod("none")}},
		want:  map[string]string{"pods": "2"},
	}, {
		name:  "scopes count no objects but pods",
		quota: quota(map[string]string{"configmaps": "10", "services": "10", "pods": "10"}, withScopes(corev1.ResourceQuotaScopeNotTerminating)),
		world: world{pods: []*corev1.Pod{pod("a")}, configMaps: []*corev1.ConfigMap{cm("a")}, services: []*corev1.Service{svc("a", corev1.ServiceTypeClusterIP, 1)}},
		want:  map[string]string{"configmaps": "0", "services": "0", "pods": "1"},
	}, {
		name:  "services, load balancers and node ports",
		quota: quota(map[string]string{"services": "10", "count/services": "10", "services.loadbalancers": "10", "services.nodeports": "10"}),
		world: world{services: []*corev1.Service{
			svc("cluster", corev1.ServiceTypeClusterIP, 2),
			svc("np", corev1.ServiceTypeNodePort, 2),
			svc("lb", corev1.ServiceTypeLoadBalancer, 3),
			svc("lb-no-nodeports", corev1.ServiceTypeLoadBalancer, 2, func(s *corev1.Service) {
				s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
				s.Spec.Ports[0].NodePort = 30001
			}),
		}},
		want: map[string]string{"services": "4", "count/services": "4", "services.loadbalancers": "2", "services.nodeports": "6"},
	}, {
		name: "claims and storage, in total and per storage class",
		quota: quota(map[string]string{
			"persistentvolumeclaims": "10", "requests.storage": "100Gi",
			"gold.storageclass.storage.k8s.io/requests.storage":       "10Gi",
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "5",
		}),
		world: world{claims: []*corev1.PersistentVolumeClaim{claim("a", "gold", "1Gi"), claim("b", "", "2Gi"), func() *corev1.PersistentVolumeClaim {
			c := claim("grown", "gold", "1Gi")
			c.Status.AllocatedResources = list(map[string]string{"storage": "4Gi"})
			return c
		}()}},
		want: map[string]string{
			"persistentvolumeclaims": "3", "requests.storage": "7Gi",
			"gold.storageclass.storage.k8s.io/requests.storage":       "5Gi",
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "2",
		},
	}, {
		name:  "object counts, legacy and count/ names, from caches and the API",
		quota: quota(map[string]string{"configmaps": "10", "count/configmaps": "10", "resourcequotas": "1", "count/widgets.example.com": "10", "count/deployments.apps": "10"}),
		world: world{configMaps: []*corev1.ConfigMap{cm("a"), cm("b")}, others: fakeCounter{
			{Group: "example.com", Resource: "widgets"}: 3,
			{Group: "apps", Resource: "deployments"}:    1,
		}},
		want: map[string]string{"configmaps": "2", "count/configmaps": "2", "resourcequotas": "1", "count/widgets.example.com": "3", "count/deployments.apps": "1"},
	}, {
		name: "a resource without an evaluator keeps its old value, an unserved count is left out",
		quota: quota(map[string]string{"example.com/thing": "5", "count/gadgets.example.com": "1"}, func(q *corev1.ResourceQuota) {
			q.Status.Used = list(map[string]string{"example.com/thing": "2", "stale": "1"})
		}),
		want: map[string]string{"example.com/thing": "2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := syncQuota(t, tt.quota, tt.world)
			if len(w.written) != 1 {
				t.Fatalf("wrote status %d times, want once", len(w.written))
			}
			got := w.written[0].Status
			if diff := cmp.Diff(tt.want, strs(got.Used)); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(strs(tt.quota.Spec.Hard), strs(got.Hard)); diff != "" {
				t.Errorf("hard does not mirror spec.hard (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncWritesNothingWhenUpToDate(t *testing.T) {
	q := quota(map[string]string{"pods": "2"})
	w, _ := syncQuota(t, q, world{pods: []*corev1.Pod{pod("a")}})
	again, _ := syncQuota(t, w.written[0], world{pods: []*corev1.Pod{pod("a")}})
	if len(again.written) != 0 {
		t.Errorf("rewrote an up-to-date status: %v", strs(again.written[0].Status.Used))
	}
	// A change of spec.hard is mirrored.
	changed := w.written[0].DeepCopy()
	changed.Spec.Hard = list(map[string]string{"pods": "3"})
	third, _ := syncQuota(t, changed, world{pods: []*corev1.Pod{pod("a")}})
	if len(third.written) != 1 || strs(third.written[0].Status.Hard)["pods"] != "3" {
		t.Errorf("new spec.hard not mirrored")
	}
}

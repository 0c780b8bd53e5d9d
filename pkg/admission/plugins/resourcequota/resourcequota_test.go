package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// fakeSource is the shared fake holding resource quotas, and with
// conflictAlways set a store where every status write conflicts.
type fakeSource struct {
	admissiontest.Source
	conflictAlways bool
}

func newSource(quotas ...*corev1.ResourceQuota) *fakeSource {
	s := &fakeSource{}
	for _, q := range quotas {
		s.Add(quotasGVR, q)
	}
	return s
}

func (s *fakeSource) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	if s.conflictAlways {
		return nil, apierrors.NewConflict(gvr.GroupResource(), obj.(*corev1.ResourceQuota).Name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return s.Source.UpdateStatus(ctx, gvr, obj)
}

// used is the stored status.used of quota name in namespace ns.
func (s *fakeSource) used(t testing.TB, name string) map[string]string {
	t.Helper()
	obj, err := s.Fetch(context.Background(), quotasGVR, "ns", name)
	if err != nil {
		t.Fatal(err)
	}
	return strs(obj.(*corev1.ResourceQuota).Status.Used)
}

func list(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// rq is a quota whose status the controller has written: hard, and used.
func rq(name string, hard, used map[string]string, opts ...func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "name"},
		Spec:       corev1.ResourceQuotaSpec{Hard: list(hard)},
		Status:     corev1.ResourceQuotaStatus{Hard: list(hard), Used: list(used)},
	}
	for _, o := range opts {
		o(q)
	}
	return q
}

func scopes(s ...corev1.ResourceQuotaScope) func(*corev1.ResourceQuota) {
	return func(q *corev1.ResourceQuota) { q.Spec.Scopes = s }
}

func container(name string, requests, limits map[string]string) corev1.Container {
	c := corev1.Container{Name: name, Image: "i"}
	if requests != nil {
		c.Resources.Requests = list(requests)
	}
	if limits != nil {
		c.Resources.Limits = list(limits)
	}
	return c
}

func pod(name string, cs ...corev1.Container) *corev1.Pod {
	if len(cs) == 0 {
		cs = []corev1.Container{container("c", nil, nil)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{Containers: cs}}
}

func attrs(op admission.Operation, resource, sub string, obj, old runtime.Object) *admission.Attributes {
	gvr := corev1.SchemeGroupVersion.WithResource(resource)
	name := ""
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetName()
	}
	return &admission.Attributes{Operation: op, Resource: gvr, Subresource: sub, Namespace: "ns", Name: name, Object: obj, OldObject: old}
}

func plugin(t testing.TB, src admission.Source) *Plugin {
	t.Helper()
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Plugin)
}

func TestValidate(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType, ports int) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "5"}, Spec: corev1.ServiceSpec{Type: typ}}
		for i := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
		}
		return s
	}
	claim := func(name, class, size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if class != "" {
			c.Spec.StorageClassName = ptr.To(class)
		}
		c.Spec.Resources.Requests = list(map[string]string{"storage": size})
		return c
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns"}}}
	resized := func(p *corev1.Pod) *corev1.Pod { p.ResourceVersion = "3"; return p }
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		a      *admission.Attributes
		// wantErr is the whole message of the refusal; "" admits.
		wantErr string
		// wantUsed is status.used of quota "q" after the request.
		wantUsed map[string]string
		noWrite  bool
	}{{
		name:     "a pod within the quota is charged pods, count/pods and its requests",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "2", "count/pods": "2", "requests.cpu": "1", "cpu": "1"}, map[string]string{"pods": "1", "count/pods": "1", "requests.cpu": "0", "cpu": "0"})},
		a:        attrs(admission.Create, "pods", "", pod("p", container("c", map[string]string{"cpu": "250m"}, nil)), nil),
		wantUsed: map[string]string{"pods": "2", "count/pods": "2", "requests.cpu": "250m", "cpu": "250m"},
	}, {
		name:    "a pod past the pods limit is refused with Kubernetes' exceeded quota message",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "1"}, map[string]string{"pods": "1"})},
		a:       attrs(admission.Create, "pods", "", pod("p"), nil),
		wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
		noWrite: true,
	}, {
		name:   "a refusal names a generated pod by its generateName",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "1"}, map[string]string{"pods": "1"})},
		a: func() *admission.Attributes {
			p := pod("")
			p.GenerateName = "web-"
			return attrs(admission.Create, "pods", "", p, nil)
		}(),
		wantErr: `pods "web-" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
		noWrite: true,
	}, {
		name:    "exceeded quota names only the exceeded resources",
		quotas:  []*corev1.ResourceQuota{rq("compute", map[string]string{"pods": "10", "requests.cpu": "1", "requests.memory": "1Gi"}, map[string]string{"pods": "1", "requests.cpu": "500m", "requests.memory": "0"})},
		a:       attrs(admission.Create, "pods", "", pod("p", container("c", map[string]string{"cpu": "600m", "memory": "1Gi"}, nil)), nil),
		wantErr: `pods "p" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1`,
		noWrite: true,
	}, {
		name:    "a quota tracking limits.cpu refuses a pod whose containers state none",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"limits.cpu": "4", "requests.memory": "4Gi"}, map[string]string{"limits.cpu": "0", "requests.memory": "0"})},
		a:       attrs(admission.Create, "pods", "", pod("p", container("b", map[string]string{"memory": "1Gi"}, nil), container("a", nil, nil)), nil),
		wantErr: `pods "p" is forbidden: failed quota: q: must specify limits.cpu for: a,b; requests.memory for: a`,
		noWrite: true,
	}, {
		name:    "a quota whose used misses a tracked resource is refused as status unknown",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "5", "count/pods": "5"}, map[string]string{"pods": "1"})},
		a:       attrs(admission.Create, "pods", "", pod("p"), nil),
		wantErr: `pods "p" is forbidden: status unknown for quota: q, resources: count/pods,pods`,
		noWrite: true,
	}, {
		name: "a quota the controller has not written yet charges nothing",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "0"}, nil, func(q *corev1.ResourceQuota) {
			q.Status = corev1.ResourceQuotaStatus{}
		})},
		a:       attrs(admission.Create, "pods", "", pod("p"), nil),
		noWrite: true,
	}, {
		name:     "a BestEffort quota does not charge a pod with requests",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "0"}, map[string]string{"pods": "0"}, scopes(corev1.ResourceQuotaScopeBestEffort))},
		a:        attrs(admission.Create, "pods", "", pod("p", container("c", map[string]string{"cpu": "1"}, nil)), nil),
		noWrite:  true,
		wantUsed: map[string]string{"pods": "0"},
	}, {
		name:    "a NotTerminating quota refuses a pod without a deadline",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "0"}, map[string]string{"pods": "0"}, scopes(corev1.ResourceQuotaScopeNotTerminating))},
		a:       attrs(admission.Create, "pods", "", pod("p"), nil),
		wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`,
		noWrite: true,
	}, {
		name: "a PriorityClass quota charges only pods of its classes",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "0"}, map[string]string{"pods": "0"}, func(q *corev1.ResourceQuota) {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
		})},
		a:       attrs(admission.Create, "pods", "", pod("p"), nil),
		noWrite: true,
	}, {
		name:    "a scoped quota charges no object but pods",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"configmaps": "0"}, map[string]string{"configmaps": "0"}, scopes(corev1.ResourceQuotaScopeNotTerminating))},
		a:       attrs(admission.Create, "configmaps", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}, nil),
		noWrite: true,
	}, {
		name:     "a finished pod is charged its object count only",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "0", "count/pods": "5"}, map[string]string{"pods": "0", "count/pods": "0"})},
		a:        attrs(admission.Create, "pods", "", func() *corev1.Pod { p := pod("p"); p.Status.Phase = corev1.PodSucceeded; return p }(), nil),
		wantUsed: map[string]string{"pods": "0", "count/pods": "1"},
	}, {
		name:     "object counts charge both names of config maps",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"configmaps": "3", "count/configmaps": "3"}, map[string]string{"configmaps": "1", "count/configmaps": "1"})},
		a:        attrs(admission.Create, "configmaps", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}, nil),
		wantUsed: map[string]string{"configmaps": "2", "count/configmaps": "2"},
	}, {
		name:    "a secret past count/secrets is refused",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"count/secrets": "1"}, map[string]string{"count/secrets": "1"})},
		a:       attrs(admission.Create, "secrets", "", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}, nil),
		wantErr: `secrets "s" is forbidden: exceeded quota: q, requested: count/secrets=1, used: count/secrets=1, limited: count/secrets=1`,
		noWrite: true,
	}, {
		name:   "custom resources are counted as count/<resource>.<group>",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"count/widgets.example.com": "1"}, map[string]string{"count/widgets.example.com": "1"})},
		a: &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
			Namespace: "ns", Name: "w", Object: widget},
		wantErr: `widgets.example.com "w" is forbidden: exceeded quota: q, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1`,
		noWrite: true,
	}, {
		name:    "updating an object count resource charges nothing",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"configmaps": "0"}, map[string]string{"configmaps": "0"})},
		a:       attrs(admission.Update, "configmaps", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "2"}}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "2"}}),
		noWrite: true,
	}, {
		name:    "a service turned NodePort is charged its node ports",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"services": "5", "services.nodeports": "1"}, map[string]string{"services": "1", "services.nodeports": "0"})},
		a:       attrs(admission.Update, "services", "", svc("s", corev1.ServiceTypeNodePort, 2), svc("s", corev1.ServiceTypeClusterIP, 2)),
		wantErr: `services "s" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`,
		noWrite: true,
	}, {
		name:     "a LoadBalancer service is charged a load balancer and a node port per port",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"services": "5", "services.loadbalancers": "1", "services.nodeports": "5"}, map[string]string{"services": "0", "services.loadbalancers": "0", "services.nodeports": "0"})},
		a:        attrs(admission.Create, "services", "", svc("s", corev1.ServiceTypeLoadBalancer, 2), nil),
		wantUsed: map[string]string{"services": "1", "services.loadbalancers": "1", "services.nodeports": "2"},
	}, {
		name:     "a claim is charged its storage in total and under its class",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"persistentvolumeclaims": "5", "requests.storage": "10Gi", "gold.storageclass.storage.k8s.io/requests.storage": "5Gi"}, map[string]string{"persistentvolumeclaims": "0", "requests.storage": "0", "gold.storageclass.storage.k8s.io/requests.storage": "0"})},
		a:        attrs(admission.Create, "persistentvolumeclaims", "", claim("c", "gold", "2Gi"), nil),
		wantUsed: map[string]string{"persistentvolumeclaims": "1", "requests.storage": "2Gi", "gold.storageclass.storage.k8s.io/requests.storage": "2Gi"},
	}, {
		name:    "a claim past its class's storage is refused",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"gold.storageclass.storage.k8s.io/requests.storage": "5Gi"}, map[string]string{"gold.storageclass.storage.k8s.io/requests.storage": "4Gi"})},
		a:       attrs(admission.Create, "persistentvolumeclaims", "", claim("c", "gold", "2Gi"), nil),
		wantErr: `persistentvolumeclaims "c" is forbidden: exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/requests.storage=4Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=5Gi`,
		noWrite: true,
	}, {
		name:     "expanding a claim is charged the difference",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"requests.storage": "10Gi"}, map[string]string{"requests.storage": "2Gi"})},
		a:        attrs(admission.Update, "persistentvolumeclaims", "", func() *corev1.PersistentVolumeClaim { c := claim("c", "", "5Gi"); c.ResourceVersion = "4"; return c }(), func() *corev1.PersistentVolumeClaim { c := claim("c", "", "2Gi"); c.ResourceVersion = "4"; return c }()),
		wantUsed: map[string]string{"requests.storage": "5Gi"},
	}, {
		name:    "a plain pod update is not charged",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"requests.cpu": "1"}, map[string]string{"requests.cpu": "1"})},
		a:       attrs(admission.Update, "pods", "", resized(pod("p", container("c", map[string]string{"cpu": "2"}, nil))), resized(pod("p", container("c", map[string]string{"cpu": "1"}, nil)))),
		noWrite: true,
	}, {
		name:     "a resize is charged what it adds",
		quotas:   []*corev1.ResourceQuota{rq("q", map[string]string{"requests.cpu": "4", "pods": "5"}, map[string]string{"requests.cpu": "1", "pods": "1"})},
		a:        attrs(admission.Update, "pods", "resize", resized(pod("p", container("c", map[string]string{"cpu": "3"}, nil))), resized(pod("p", container("c", map[string]string{"cpu": "1"}, nil)))),
		wantUsed: map[string]string{"requests.cpu": "3", "pods": "1"},
	}, {
		name:    "a resize past the quota is refused",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"requests.cpu": "2"}, map[string]string{"requests.cpu": "1"})},
		a:       attrs(admission.Update, "pods", "resize", resized(pod("p", container("c", map[string]string{"cpu": "3"}, nil))), resized(pod("p", container("c", map[string]string{"cpu": "1"}, nil)))),
		wantErr: `pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=1, limited: requests.cpu=2`,
		noWrite: true,
	}, {
		name:   "setting an active deadline charges the pod to a Terminating quota",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "1"}, map[string]string{"pods": "1"}, scopes(corev1.ResourceQuotaScopeTerminating))},
		a: attrs(admission.Update, "pods", "", func() *corev1.Pod {
			p := resized(pod("p"))
			p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			return p
		}(), resized(pod("p"))),
		wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
		noWrite: true,
	}, {
		name:   "pod-level resources need no container requests",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"requests.cpu": "4"}, map[string]string{"requests.cpu": "0"})},
		a: attrs(admission.Create, "pods", "", func() *corev1.Pod {
			p := pod("p")
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: list(map[string]string{"cpu": "2"})}
			return p
		}(), nil),
		wantUsed: map[string]string{"requests.cpu": "2"},
	}, {
		name:    "events are never charged",
		quotas:  []*corev1.ResourceQuota{rq("q", map[string]string{"count/events": "0"}, map[string]string{"count/events": "0"})},
		a:       attrs(admission.Create, "events", "", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}, nil),
		noWrite: true,
	}, {
		name:   "a dry run is refused as a real request would be",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "1"}, map[string]string{"pods": "1"})},
		a: func() *admission.Attributes {
			a := attrs(admission.Create, "pods", "", pod("p"), nil)
			a.DryRun = true
			return a
		}(),
		wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
		noWrite: true,
	}, {
		name:   "an admitted dry run charges nothing",
		quotas: []*corev1.ResourceQuota{rq("q", map[string]string{"pods": "2"}, map[string]string{"pods": "1"})},
		a: func() *admission.Attributes {
			a := attrs(admission.Create, "pods", "", pod("p"), nil)
			a.DryRun = true
			return a
		}(),
		wantUsed: map[string]string{"pods": "1"},
		noWrite:  true,
	}, {
		name: "every quota covering the pod is charged",
		quotas: []*corev1.ResourceQuota{
			rq("q", map[string]string{"pods": "5"}, map[string]string{"pods": "1"}),
			rq("z-other", map[string]string{"requests.memory": "1Gi"}, map[string]string{"requests.memory": "0"}),
		},
		a:        attrs(admission.Create, "pods", "", pod("p", container("c", map[string]string{"memory": "1Gi", "cpu": "1"}, nil)), nil),
		wantUsed: map[string]string{"pods": "2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newSource(tt.quotas...)
			err := plugin(t, src).Validate(context.Background(), tt.a)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "":
				if err == nil {
					t.Fatalf("admitted, want %q", tt.wantErr)
				}
				if !apierrors.IsForbidden(err) {
					t.Errorf("error is not 403 Forbidden: %#v", err)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("message:\n got %s\nwant %s", err, tt.wantErr)
				}
			}
			if tt.noWrite && len(src.Updates()) != 0 {
				t.Errorf("wrote quota status %d times, want none", len(src.Updates()))
			}
			if tt.wantUsed != nil {
				if diff := cmp.Diff(tt.wantUsed, src.used(t, "q")); diff != "" {
					t.Errorf("used (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestHandlesNoDeletes(t *testing.T) {
	p := plugin(t, newSource())
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) || !p.Handles(admission.Create) || !p.Handles(admission.Update) {
		t.Error("ResourceQuota must handle CREATE and UPDATE only")
	}
}

func TestEveryCoveringQuotaIsCharged(t *testing.T) {
	src := newSource(
		rq("a", map[string]string{"pods": "5"}, map[string]string{"pods": "1"}),
		rq("b", map[string]string{"requests.memory": "2Gi"}, map[string]string{"requests.memory": "0"}),
	)
	if err := plugin(t, src).Validate(context.Background(), attrs(admission.Create, "pods", "", pod("p", container("c", map[string]string{"memory": "1Gi"}, nil)), nil)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"pods": "2"}, src.used(t, "a")); diff != "" {
		t.Errorf("a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"requests.memory": "1Gi"}, src.used(t, "b")); diff != "" {
		t.Errorf("b (-want +got):\n%s", diff)
	}
}

// TestConcurrentCreatesCannotBothUseTheLastPod races two creates against a
// quota of one pod, through one plugin and through two plugins (two
// servers) whose caches have not seen each other's writes: exactly one is
// admitted and the quota ends charged once.
func TestConcurrentCreatesCannotBothUseTheLastPod(t *testing.T) {
	for _, servers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d servers", servers), func(t *testing.T) {
			for round := range 50 {
				src := newSource(rq("q", map[string]string{"pods": "1"}, map[string]string{"pods": "0"}))
				src.SetLagging(servers == 2)
				plugins := []*Plugin{plugin(t, src), plugin(t, src)}
				if servers == 1 {
					plugins[1] = plugins[0]
				}
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for i := range 2 {
					wg.Go(func() {
						errs[i] = plugins[i].Validate(context.Background(), attrs(admission.Create, "pods", "", pod(fmt.Sprintf("p%d", i)), nil))
					})
				}
				wg.Wait()
				admitted := 0
				for _, err := range errs {
					if err == nil {
						admitted++
					} else if !apierrors.IsForbidden(err) {
						t.Fatalf("round %d: refusal is not Forbidden: %v", round, err)
					}
				}
				if admitted != 1 {
					t.Fatalf("round %d: %d creates admitted, want 1 (%v)", round, admitted, errs)
				}
				if got := src.used(t, "q")["pods"]; got != "1" {
					t.Fatalf("round %d: used pods=%s, want 1", round, got)
				}
			}
		})
	}
}

func TestConflictRetriesAreBounded(t *testing.T) {
	src := newSource(rq("q", map[string]string{"pods": "5"}, map[string]string{"pods": "0"}))
	src.conflictAlways = true
	err := plugin(t, src).Validate(context.Background(), attrs(admission.Create, "pods", "", pod("p"), nil))
	if !apierrors.IsConflict(err) {
		t.Fatalf("got %v, want the last Conflict", err)
	}
}

func TestSequentialCreatesUseWhatThePluginWrote(t *testing.T) {
	// The cache never catches up: the plugin must charge on top of its own
	// writes, not on the cache's stale copy.
	src := newSource(rq("q", map[string]string{"pods": "2"}, map[string]string{"pods": "0"}))
	src.SetLagging(true)
	p := plugin(t, src)
	for i := range 2 {
		if err := p.Validate(context.Background(), attrs(admission.Create, "pods", "", pod(fmt.Sprintf("p%d", i)), nil)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	err := p.Validate(context.Background(), attrs(admission.Create, "pods", "", pod("p2"), nil))
	if err == nil || err.Error() != `pods "p2" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2` {
		t.Fatalf("third create: %v", err)
	}
	if len(src.Updates()) != 2 {
		t.Errorf("%d writes, want 2", len(src.Updates()))
	}
}

// BenchmarkValidatePodCharged is the cost of admitting and charging a pod
// against one quota.
func BenchmarkValidatePodCharged(b *testing.B) {
	src := newSource(rq("q", map[string]string{"pods": "1000000000", "requests.cpu": "1000000"}, map[string]string{"pods": "0", "requests.cpu": "0"}))
	p := plugin(b, src)
	pd := pod("p", container("c", map[string]string{"cpu": "1m"}, nil))
	for b.Loop() {
		if err := p.Validate(context.Background(), attrs(admission.Create, "pods", "", pd, nil)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateNoQuota is the cost for a namespace without quotas.
func BenchmarkValidateNoQuota(b *testing.B) {
	p := plugin(b, newSource())
	pd := pod("p")
	for b.Loop() {
		if err := p.Validate(context.Background(), attrs(admission.Create, "pods", "", pd, nil)); err != nil {
			b.Fatal(err)
		}
	}
}

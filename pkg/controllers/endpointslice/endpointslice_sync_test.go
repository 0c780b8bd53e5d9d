package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeWriter records the writes and applies them to the slice cache, as
// the informer would, so that a second sync sees the first one's result.
type fakeWriter struct {
	idx     *cache.Indexer[*discoveryv1.EndpointSlice]
	actions []string
	n       int
}

func (f *fakeWriter) Create(_ context.Context, sl *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error) {
	out := sl.DeepCopy()
	f.n++
	out.Name = fmt.Sprintf("%s%d", out.GenerateName, f.n)
	out.UID = types.UID("uid-" + out.Name)
	out.Generation = 1
	f.actions = append(f.actions, "create "+out.Name)
	return out, f.idx.Add(out)
}

func (f *fakeWriter) Update(_ context.Context, sl *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error) {
	out := sl.DeepCopy()
	out.Generation++
	f.actions = append(f.actions, "update "+out.Name)
	return out, f.idx.Update(out)
}

func (f *fakeWriter) Delete(_ context.Context, ns, name string) error {
	f.actions = append(f.actions, "delete "+name)
	f.idx.DeleteKey(ns + "/" + name)
	return nil
}

type fixture struct {
	t      testing.TB
	s      *syncer
	w      *fakeWriter
	svcs   *cache.Indexer[*corev1.Service]
	pods   *cache.Indexer[*corev1.Pod]
	slices *cache.Indexer[*discoveryv1.EndpointSlice]
	nodes  *cache.Indexer[*corev1.Node]
}

func newIndexer[T cache.Object](t testing.TB) *cache.Indexer[T] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func newFixture(t testing.TB, max int, objs ...any) *fixture {
	t.Helper()
	f := &fixture{
		t: t, svcs: newIndexer[*corev1.Service](t), pods: newIndexer[*corev1.Pod](t),
		slices: newIndexer[*discoveryv1.EndpointSlice](t), nodes: newIndexer[*corev1.Node](t),
	}
	f.w = &fakeWriter{idx: f.slices}
	f.s = &syncer{
		services:    cache.NewLister(f.svcs, corev1.Resource("services")),
		pods:        cache.NewLister(f.pods, corev1.Resource("pods")),
		slices:      cache.NewLister(f.slices, discoveryv1.Resource("endpointslices")),
		nodes:       cache.NewLister(f.nodes, corev1.Resource("nodes")),
		writer:      f.w,
		tracker:     newTracker(),
		triggers:    &podendpoint.TriggerTimes{},
		maxPerSlice: max,
	}
	f.nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}})
	f.nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	for _, o := range objs {
		f.add(o)
	}
	return f
}

func (f *fixture) add(o any) {
	f.t.Helper()
	var err error
	switch o := o.(type) {
	case *corev1.Service:
		err = f.svcs.Add(o)
	case *corev1.Pod:
		err = f.pods.Add(o)
	case *discoveryv1.EndpointSlice:
		err = f.slices.Add(o)
	default:
		f.t.Fatalf("unknown object %T", o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync syncs the service web and returns the writes, clearing them.
func (f *fixture) sync() ([]string, error) {
	f.t.Helper()
	err := f.s.sync(context.Background(), "ns/web")
	a := f.w.actions
	f.w.actions = nil
	return a, err
}

func (f *fixture) mustSync() []string {
	f.t.Helper()
	a, err := f.sync()
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// slicesOf returns the slices of web, by name.
func (f *fixture) slicesOf() []*discoveryv1.EndpointSlice {
	out := slices.Clone(f.slices.List())
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func service(mod ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"team": "a"}, CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mod {
		m(s)
	}
	return s
}

func pod(name, ip string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))},
		}},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }

func onNode(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

type conds struct{ ready, serving, terminating bool }

func condsOf(ep discoveryv1.Endpoint) conds {
	return conds{ptr.Deref(ep.Conditions.Ready, false), ptr.Deref(ep.Conditions.Serving, false), ptr.Deref(ep.Conditions.Terminating, false)}
}

// endpointsByIP returns every endpoint of every slice, by address.
func endpointsByIP(sls []*discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, sl := range sls {
		for _, ep := range sl.Endpoints {
			out[strings.Join(ep.Addresses, ",")] = ep
		}
	}
	return out
}

func TestSyncEndpointConditions(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want map[string]conds // by IP
	}{
		{
			name: "ready pod is ready and serving",
			svc:  service(), pods: []*corev1.Pod{pod("a", "10.0.0.1")},
			want: map[string]conds{"10.0.0.1": {true, true, false}},
		},
		{
			name: "unready pod is neither ready nor serving",
			svc:  service(), pods: []*corev1.Pod{pod("a", "10.0.0.1", notReady)},
			want: map[string]conds{"10.0.0.1": {false, false, false}},
		},
		{
			name: "terminating ready pod is serving and terminating but not ready",
			svc:  service(), pods: []*corev1.Pod{pod("a", "10.0.0.1", terminating)},
			want: map[string]conds{"10.0.0.1": {false, true, true}},
		},
		{
			name: "terminating unready pod is only terminating",
			svc:  service(), pods: []*corev1.Pod{pod("a", "10.0.0.1", terminating, notReady)},
			want: map[string]conds{"10.0.0.1": {false, false, true}},
		},
		{
			name: "publishNotReadyAddresses makes every endpoint ready",
			svc:  service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", notReady), pod("b", "10.0.0.2", terminating)},
			want: map[string]conds{"10.0.0.1": {true, false, false}, "10.0.0.2": {true, true, true}},
		},
		{
			name: "pods without an IP, finished pods and pods not selected are left out",
			svc:  service(),
			pods: []*corev1.Pod{
				pod("a", "10.0.0.1"),
				pod("noip", "", func(p *corev1.Pod) { p.Status.PodIPs = nil }),
				pod("done", "10.0.0.3", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				pod("failed", "10.0.0.4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pod("other", "10.0.0.5", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }),
			},
			want: map[string]conds{"10.0.0.1": {true, true, false}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 100, tc.svc)
			for _, p := range tc.pods {
				f.add(p)
			}
			if got := f.mustSync(); !cmp.Equal(got, []string{"create web-1"}) {
				t.Fatalf("writes = %v, want one create", got)
			}
			got := map[string]conds{}
			for ip, ep := range endpointsByIP(f.slicesOf()) {
				got[ip] = condsOf(ep)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(conds{})); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if a := f.mustSync(); len(a) != 0 {
				t.Errorf("second sync wrote %v, want nothing", a)
			}
		})
	}
}

func TestSyncSliceContents(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1", func(p *corev1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain = "host-a", "web"
	}), pod("b", "10.0.0.2", onNode("node-b"), func(p *corev1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain = "host-b", "other"
	}))
	f.mustSync()
	sls := f.slicesOf()
	if len(sls) != 1 {
		t.Fatalf("%d slices, want 1", len(sls))
	}
	sl := sls[0]
	wantMeta := metav1.ObjectMeta{
		Name: "web-1", GenerateName: "web-", Namespace: "ns", UID: "uid-web-1", Generation: 1,
		Labels: map[string]string{
			"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName,
		},
		Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: t0.Format(time.RFC3339Nano)},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Service", Name: "web", UID: "svc-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if diff := cmp.Diff(wantMeta, sl.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if sl.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("addressType %s, want IPv4", sl.AddressType)
	}
	wantPorts := []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}
	if diff := cmp.Diff(wantPorts, sl.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	yes, no := ptr.To(true), ptr.To(false)
	want := []discoveryv1.Endpoint{
		{
			Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: yes, Serving: yes, Terminating: no},
			Hostname: ptr.To("host-a"), NodeName: ptr.To("node-a"), Zone: ptr.To("zone-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "a", UID: "uid-a"},
		},
		{
			Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: yes, Serving: yes, Terminating: no},
			NodeName:  ptr.To("node-b"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "b", UID: "uid-b"},
		},
	}
	if diff := cmp.Diff(want, sl.Endpoints); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}

func TestSyncLastChangeTriggerTime(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"))
	f.mustSync()
	if got := f.slicesOf()[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != t0.Format(time.RFC3339Nano) {
		t.Errorf("first sync: trigger time %q, want the service's creation %s", got, t0)
	}
	// A pod turning unready at t0+5m is the change that triggers.
	at := t0.Add(5 * time.Minute)
	f.add(pod("a", "10.0.0.1", notReady, func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at) }))
	if a := f.mustSync(); !cmp.Equal(a, []string{"update web-1"}) {
		t.Fatalf("writes %v, want one update", a)
	}
	if got := f.slicesOf()[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != at.Format(time.RFC3339Nano) {
		t.Errorf("after the pod's change: trigger time %q, want %s", got, at)
	}
}

func TestSyncPorts(t *testing.T) {
	named := func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
			{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")},
		}
	}
	httpOn := func(port int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = port }
	}
	withMetrics := func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "m", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}})
	}
	udp := func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP }
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want map[string][]string // ports key -> IPs
	}{
		{
			name: "named target ports resolve from each pod's container ports",
			svc:  service(named),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", withMetrics), pod("b", "10.0.0.2", withMetrics)},
			want: map[string][]string{"http/8080/TCP/,metrics/9100/TCP/": {"10.0.0.1", "10.0.0.2"}},
		},
		{
			name: "pods resolving to different port numbers get different slices",
			svc:  service(named),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", withMetrics), pod("b", "10.0.0.2", withMetrics, httpOn(8081))},
			want: map[string][]string{
				"http/8080/TCP/,metrics/9100/TCP/": {"10.0.0.1"},
				"http/8081/TCP/,metrics/9100/TCP/": {"10.0.0.2"},
			},
		},
		{
			name: "a port a pod does not have is left out of its slice",
			svc:  service(named),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", withMetrics), pod("b", "10.0.0.2")},
			want: map[string][]string{
				"http/8080/TCP/,metrics/9100/TCP/": {"10.0.0.1"},
				"http/8080/TCP/":                   {"10.0.0.2"},
			},
		},
		{
			name: "a named port matches only with the service port's protocol",
			svc:  service(named),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", udp)},
			want: map[string][]string{"": {"10.0.0.1"}},
		},
		{
			name: "a numeric target port is taken as it is",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", httpOn(1))},
			want: map[string][]string{"http/8080/TCP/": {"10.0.0.1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 100, tc.svc)
			for _, p := range tc.pods {
				f.add(p)
			}
			f.mustSync()
			got := map[string][]string{}
			for _, sl := range f.slicesOf() {
				for _, ep := range sl.Endpoints {
					got[portsKey(sl.Ports)] = append(got[portsKey(sl.Ports)], ep.Addresses...)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("IPs by ports (-want +got):\n%s", diff)
			}
		})
	}
}

func pods(from, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < from+n; i++ {
		out = append(out, pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)))
	}
	return out
}

func sizes(sls []*discoveryv1.EndpointSlice) []int {
	var out []int
	for _, sl := range sls {
		out = append(out, len(sl.Endpoints))
	}
	return out
}

func TestSyncPacking(t *testing.T) {
	t.Run("at most max endpoints per slice", func(t *testing.T) {
		f := newFixture(t, 100, service())
		for _, p := range pods(0, 250) {
			f.add(p)
		}
		if a := f.mustSync(); len(a) != 3 {
			t.Fatalf("writes %v, want 3 creates", a)
		}
		if got := sizes(f.slicesOf()); !cmp.Equal(got, []int{100, 100, 50}) {
			t.Errorf("slice sizes %v, want [100 100 50]", got)
		}
	})
	t.Run("new endpoints go to a slice being updated anyway", func(t *testing.T) {
		f := newFixture(t, 100, service())
		for _, p := range pods(0, 150) {
			f.add(p)
		}
		f.mustSync() // web-1: 100, web-2: 50
		f.pods.DeleteKey("ns/p0000")
		f.add(pods(150, 1)[0])
		if a := f.mustSync(); !cmp.Equal(a, []string{"update web-1"}) {
			t.Errorf("writes %v, want only web-1 updated", a)
		}
		if got := sizes(f.slicesOf()); !cmp.Equal(got, []int{100, 50}) {
			t.Errorf("slice sizes %v, want [100 50]", got)
		}
	})
	t.Run("new endpoints fill the unchanged slice they fit best", func(t *testing.T) {
		f := newFixture(t, 100, service())
		for _, p := range pods(0, 180) {
			f.add(p)
		}
		f.mustSync() // web-1: 100, web-2: 80
		for _, p := range pods(180, 15) {
			f.add(p)
		}
		if a := f.mustSync(); !cmp.Equal(a, []string{"update web-2"}) {
			t.Errorf("writes %v, want only web-2 updated", a)
		}
		if got := sizes(f.slicesOf()); !cmp.Equal(got, []int{100, 95}) {
			t.Errorf("slice sizes %v, want [100 95]", got)
		}
	})
	t.Run("of several unchanged slices, the one left closest to full is filled", func(t *testing.T) {
		f := newFixture(t, 8, service())
		for _, p := range pods(0, 13) {
			f.add(p)
		}
		f.mustSync() // web-1: 8, web-2: 5
		f.s.maxPerSlice = 10
		f.add(pods(13, 1)[0])
		if a := f.mustSync(); !cmp.Equal(a, []string{"update web-1"}) {
			t.Errorf("writes %v, want web-1 (8+1 of 10) filled rather than web-2 (5+1)", a)
		}
	})
	t.Run("more endpoints than fit make a new slice", func(t *testing.T) {
		f := newFixture(t, 100, service())
		for _, p := range pods(0, 180) {
			f.add(p)
		}
		f.mustSync()
		for _, p := range pods(180, 30) {
			f.add(p)
		}
		if a := f.mustSync(); !cmp.Equal(a, []string{"create web-3"}) {
			t.Errorf("writes %v, want a new slice", a)
		}
	})
	t.Run("an emptied slice is deleted", func(t *testing.T) {
		f := newFixture(t, 2, service())
		for _, p := range pods(0, 4) {
			f.add(p)
		}
		f.mustSync() // web-1: p0 p1, web-2: p2 p3
		f.pods.DeleteKey("ns/p0002")
		f.pods.DeleteKey("ns/p0003")
		if a := f.mustSync(); !cmp.Equal(a, []string{"delete web-2"}) {
			t.Errorf("writes %v, want web-2 deleted", a)
		}
	})
	t.Run("a changed endpoint is updated in place", func(t *testing.T) {
		f := newFixture(t, 2, service())
		for _, p := range pods(0, 4) {
			f.add(p)
		}
		f.mustSync()
		f.add(pod("p0003", "10.0.0.4", notReady))
		if a := f.mustSync(); !cmp.Equal(a, []string{"update web-2"}) {
			t.Errorf("writes %v, want web-2 updated", a)
		}
	})
}

func TestSyncPlaceholder(t *testing.T) {
	f := newFixture(t, 100, service())
	if a := f.mustSync(); !cmp.Equal(a, []string{"create web-1"}) {
		t.Fatalf("writes %v, want a placeholder", a)
	}
	sl := f.slicesOf()[0]
	if len(sl.Endpoints) != 0 || len(sl.Ports) != 0 {
		t.Errorf("placeholder has endpoints %v, ports %v; want none", sl.Endpoints, sl.Ports)
	}
	if a := f.mustSync(); len(a) != 0 {
		t.Errorf("second sync wrote %v, want the placeholder kept", a)
	}
	// The first pod reuses the placeholder's name.
	f.add(pod("a", "10.0.0.1"))
	if a := f.mustSync(); !cmp.Equal(a, []string{"update web-1"}) {
		t.Errorf("writes %v, want the placeholder updated", a)
	}
}

func TestSyncServiceKinds(t *testing.T) {
	tests := []struct {
		name       string
		svc        *corev1.Service
		wantWrites bool
		wantLabels map[string]string
	}{
		{
			name: "headless service slices carry the headless label",
			svc: service(func(s *corev1.Service) {
				s.Spec.ClusterIP = corev1.ClusterIPNone
			}),
			wantWrites: true,
			wantLabels: map[string]string{"team": "a", corev1.IsHeadlessService: "", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName},
		},
		{
			name: "reserved labels of the service are not copied",
			svc: service(func(s *corev1.Service) {
				s.Labels = map[string]string{discoveryv1.LabelManagedBy: "me", "x": "y"}
			}),
			wantWrites: true,
			wantLabels: map[string]string{"x": "y", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName},
		},
		{name: "a service without a selector gets no slices", svc: service(func(s *corev1.Service) { s.Spec.Selector = nil })},
		{name: "an ExternalName service gets no slices", svc: service(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 100, tc.svc, pod("a", "10.0.0.1"))
			a := f.mustSync()
			if !tc.wantWrites {
				if len(a) != 0 {
					t.Errorf("writes %v, want none", a)
				}
				return
			}
			if diff := cmp.Diff(tc.wantLabels, f.slicesOf()[0].Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncSelectorRemovedLeavesSlices(t *testing.T) {
	// As in Kubernetes, a Service that loses its selector is left to
	// whoever manages its endpoints now: its slices are not touched.
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"))
	f.mustSync()
	f.add(service(func(s *corev1.Service) { s.Spec.Selector = nil }))
	if a := f.mustSync(); len(a) != 0 {
		t.Errorf("writes %v, want none", a)
	}
}

func TestSyncServiceLabelsChange(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"))
	f.mustSync()
	f.add(service(func(s *corev1.Service) { s.Labels = map[string]string{"team": "b"} }))
	if a := f.mustSync(); !cmp.Equal(a, []string{"update web-1"}) {
		t.Fatalf("writes %v, want an update", a)
	}
	if got := f.slicesOf()[0].Labels["team"]; got != "b" {
		t.Errorf("label team=%q, want b", got)
	}
}

func TestSyncManagedByRespected(t *testing.T) {
	other := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-custom", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "someone-else",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.168.0.1"}}},
	}
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"), other)
	if a := f.mustSync(); !cmp.Equal(a, []string{"create web-1"}) {
		t.Errorf("writes %v, want only the controller's own slice created", a)
	}
	if got, _ := f.slices.GetByKey("ns/web-custom"); got != other {
		t.Errorf("the slice managed by someone else was changed: %v", got)
	}
}

func TestSyncSlicesOfAnEarlierService(t *testing.T) {
	old := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", UID: "old", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName,
		}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "earlier", Controller: ptr.To(true)}}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"), old)
	if a := f.mustSync(); !cmp.Equal(a, []string{"create web-1", "delete web-old"}) {
		t.Errorf("writes %v, want a new slice and the earlier service's deleted", a)
	}
}

func TestSyncNodeNotFound(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"), pod("b", "10.0.0.2", onNode("gone")))
	a, err := f.sync()
	if err == nil {
		t.Error("sync succeeded, want an error to retry the pod whose node is missing")
	}
	if !cmp.Equal(a, []string{"create web-1"}) {
		t.Fatalf("writes %v, want the slice created without the pod", a)
	}
	if _, ok := endpointsByIP(f.slicesOf())["10.0.0.2"]; ok {
		t.Error("the pod on a missing node is in the slice")
	}
}

func TestSyncStaleCache(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"))
	f.mustSync()
	sl := f.slicesOf()[0]
	// The controller wrote generation 2; the cache still has 1.
	newer := sl.DeepCopy()
	newer.Generation = 2
	f.s.tracker.update(newer)
	f.add(pod("b", "10.0.0.2"))
	a, err := f.sync()
	if err != errStaleCache {
		t.Errorf("sync error %v, want the stale cache error", err)
	}
	if len(a) != 0 {
		t.Errorf("writes %v on a stale cache, want none", a)
	}
}

func TestSyncDeletedService(t *testing.T) {
	f := newFixture(t, 100, pod("a", "10.0.0.1"))
	if a := f.mustSync(); len(a) != 0 {
		t.Errorf("writes %v, want none (the garbage collector deletes owned slices)", a)
	}
}

func TestSyncNamespaceTerminating(t *testing.T) {
	f := newFixture(t, 100, service(), pod("a", "10.0.0.1"))
	f.s.writer = terminatingWriter{f.w}
	if _, err := f.sync(); err != nil {
		t.Errorf("sync error %v, want creates in a terminating namespace dropped", err)
	}
}

type terminatingWriter struct{ *fakeWriter }

func (terminatingWriter) Create(context.Context, *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error) {
	err := apierrors.NewForbidden(discoveryv1.Resource("endpointslices"), "", fmt.Errorf("namespace ns is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return nil, err
}

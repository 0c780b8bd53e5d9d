//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served and maintained, as kube-controller-manager 1.37 still does

package endpoints

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeWriter records the writes and applies them to the Endpoints cache.
type fakeWriter struct {
	idx     *cache.Indexer[*corev1.Endpoints]
	actions []string
	err     error
}

func (f *fakeWriter) Create(_ context.Context, ep *corev1.Endpoints) error {
	f.actions = append(f.actions, "create "+ep.Name)
	if f.err != nil {
		return f.err
	}
	out := ep.DeepCopy()
	out.ResourceVersion = "1"
	return f.idx.Add(out)
}

func (f *fakeWriter) Update(_ context.Context, ep *corev1.Endpoints) error {
	f.actions = append(f.actions, "update "+ep.Name)
	return f.idx.Update(ep.DeepCopy())
}

func (f *fakeWriter) Delete(_ context.Context, ns, name string) error {
	f.actions = append(f.actions, "delete "+name)
	if _, ok := f.idx.GetByKey(ns + "/" + name); !ok {
		return apierrors.NewNotFound(corev1.Resource("endpoints"), name)
	}
	f.idx.DeleteKey(ns + "/" + name)
	return nil
}

type fixture struct {
	t    testing.TB
	s    *syncer
	w    *fakeWriter
	svcs *cache.Indexer[*corev1.Service]
	pods *cache.Indexer[*corev1.Pod]
	eps  *cache.Indexer[*corev1.Endpoints]
}

func newIndexer[T cache.Object](t testing.TB) *cache.Indexer[T] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func newFixture(t testing.TB, objs ...any) *fixture {
	t.Helper()
	f := &fixture{t: t, svcs: newIndexer[*corev1.Service](t), pods: newIndexer[*corev1.Pod](t), eps: newIndexer[*corev1.Endpoints](t)}
	f.w = &fakeWriter{idx: f.eps}
	f.s = &syncer{
		services:  cache.NewLister(f.svcs, corev1.Resource("services")),
		pods:      cache.NewLister(f.pods, corev1.Resource("pods")),
		endpoints: cache.NewLister(f.eps, corev1.Resource("endpoints")),
		writer:    f.w,
		triggers:  &podendpoint.TriggerTimes{},
	}
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
	case *corev1.Endpoints:
		err = f.eps.Add(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) mustSync() []string {
	f.t.Helper()
	if err := f.s.sync(context.Background(), "ns/web"); err != nil {
		f.t.Fatal(err)
	}
	a := f.w.actions
	f.w.actions = nil
	return a
}

func (f *fixture) endpoints() *corev1.Endpoints {
	f.t.Helper()
	ep, ok := f.eps.GetByKey("ns/web")
	if !ok {
		f.t.Fatal("no endpoints ns/web")
	}
	return ep
}

func service(mod ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"team": "a"}, CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
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

func addr(name, ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, NodeName: ptr.To("node-a"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

var httpPort = corev1.EndpointPort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}

func TestSyncSubsets(t *testing.T) {
	withHostname := func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "h", "web" }
	metrics := func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)})
	}
	metricsPort := corev1.EndpointPort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}
	hostAddr := addr("a", "10.0.0.1")
	hostAddr.Hostname = "h"
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{
			name: "ready and not ready addresses",
			svc:  service(),
			pods: []*corev1.Pod{pod("b", "10.0.0.2", notReady), pod("a", "10.0.0.1"), pod("c", "10.0.0.3")},
			want: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("c", "10.0.0.3")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("b", "10.0.0.2")},
				Ports:             []corev1.EndpointPort{httpPort},
			}},
		},
		{
			name: "terminating pods are left out",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "10.0.0.1"), pod("b", "10.0.0.2", terminating)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []corev1.EndpointPort{httpPort}}},
		},
		{
			name: "publishNotReadyAddresses makes every address ready, terminating ones too",
			svc:  service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", notReady), pod("b", "10.0.0.2", terminating)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")}, Ports: []corev1.EndpointPort{httpPort}}},
		},
		{
			name: "pods resolving different ports make different subsets",
			svc:  service(metrics),
			pods: []*corev1.Pod{pod("a", "10.0.0.1"), pod("b", "10.0.0.2", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			want: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []corev1.EndpointPort{httpPort}},
				{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")}, Ports: []corev1.EndpointPort{metricsPort}},
			},
		},
		{
			name: "ports offered by the same addresses share a subset",
			svc:  service(metrics),
			pods: []*corev1.Pod{pod("a", "10.0.0.1"), pod("b", "10.0.0.2")},
			want: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")},
				Ports:     []corev1.EndpointPort{httpPort, metricsPort},
			}},
		},
		{
			name: "hostname set for pods of the service's subdomain",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "10.0.0.1", withHostname)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{hostAddr}, Ports: []corev1.EndpointPort{httpPort}}},
		},
		{
			name: "headless service without ports lists addresses without ports",
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.Ports = corev1.ClusterIPNone, nil }),
			pods: []*corev1.Pod{pod("a", "10.0.0.1")},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}}},
		},
		{
			name: "pods without an IP and finished pods are left out",
			svc:  service(),
			pods: []*corev1.Pod{pod("a", "", func(p *corev1.Pod) { p.Status.PodIPs = nil }), pod("b", "10.0.0.2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			want: []corev1.EndpointSubset{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.svc)
			for _, p := range tc.pods {
				f.add(p)
			}
			if a := f.mustSync(); !cmp.Equal(a, []string{"create web"}) {
				t.Fatalf("writes %v, want a create", a)
			}
			if diff := cmp.Diff(tc.want, f.endpoints().Subsets); diff != "" {
				t.Errorf("subsets (-want +got):\n%s", diff)
			}
			if a := f.mustSync(); len(a) != 0 {
				t.Errorf("second sync wrote %v, want nothing: unchanged endpoints are skipped", a)
			}
		})
	}
}

func TestSyncLabelsAndAnnotations(t *testing.T) {
	f := newFixture(t, service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }), pod("a", "10.0.0.1"))
	f.mustSync()
	ep := f.endpoints()
	wantLabels := map[string]string{"team": "a", corev1.IsHeadlessService: ""}
	if diff := cmp.Diff(wantLabels, ep.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got := ep.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != t0.Format(time.RFC3339Nano) {
		t.Errorf("trigger time %q, want the service's creation", got)
	}
	// The service's labels change: copied over.
	f.add(service(func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Labels = corev1.ClusterIPNone, map[string]string{"team": "b"}
	}))
	if a := f.mustSync(); !cmp.Equal(a, []string{"update web"}) {
		t.Fatalf("writes %v, want an update", a)
	}
	if got := f.endpoints().Labels["team"]; got != "b" {
		t.Errorf("label team=%q, want b", got)
	}
}

func TestSyncOverCapacity(t *testing.T) {
	f := newFixture(t, service())
	for i := range 1200 {
		mod := []func(*corev1.Pod){}
		if i%4 == 0 {
			mod = append(mod, notReady)
		}
		f.add(pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), mod...))
	}
	f.mustSync()
	ep := f.endpoints()
	if got := ep.Annotations[corev1.EndpointsOverCapacity]; got != "truncated" {
		t.Errorf("over-capacity annotation %q, want truncated", got)
	}
	ready, notReady := 0, 0
	for _, ss := range ep.Subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	// 900 ready are kept; not-ready addresses fill the rest.
	if ready != 900 || notReady != 100 {
		t.Errorf("%d ready and %d not ready addresses, want 900 and 100", ready, notReady)
	}

	// Back under capacity: the annotation goes.
	for i := 1000; i < 1200; i++ {
		f.pods.DeleteKey(fmt.Sprintf("ns/p%04d", i))
	}
	f.mustSync()
	if _, ok := f.endpoints().Annotations[corev1.EndpointsOverCapacity]; ok {
		t.Error("over-capacity annotation kept under capacity")
	}
}

func TestTruncateReadyOverCapacity(t *testing.T) {
	var a, b []corev1.EndpointAddress
	for i := range 900 {
		a = append(a, corev1.EndpointAddress{IP: fmt.Sprintf("a%d", i)})
	}
	for i := range 300 {
		b = append(b, corev1.EndpointAddress{IP: fmt.Sprintf("b%d", i)})
	}
	subsets := []corev1.EndpointSubset{{Addresses: a, NotReadyAddresses: b}, {Addresses: b}}
	if !truncate(subsets) {
		t.Fatal("not truncated")
	}
	// Ready ones are cut by share (900/1200 and 300/1200 of 1000); every
	// not-ready one goes.
	if got := []int{len(subsets[0].Addresses), len(subsets[0].NotReadyAddresses), len(subsets[1].Addresses)}; !cmp.Equal(got, []int{750, 0, 250}) {
		t.Errorf("sizes %v, want [750 0 250]", got)
	}
}

func TestSyncServiceDeleted(t *testing.T) {
	f := newFixture(t, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "3"}})
	if a := f.mustSync(); !cmp.Equal(a, []string{"delete web"}) {
		t.Errorf("writes %v, want the endpoints deleted with their service", a)
	}
	if a := f.mustSync(); !cmp.Equal(a, []string{"delete web"}) {
		t.Errorf("writes %v; an already deleted Endpoints is not an error", a)
	}
}

func TestSyncSelectorless(t *testing.T) {
	custom := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "3"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.168.0.1"}}}}}
	for name, svc := range map[string]*corev1.Service{
		"a service without a selector keeps its endpoints": service(func(s *corev1.Service) { s.Spec.Selector = nil }),
		"an ExternalName service gets no endpoints":        service(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, svc, pod("a", "10.0.0.1"), custom)
			if a := f.mustSync(); len(a) != 0 {
				t.Errorf("writes %v, want none", a)
			}
		})
	}
}

func TestSyncNamespaceTerminating(t *testing.T) {
	f := newFixture(t, service(), pod("a", "10.0.0.1"))
	f.w.err = apierrors.NewForbidden(corev1.Resource("endpoints"), "web", fmt.Errorf("namespace ns is being terminated"))
	if a := f.mustSync(); !cmp.Equal(a, []string{"create web"}) {
		t.Errorf("writes %v", a)
	}
}

func TestRepackIsOrderIndependent(t *testing.T) {
	ss := func(ip string, ready bool, port int32) corev1.EndpointSubset {
		s := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: fmt.Sprint(port), Port: port}}}
		a := []corev1.EndpointAddress{{IP: ip}}
		if ready {
			s.Addresses = a
		} else {
			s.NotReadyAddresses = a
		}
		return s
	}
	in := []corev1.EndpointSubset{ss("1", true, 80), ss("2", false, 80), ss("1", true, 443), ss("2", false, 443), ss("3", true, 80)}
	rev := make([]corev1.EndpointSubset, len(in))
	for i := range in {
		rev[len(in)-1-i] = in[i]
	}
	if diff := cmp.Diff(repack(in), repack(rev)); diff != "" {
		t.Errorf("repack depends on input order:\n%s", diff)
	}
	if n := len(repack(in)); n != 2 {
		t.Errorf("%d subsets, want 2 ({1,2!,3}:80 and {1,2!}:443)", n)
	}
}

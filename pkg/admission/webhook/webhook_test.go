package webhook

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

func service(name string, port int32, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sys"},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{
			{Name: "https", Port: port, TargetPort: intstr.FromString("https")},
		}},
	}
}

func endpointSlice(svc string, port int, ready bool) *discoveryv1.EndpointSlice {
	name, p := "https", int32(port)
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-abc", Namespace: "sys", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p}},
	}
}

//lint:file-ignore SA1019 the Endpoints fallback of service resolution is tested

func endpoints(svc string, port int) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: "sys"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port)}},
		}},
	}
}

func TestWebhookServiceResolvedToItsEndpoints(t *testing.T) {
	s, port := newServiceServer(t, "hook.sys.svc", allow)
	path := "/validate"
	for _, tc := range []struct {
		name     string
		service  string
		port     *int32
		objects  func(src *admissiontest.Source)
		wantErr  string
		wantPath string
	}{
		{name: "EndpointSlice address, default port 443", service: "hook", objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("hook", 443, corev1.ServiceTypeClusterIP))
			src.Set(endpointSlicesResource, endpointSlice("hook", port, true))
		}},
		{name: "Endpoints when the service has no slices", service: "hook", port: ptrTo(int32(8443)), objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("hook", 8443, ""))
			src.Set(endpointsResource, endpoints("hook", port))
		}},
		{name: "the certificate must name the service", service: "other", objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("other", 443, corev1.ServiceTypeClusterIP))
			src.Set(endpointSlicesResource, endpointSlice("other", port, true))
		}, wantErr: `failed to call webhook: Post "https://other.sys.svc:443/validate?timeout=10s": tls: failed to verify certificate: x509: certificate is valid for hook.sys.svc, not other.sys.svc`},
		{name: "no ready endpoint", service: "hook", objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("hook", 443, corev1.ServiceTypeClusterIP))
			src.Set(endpointSlicesResource, endpointSlice("hook", port, false))
		}, wantErr: `failed to call webhook: Post "https://hook.sys.svc:443/validate?timeout=10s": no endpoints available for service "hook"`},
		{name: "no such service", service: "hook", objects: func(*admissiontest.Source) {},
			wantErr: `failed to call webhook: Post "https://hook.sys.svc:443/validate?timeout=10s": service "hook" not found`},
		{name: "no such port", service: "hook", objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("hook", 80, corev1.ServiceTypeClusterIP))
		}, wantErr: `failed to call webhook: Post "https://hook.sys.svc:443/validate?timeout=10s": no service port 443 found for service "hook"`},
		{name: "ExternalName services are not supported", service: "hook", objects: func(src *admissiontest.Source) {
			src.Set(servicesResource, service("hook", 443, corev1.ServiceTypeExternalName))
		}, wantErr: `failed to call webhook: Post "https://hook.sys.svc:443/validate?timeout=10s": unsupported service type "ExternalName"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &admissiontest.Source{}
			tc.objects(src)
			h := webhookSpec{name: "svc", caBundle: s.caPEM, rules: podRules(),
				service: &admissionregistrationv1.ServiceReference{Namespace: "sys", Name: tc.service, Path: &path, Port: tc.port}}
			before := s.calls()
			err := validateWith(t, src, createPod(nil), admission.Config{}, validatingConfig("c", h))
			if tc.wantErr != "" {
				want := `Internal error occurred: failed calling webhook "svc": ` + tc.wantErr
				if st := statusOf(t, err); st.Message != want {
					t.Fatalf("got  %s\nwant %s", st.Message, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.calls() != before+1 {
				t.Fatal("the service's endpoint was not called")
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// quietSource can change a resource's objects without changing its
// revision (replaceQuietly): a plugin that trusts revisions does not see
// it. Set makes the revision move again.
type quietSource struct {
	admissiontest.Source
	mu     sync.Mutex
	pinned map[schema.GroupVersionResource]uint64
}

func (s *quietSource) replaceQuietly(gvr schema.GroupVersionResource, objs ...runtime.Object) {
	_, rev, _ := s.Source.List(context.Background(), gvr, "")
	s.Source.Set(gvr, objs...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned == nil {
		s.pinned = map[schema.GroupVersionResource]uint64{}
	}
	s.pinned[gvr] = rev
}

func (s *quietSource) Set(gvr schema.GroupVersionResource, objs ...runtime.Object) {
	s.mu.Lock()
	delete(s.pinned, gvr)
	s.mu.Unlock()
	s.Source.Set(gvr, objs...)
}

func (s *quietSource) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, uint64, error) {
	objs, rev, err := s.Source.List(ctx, gvr, namespace)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.pinned[gvr]; ok {
		rev = r
	}
	return objs, rev, err
}

func TestWebhookConfigurationsRecompiledOnlyWhenTheRevisionChanges(t *testing.T) {
	denier, allower := newServer(t, deny(&metav1.Status{Message: "no"})), newServer(t, allow)
	src := &quietSource{}
	src.Set(validatingConfigurations, validatingConfig("c", hookFor("w", denier)))
	_, v := plugins(t, admission.Config{Source: src})
	ctx := context.Background()
	if err := v.Validate(ctx, createPod(nil)); err == nil {
		t.Fatal("not denied")
	}
	first := v.current.Load()
	// Same revision: the compiled webhooks are kept.
	src.replaceQuietly(validatingConfigurations, validatingConfig("c", hookFor("w", allower)))
	if err := v.Validate(ctx, createPod(nil)); err == nil {
		t.Fatal("the configuration was compiled again at the same revision")
	}
	if v.current.Load() != first {
		t.Fatal("snapshot replaced at the same revision")
	}
	// A new revision is picked up by the next request.
	src.Set(validatingConfigurations, validatingConfig("c", hookFor("w", allower)))
	if err := v.Validate(ctx, createPod(nil)); err != nil {
		t.Fatalf("new configuration not used: %v", err)
	}
	// Removing the configuration stops the calls.
	src.Set(validatingConfigurations)
	calls := allower.calls()
	if err := v.Validate(ctx, createPod(nil)); err != nil || allower.calls() != calls {
		t.Fatalf("err %v, calls %d -> %d", err, calls, allower.calls())
	}
}

func TestWebhookMetricsAsKubernetes(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Both plugins register on one registry, twice: no panic, one series.
	for range 2 {
		if _, err := NewMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	denier := newServer(t, deny(&metav1.Status{Code: 403, Message: "no"}))
	ignored := hookFor("ignored", denier)
	ignored.url = "https://127.0.0.1:1/hook"
	ignored.failurePolicy = admissionregistrationv1.Ignore
	src := &admissiontest.Source{}
	src.Set(validatingConfigurations, validatingConfig("c", hookFor("denier", denier), ignored))
	src.Set(mutatingConfigurations, mutatingConfig("c", hookFor("mut", newServer(t, allow))))
	m, v := plugins(t, admission.Config{Source: src, Metrics: reg})
	if err := m.Admit(context.Background(), createPod(nil)); err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(context.Background(), createPod(nil)); err == nil {
		t.Fatal("not denied")
	}
	want := `
# HELP apiserver_admission_webhook_fail_open_count Admission webhook calls that failed and were ignored (failurePolicy Ignore), by webhook name and type.
# TYPE apiserver_admission_webhook_fail_open_count counter
apiserver_admission_webhook_fail_open_count{name="ignored",type="validating"} 1
# HELP apiserver_admission_webhook_rejection_count Requests an admission webhook made fail, by webhook name, type, operation, error type (calling_webhook_error, apiserver_internal_error or no_error for a denial) and the rejection's HTTP code (at most 600).
# TYPE apiserver_admission_webhook_rejection_count counter
apiserver_admission_webhook_rejection_count{error_type="no_error",name="denier",operation="CREATE",rejection_code="403",type="validating"} 1
# HELP apiserver_admission_webhook_request_total Calls of admission webhooks, by webhook name, type, operation, HTTP code (at most 600) and whether the request was rejected.
# TYPE apiserver_admission_webhook_request_total counter
apiserver_admission_webhook_request_total{code="200",name="mut",operation="CREATE",rejected="false",type="admit"} 1
apiserver_admission_webhook_request_total{code="400",name="ignored",operation="CREATE",rejected="false",type="validating"} 1
apiserver_admission_webhook_request_total{code="403",name="denier",operation="CREATE",rejected="true",type="validating"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_admission_webhook_fail_open_count", "apiserver_admission_webhook_rejection_count", "apiserver_admission_webhook_request_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "apiserver_admission_webhook_admission_duration_seconds"); n != 3 {
		t.Fatalf("duration series = %d, want 3", n)
	}
}

func TestMutatingWebhookIgnoreStopsWhenTheRequestTimedOut(t *testing.T) {
	h := webhookSpec{name: "down", url: "https://127.0.0.1:1/hook", rules: podRules(), failurePolicy: admissionregistrationv1.Ignore}
	src := &admissiontest.Source{}
	src.Set(mutatingConfigurations, mutatingConfig("c", h))
	m, _ := plugins(t, admission.Config{Source: src})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.Admit(ctx, createPod(nil))
	if st := statusOf(t, err); st.Code != 504 || st.Message != "Timeout: request did not complete within requested timeout" {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
}

// allocatingObjects answers EquivalentResources with a new slice, as a
// server's resource mapper may.
type allocatingObjects struct{ widgetObjects }

func (allocatingObjects) EquivalentResources(gvr schema.GroupVersionResource, _ string) []admission.Equivalent {
	return []admission.Equivalent{{Resource: gvr, Kind: podKind}, {Resource: schema.GroupVersionResource{Version: "v2", Resource: gvr.Resource}, Kind: podKind}}
}

// BenchmarkNoMatchingWebhook is the cost webhooks add to a request none
// of them matches: 20 mutating and 20 validating configurations, with
// matchPolicy Equivalent (the API's default) or Exact.
func BenchmarkNoMatchingWebhook(b *testing.B) {
	for _, policy := range []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Exact, admissionregistrationv1.Equivalent} {
		b.Run(string(policy), func(b *testing.B) { benchmarkNoMatch(b, policy) })
	}
}

func benchmarkNoMatch(b *testing.B, policy admissionregistrationv1.MatchPolicyType) {
	src := &admissiontest.Source{}
	var muts, vals []runtime.Object
	for i := range 20 {
		h := webhookSpec{name: fmt.Sprintf("w%d.example.com", i), url: "https://127.0.0.1:1/hook", rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
		}}, matchPolicy: &policy}
		muts = append(muts, mutatingConfig(fmt.Sprintf("c%02d", i), h))
		vals = append(vals, validatingConfig(fmt.Sprintf("c%02d", i), h))
	}
	src.Set(mutatingConfigurations, muts...)
	src.Set(validatingConfigurations, vals...)
	m, v := plugins(b, admission.Config{Source: src})
	ctx := context.Background()
	a := createPod(nil)
	a.Objects = allocatingObjects{}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Admit(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := v.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOneLocalWebhook is the cost of a request one validating
// webhook on loopback allows: the review's encoding, the HTTPS round trip
// on a kept-alive connection, the answer's decoding.
func BenchmarkOneLocalWebhook(b *testing.B) {
	s := newServer(b, allow)
	src := &admissiontest.Source{}
	src.Set(validatingConfigurations, validatingConfig("c", hookFor("v", s)))
	_, v := plugins(b, admission.Config{Source: src})
	ctx := context.Background()
	a := createPod(nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

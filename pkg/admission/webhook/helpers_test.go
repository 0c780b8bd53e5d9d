package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
	"github.com/kplane/kplane/pkg/authentication"
)

var (
	podsResource       = corev1.SchemeGroupVersion.WithResource("pods")
	namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")
	podKind            = corev1.SchemeGroupVersion.WithKind("Pod")
	widgetsV1          = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV2          = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	widgetKindV1       = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetKindV2       = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
)

// widgetObjects serves widgets at example.com/v1 and v2: v1's spec.size is
// v2's spec.count.
type widgetObjects struct{}

func (widgetObjects) ConvertTo(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := obj.(*unstructured.Unstructured).DeepCopy()
	from, to := "size", "count"
	if gvk.Version == "v1" {
		from, to = "count", "size"
	}
	if v, ok, _ := unstructured.NestedFieldCopy(u.Object, "spec", from); ok {
		unstructured.RemoveNestedField(u.Object, "spec", from)
		_ = unstructured.SetNestedField(u.Object, v, "spec", to)
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (widgetObjects) EquivalentResources(gvr schema.GroupVersionResource, _ string) []admission.Equivalent {
	if gvr.GroupResource() != widgetsV1.GroupResource() {
		return nil
	}
	if gvr.Version == "v1" {
		return []admission.Equivalent{{Resource: widgetsV2, Kind: widgetKindV2}}
	}
	return []admission.Equivalent{{Resource: widgetsV1, Kind: widgetKindV1}}
}

func widget(size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	u.SetGroupVersionKind(widgetKindV1)
	u.SetNamespace("ns")
	u.SetName("w")
	return u
}

func pod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// createPod is the admission of a pod's creation in namespace ns.
func createPod(labels map[string]string) *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create,
		Kind:      podKind,
		Resource:  podsResource,
		Namespace: "ns",
		Name:      "p",
		Object:    pod(labels),
		Options:   &metav1.CreateOptions{},
		User:      &authentication.User{Name: "alice", UID: "u-1", Groups: []string{"devs"}, Extra: map[string][]string{"scope": {"a"}}},
		UID:       "req-1",
	}
}

// server is a webhook served by the test over TLS. Its answers come from
// respond; it records the reviews it received.
type server struct {
	*httptest.Server
	caPEM []byte

	mu      sync.Mutex
	reviews []*admissionv1.AdmissionReview
	raw     [][]byte
}

// responder answers a review: its response (the uid is filled in when
// empty), or raw bytes written as they are.
type responder func(r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte)

func allow(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
	return &admissionv1.AdmissionResponse{Allowed: true}, nil
}

func deny(status *metav1.Status) responder {
	return func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: status}, nil
	}
}

func jsonPatch(p string) responder {
	return func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(p), PatchType: &pt}, nil
	}
}

func newServer(t testing.TB, respond responder) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewTLSServer(s.handler(respond))
	t.Cleanup(s.Close)
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

func (s *server) handler(respond responder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		review := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reviews = append(s.reviews, review)
		s.raw = append(s.raw, body)
		s.mu.Unlock()
		resp, raw := respond(review)
		if raw != nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(raw)
			return
		}
		if resp.UID == "" && review.Request != nil {
			resp.UID = review.Request.UID
		}
		out, _ := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Response: resp,
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

func (s *server) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reviews)
}

func (s *server) last(t testing.TB) *admissionv1.AdmissionReview {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reviews) == 0 {
		t.Fatal("the webhook was not called")
	}
	return s.reviews[len(s.reviews)-1]
}

// webhookSpec is a webhook's configuration in tests, turned into a
// mutating or validating webhook.
type webhookSpec struct {
	name              string
	url               string
	caBundle          []byte
	service           *admissionregistrationv1.ServiceReference
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     admissionregistrationv1.FailurePolicyType
	matchPolicy       *admissionregistrationv1.MatchPolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	sideEffects       admissionregistrationv1.SideEffectClass
	timeoutSeconds    *int32
	versions          []string
	reinvocation      admissionregistrationv1.ReinvocationPolicyType
	conditions        []admissionregistrationv1.MatchCondition
}

func podRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	}
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
}

// hookFor is a webhook of s matching every pod request.
func hookFor(name string, s *server) webhookSpec {
	return webhookSpec{name: name, url: s.URL + "/hook", caBundle: s.caPEM, rules: podRules()}
}

func (w webhookSpec) clientConfig() admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: w.caBundle, Service: w.service}
	if w.url != "" {
		u := w.url
		cc.URL = &u
	}
	return cc
}

func (w webhookSpec) defaults() webhookSpec {
	if w.failurePolicy == "" {
		w.failurePolicy = admissionregistrationv1.Fail
	}
	if w.sideEffects == "" {
		w.sideEffects = admissionregistrationv1.SideEffectClassNone
	}
	if w.versions == nil {
		w.versions = []string{"v1"}
	}
	if w.reinvocation == "" {
		w.reinvocation = admissionregistrationv1.NeverReinvocationPolicy
	}
	return w
}

func mutatingConfig(name string, hooks ...webhookSpec) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range hooks {
		w = w.defaults()
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: w.name, ClientConfig: w.clientConfig(), Rules: w.rules, FailurePolicy: &w.failurePolicy,
			MatchPolicy: w.matchPolicy, NamespaceSelector: w.namespaceSelector, ObjectSelector: w.objectSelector,
			SideEffects: &w.sideEffects, TimeoutSeconds: w.timeoutSeconds, AdmissionReviewVersions: w.versions,
			ReinvocationPolicy: &w.reinvocation, MatchConditions: w.conditions,
		})
	}
	return c
}

func validatingConfig(name string, hooks ...webhookSpec) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range hooks {
		w = w.defaults()
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: w.name, ClientConfig: w.clientConfig(), Rules: w.rules, FailurePolicy: &w.failurePolicy,
			MatchPolicy: w.matchPolicy, NamespaceSelector: w.namespaceSelector, ObjectSelector: w.objectSelector,
			SideEffects: &w.sideEffects, TimeoutSeconds: w.timeoutSeconds, AdmissionReviewVersions: w.versions,
			MatchConditions: w.conditions,
		})
	}
	return c
}

// plugins builds both plugins on src and closes their connections when
// the test ends.
func plugins(t testing.TB, cfg admission.Config) (mutator, validator) {
	t.Helper()
	m, err := NewMutating(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValidating(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.(mutator).closeIdle()
		v.(validator).closeIdle()
	})
	return m.(mutator), v.(validator)
}

// validateWith runs the validating plugin over the configurations given.
func validateWith(t testing.TB, src *admissiontest.Source, a *admission.Attributes, cfg admission.Config, configs ...runtime.Object) error {
	t.Helper()
	src.Set(validatingConfigurations, configs...)
	cfg.Source = src
	_, v := plugins(t, cfg)
	return v.Validate(context.Background(), a)
}

func admitWith(t testing.TB, src *admissiontest.Source, a *admission.Attributes, cfg admission.Config, configs ...runtime.Object) error {
	t.Helper()
	src.Set(mutatingConfigurations, configs...)
	cfg.Source = src
	m, _ := plugins(t, cfg)
	return m.Admit(context.Background(), a)
}

func statusOf(t testing.TB, err error) metav1.Status {
	t.Helper()
	var se *apierrors.StatusError
	if !errorsAs(err, &se) {
		t.Fatalf("error %v (%T) is not a StatusError", err, err)
	}
	return se.ErrStatus
}

// serverCert is a CA and a serving certificate for dnsName signed by it.
func serverCert(t testing.TB, dnsName string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// newServiceServer serves respond with a certificate for dnsName only.
func newServiceServer(t testing.TB, dnsName string, respond responder) (*server, int) {
	t.Helper()
	cert, caPEM := serverCert(t, dnsName)
	s := &server{caPEM: caPEM}
	s.Server = httptest.NewUnstartedServer(s.handler(respond))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	var n int
	for _, c := range port {
		n = n*10 + int(c-'0')
	}
	return s, n
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

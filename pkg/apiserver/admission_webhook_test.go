package apiserver

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookServer is an admission webhook over TLS: it labels ConfigMaps
// (mutating, /mutate) and refuses those labelled deny (/validate).
func webhookServer(t testing.TB) (*httptest.Server, []byte) {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, r *http.Request, decide func(*admissionv1.AdmissionRequest, *corev1.ConfigMap) *admissionv1.AdmissionResponse) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		resp := decide(review.Request, &cm)
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	}
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(_ *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			pt := admissionv1.PatchTypeJSONPatch
			patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
			if cm.Labels != nil {
				patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
			}
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(patch), Warnings: []string{"mutated by the test webhook"}}
		})
	})
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(req *admissionv1.AdmissionRequest, cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
			if cm.Labels["deny"] != "" {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "labelled deny", Code: http.StatusForbidden}}
			}
			if cm.Labels["mutated"] != "yes" {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "validating webhooks run after mutating ones: not mutated", Code: http.StatusForbidden}}
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
	})
	hs := httptest.NewTLSServer(mux)
	t.Cleanup(hs.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	return hs, ca
}

func webhookRule(resources ...string) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources},
	}}
}

// runControllers runs e's server controllers (the admission caches among
// them) until the test ends.
func runControllers(t testing.TB, e *testEnv) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.server.RunControllers(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

func installWebhooks(t testing.TB, e *testEnv, ctx context.Context, url string, ca []byte, resources ...string) {
	none := admissionregistrationv1.SideEffectClassNone
	mutate, validate := url+"/mutate", url+"/validate"
	var mcfg admissionregistrationv1.MutatingWebhookConfiguration
	mcfg.Name = "test"
	mcfg.Webhooks = []admissionregistrationv1.MutatingWebhook{{
		Name: "mutate.test.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &mutate, CABundle: ca},
		Rules: webhookRule(resources...), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
	}}
	var vcfg admissionregistrationv1.ValidatingWebhookConfiguration
	vcfg.Name = "test"
	vcfg.Webhooks = []admissionregistrationv1.ValidatingWebhook{{
		Name: "validate.test.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &validate, CABundle: ca},
		Rules: webhookRule(resources...), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
	}}
	for _, c := range []struct {
		path, resource string
		obj            any
	}{
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "mutatingwebhookconfigurations", &mcfg},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "validatingwebhookconfigurations", &vcfg},
	} {
		r := e.do(http.MethodPost, c.path, c.obj)
		r.expect(t, http.StatusCreated, "")
		var created metav1.ObjectMeta
		var out struct {
			Metadata *metav1.ObjectMeta `json:"metadata"`
		}
		out.Metadata = &created
		r.decode(t, &out)
		if err := e.server.WaitForAdmission(ctx, admissionregistrationv1.SchemeGroupVersion.WithResource(c.resource), created.ResourceVersion); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWebhooksThroughTheServer(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	hs, ca := webhookServer(t)
	installWebhooks(t, e, ctx, hs.URL, ca, "configmaps")

	r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	r.expect(t, http.StatusCreated, "")
	var got corev1.ConfigMap
	r.decode(t, &got)
	if got.Labels["mutated"] != "yes" {
		t.Fatalf("the mutating webhook's patch was not stored: %v", got.Labels)
	}
	if w := strings.Join(r.header.Values("Warning"), "\n"); !strings.Contains(w, "mutated by the test webhook") {
		t.Fatalf("warnings = %q", w)
	}
	r = e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"deny": "1"}}})
	r.expect(t, http.StatusForbidden, "")
	if msg := r.status(t).Message; msg != `admission webhook "validate.test.example.com" denied the request: labelled deny` {
		t.Fatalf("message = %q", msg)
	}
	e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/b", nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)
	// A dry run calls the webhooks (side effects None) and stores nothing.
	r = e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps?dryRun=All", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"deny": "1"}}})
	r.expect(t, http.StatusForbidden, "")
	// The webhook going away: failurePolicy Fail (the default) refuses
	// with Kubernetes' error, and nothing is stored.
	hs.Close()
	r = e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}})
	r.expect(t, http.StatusInternalServerError, metav1.StatusReasonInternalError)
	if msg := r.status(t).Message; !strings.Contains(msg, `failed calling webhook "mutate.test.example.com": failed to call webhook: Post`) {
		t.Fatalf("message = %q", msg)
	}
	e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/d", nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)
	// Other resources are not affected.
	e.do(http.MethodPost, "/api/v1/namespaces/default/secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}).expect(t, http.StatusCreated, "")
	metrics := string(e.do(http.MethodGet, "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_admission_webhook_admission_duration_seconds_count{name="validate.test.example.com",operation="CREATE",rejected="true",type="validating"}`,
		`apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="mutate.test.example.com",operation="CREATE",rejection_code=`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s in\n%s", want, metrics)
		}
	}
}

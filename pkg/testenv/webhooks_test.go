package testenv_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// denyHandler is a plain net/http validating webhook: it refuses
// ConfigMaps that carry the label deny.
func denyHandler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			t.Errorf("decode review: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(review.Request.Object.Raw, &cm); err != nil {
			t.Errorf("decode object: %v", err)
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: cm.Labels["deny"] == ""}
		if !resp.Allowed {
			resp.Result = &metav1.Status{Message: "configmaps labelled deny are refused", Code: http.StatusForbidden}
		}
		review.Response = resp
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	})
	return mux
}

func TestWithWebhooksServesAPlainHandler(t *testing.T) {
	path := "/validate"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.example.com",
			// As an operator's manifest names it: testenv rewrites it.
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: &path}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	env := testenv.Start(t, testenv.WithWebhooks(cfg), testenv.WithWebhookHandler(denyHandler(t)))
	if env.Webhook == nil || env.Webhook.Port == 0 || env.Webhook.CertDir == "" {
		t.Fatalf("Webhook = %+v", env.Webhook)
	}
	installed, err := client.NewResource(env.Client, client.ValidatingWebhookConfigurations).Get(t.Context(), "deny", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := installed.Webhooks[0].ClientConfig.URL; u == nil || *u != env.Webhook.URL("/validate") || installed.Webhooks[0].ClientConfig.Service != nil {
		t.Fatalf("clientConfig = %+v, want the url %s", installed.Webhooks[0].ClientConfig, env.Webhook.URL("/validate"))
	}
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("default")
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an allowed create: %v", err)
	}
	_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "no", Labels: map[string]string{"deny": "yes"}}}, metav1.CreateOptions{})
	want := `admission webhook "deny.example.com" denied the request: configmaps labelled deny are refused`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a denied create = %v, want %q", err, want)
	}
}

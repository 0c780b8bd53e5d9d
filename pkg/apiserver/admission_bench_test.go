package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
)

// BenchmarkAdmissionCreate measures what admission adds to a create of a
// ConfigMap over loopback HTTP: no chain at all, kube-apiserver's default
// chain with no webhook configured, the same with 20 mutating and 20
// validating webhooks none of which matches, and one validating webhook
// served locally over TLS. Compare the sub-benchmarks' ns/op:
//
//	go test -run '^$' -bench BenchmarkAdmissionCreate -benchtime 2000x ./pkg/apiserver/
func BenchmarkAdmissionCreate(b *testing.B) {
	for _, tc := range []struct {
		name  string
		chain func(*Config)
		setup func(b *testing.B, e *testEnv)
	}{
		{name: "chain=none", chain: func(c *Config) {
			// Only the namespace check, which kplane always had.
			var off []string
			for _, n := range admission.DefaultOnPlugins {
				if n != admission.NamespaceLifecycle {
					off = append(off, n)
				}
			}
			c.Admission = AdmissionConfig{Disable: off}
		}},
		{name: "chain=default/webhooks=0"},
		{name: "chain=default/webhooks=40-none-matching", setup: func(b *testing.B, e *testEnv) {
			runControllers(b, e)
			hs, ca := webhookServer(b)
			for i := range 20 {
				installNamed(b, e, fmt.Sprintf("other-%d", i), hs.URL, ca, "secrets")
			}
		}},
		{name: "chain=default/webhooks=1-local", setup: func(b *testing.B, e *testEnv) {
			ctx := runControllers(b, e)
			hs, ca := webhookServer(b)
			installWebhooks(b, e, ctx, hs.URL, ca, "configmaps")
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var mutate []func(*Config)
			if tc.chain != nil {
				mutate = append(mutate, tc.chain)
			}
			e := newTestEnv(b, mutate...)
			if tc.setup != nil {
				tc.setup(b, e)
			} else {
				runControllers(b, e)
			}
			tr := e.http.Client().Transport.(*http.Transport).Clone()
			c := &http.Client{Transport: tr}
			b.Cleanup(tr.CloseIdleConnections)
			url := e.http.URL + "/api/v1/namespaces/default/configmaps"
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				n++
				body, _ := json.Marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", n)}, Data: map[string]string{"k": "v"}})
				benchDo(b, c, http.MethodPost, url, body, http.StatusCreated)
			}
		})
	}
}

// installNamed installs a mutating and a validating configuration named
// name whose webhooks match only resources.
func installNamed(b *testing.B, e *testEnv, name, url string, ca []byte, resources ...string) {
	none := admissionregistrationv1.SideEffectClassNone
	u := url + "/validate"
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name: name + ".m.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca},
		Rules: webhookRule(resources...), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
	}}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name: name + ".v.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca},
		Rules: webhookRule(resources...), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
	}}}
	e.do(http.MethodPost, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", m).expect(b, http.StatusCreated, "")
	e.do(http.MethodPost, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", v).expect(b, http.StatusCreated, "")
}

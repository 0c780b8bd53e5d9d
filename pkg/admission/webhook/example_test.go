package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// A validating webhook that refuses pods, served over TLS, its
// certificate as the caBundle.
func ExampleNewValidating() {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		review.Response = &admissionv1.AdmissionResponse{
			UID:     review.Request.UID,
			Allowed: false,
			Result:  &metav1.Status{Code: http.StatusForbidden, Message: "pods need an owner label"},
		}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	defer srv.Close()

	url := srv.URL + "/validate"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	// The cluster's objects: a test's fake; the server passes its own.
	src := &admissiontest.Source{}
	src.Set(validatingConfigurations, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "owners"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "owners.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules:                   podRules(admissionregistrationv1.Create),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	})

	plugin, err := NewValidating(&admission.Config{Source: src})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer plugin.(validator).closeIdle()
	err = plugin.(admission.ValidationInterface).Validate(context.Background(), createPod(nil))
	fmt.Println(err)
	// Output: admission webhook "owners.example.com" denied the request: pods need an owner label
}

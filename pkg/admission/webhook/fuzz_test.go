package webhook

import (
	"encoding/json"
	"testing"

	"github.com/kplane/kplane/internal/patch"
	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// FuzzWebhookAnswer feeds arbitrary answers to the decoding, checking and
// patching a webhook's answer goes through: none may panic, and an
// accepted patch yields an object of the request's type or an error.
func FuzzWebhookAnswer(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImEiOiJiIn19XQ=="}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,"status":{"code":700}}}`))
	f.Add([]byte(`{"response":null}`))
	f.Add([]byte(`[`))
	src := &admissiontest.Source{}
	m, err := NewMutating(&admission.Config{Source: src})
	if err != nil {
		f.Fatal(err)
	}
	p := m.(mutator).plugin
	v, err := newView(createPod(nil), podKind)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := p.decodeResponse("v1", "u", body)
		if err != nil {
			return
		}
		if !r.allowed {
			_ = denied("w", r.result).Error()
			return
		}
		var ops []map[string]json.RawMessage
		if len(r.patch) == 0 || json.Unmarshal(r.patch, &ops) != nil {
			return
		}
		patched, err := patch.JSONPatch(v.objectJSON, r.patch)
		if err != nil {
			return
		}
		if obj, err := decodeLike(v.object, patched); err == nil && obj == nil {
			t.Fatal("decoded nothing without error")
		}
	})
}

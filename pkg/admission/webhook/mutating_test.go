package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

func TestMutatingWebhookJSONPatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		respond     responder
		wantLabels  map[string]string
		wantErr     string
		wantMutated bool
		wantPatch   string
	}{
		{
			name:        "patch applied to the typed object",
			respond:     jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}}]`),
			wantLabels:  map[string]string{"injected": "yes"},
			wantMutated: true,
			wantPatch:   `{"configuration":"c","webhook":"m.example.com","patch":[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}}],"patchType":"JSONPatch"}`,
		},
		{
			name:    "no patch changes nothing",
			respond: allow,
		},
		{
			name:    "an empty patch changes nothing",
			respond: jsonPatch(`[]`),
		},
		{
			name:      "a patch that changes nothing is not a mutation",
			respond:   jsonPatch(`[{"op":"replace","path":"/metadata/name","value":"p"}]`),
			wantPatch: `{"configuration":"c","webhook":"m.example.com","patch":[{"op":"replace","path":"/metadata/name","value":"p"}],"patchType":"JSONPatch"}`,
		},
		{
			name:    "a patch that does not apply is an internal error",
			respond: jsonPatch(`[{"op":"remove","path":"/spec/nodeName"}]`),
			wantErr: "Internal error occurred: patch cannot be applied",
		},
		{
			name:    "a patch that makes the object undecodable is an internal error",
			respond: jsonPatch(`[{"op":"replace","path":"/spec/containers","value":"nginx"}]`),
			wantErr: "Internal error occurred: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container",
		},
		{
			name:    "a patch that changes the kind is an internal error",
			respond: jsonPatch(`[{"op":"replace","path":"/kind","value":"Service"}]`),
			wantErr: `Internal error occurred: admission webhook "m.example.com" attempted to change the object's kind from /v1, Kind=Pod to /v1, Kind=Service`,
		},
		{
			name: "a patch without patchType is an invalid answer",
			respond: func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
				return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(`[]`)}, nil
			},
			wantErr: `Internal error occurred: failed calling webhook "m.example.com": received invalid webhook response: webhook returned response.patch but not response.patchType`,
		},
		{
			name:    "an undecodable patch is a call failure",
			respond: jsonPatch(`{"op":"add"}`),
			wantErr: `Internal error occurred: failed calling webhook "m.example.com": received undecodable patch in webhook response: json: cannot unmarshal object into Go value of type []map[string]json.RawMessage`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.respond)
			a := createPod(nil)
			before := a.Object.DeepCopyObject()
			err := admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", hookFor("m.example.com", s)))
			if tc.wantErr != "" {
				st := statusOf(t, err)
				if st.Code != 500 || !strings.HasPrefix(st.Message, tc.wantErr) {
					t.Fatalf("got %d %q\nwant 500 %q", st.Code, st.Message, tc.wantErr)
				}
				if diff := cmp.Diff(before, a.Object); diff != "" {
					t.Fatalf("a failed patch changed the object:\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, ok := a.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("object is %T, want *corev1.Pod", a.Object)
			}
			if diff := cmp.Diff(tc.wantLabels, p.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if !p.GetObjectKind().GroupVersionKind().Empty() {
				t.Errorf("the typed object got a kind %v it did not have", p.GetObjectKind().GroupVersionKind())
			}
			ann := a.Annotations()
			var mutation struct{ Mutated bool }
			if err := json.Unmarshal([]byte(ann["mutation.webhook.admission.k8s.io/round_0_index_0"]), &mutation); err != nil || mutation.Mutated != tc.wantMutated {
				t.Errorf("mutation annotation %q, want mutated=%v", ann["mutation.webhook.admission.k8s.io/round_0_index_0"], tc.wantMutated)
			}
			if got := ann["patch.webhook.admission.k8s.io/round_0_index_0"]; got != tc.wantPatch {
				t.Errorf("patch annotation\n got %s\nwant %s", got, tc.wantPatch)
			}
		})
	}
}

func TestMutatingWebhookCannotPatchDelete(t *testing.T) {
	s := newServer(t, jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{}}]`))
	a := createPod(nil)
	a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
	err := admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", hookFor("m", s)))
	want := `Internal error occurred: admission webhook "m" attempted to modify the object, which is not supported for this operation`
	if st := statusOf(t, err); st.Message != want {
		t.Fatalf("got %q, want %q", st.Message, want)
	}
}

// labeller is a mutating webhook that adds label key=value to pods that
// do not have it yet, logging each call in calls.
func labeller(key string, log *[]string, mu *sync.Mutex) responder {
	return func(r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
		mu.Lock()
		*log = append(*log, key)
		mu.Unlock()
		var p corev1.Pod
		_ = json.Unmarshal(r.Request.Object.Raw, &p)
		if _, ok := p.Labels[key]; ok {
			return &admissionv1.AdmissionResponse{Allowed: true}, nil
		}
		op := `[{"op":"add","path":"/metadata/labels","value":{"` + key + `":"x"}}]`
		if p.Labels != nil {
			op = `[{"op":"add","path":"/metadata/labels/` + key + `","value":"x"}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(op), PatchType: &pt}, nil
	}
}

func TestMutatingWebhooksRunInOrderEachSeeingTheLast(t *testing.T) {
	var log []string
	var mu sync.Mutex
	a1, a2, b1 := newServer(t, labeller("a1", &log, &mu)), newServer(t, labeller("a2", &log, &mu)), newServer(t, labeller("b1", &log, &mu))
	a := createPod(nil)
	// Configurations run by name, webhooks in their order.
	err := admitWith(t, &admissiontest.Source{}, a, admission.Config{},
		mutatingConfig("b", hookFor("b1", b1)), mutatingConfig("a", hookFor("a1", a1), hookFor("a2", a2)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "b1"}, log); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a1": "x", "a2": "x", "b1": "x"}, a.Object.(*corev1.Pod).Labels); diff != "" {
		t.Fatalf("labels (-want +got):\n%s", diff)
	}
	// b1 saw what a1 and a2 did.
	var seen corev1.Pod
	_ = json.Unmarshal(b1.last(t).Request.Object.Raw, &seen)
	if len(seen.Labels) != 2 {
		t.Fatalf("b1 saw labels %v", seen.Labels)
	}
	if _, ok := a.Annotations()["mutation.webhook.admission.k8s.io/round_0_index_2"]; !ok {
		t.Fatalf("annotations %v lack the third webhook's", a.Annotations())
	}
}

func TestMutatingWebhookReinvocationAsKubernetes(t *testing.T) {
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	for _, tc := range []struct {
		name       string
		first      admissionregistrationv1.ReinvocationPolicyType
		secondKey  string // the label the second webhook adds; "" adds none
		wantCalls  []string
		wantRound1 bool
	}{
		{name: "IfNeeded webhook called again after a later change", first: ifNeeded, secondKey: "second", wantCalls: []string{"first", "second", "first"}, wantRound1: true},
		{name: "Never is not called again", first: admissionregistrationv1.NeverReinvocationPolicy, secondKey: "second", wantCalls: []string{"first", "second"}},
		{name: "no later change: no reinvocation", first: ifNeeded, wantCalls: []string{"first", "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var mu sync.Mutex
			first := newServer(t, labeller("first", &log, &mu))
			second := newServer(t, func(r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
				if tc.secondKey == "" {
					mu.Lock()
					log = append(log, "none")
					mu.Unlock()
					return &admissionv1.AdmissionResponse{Allowed: true}, nil
				}
				return labeller(tc.secondKey, &log, &mu)(r)
			})
			h1 := hookFor("first", first)
			h1.reinvocation = tc.first
			src := &admissiontest.Source{}
			src.Set(mutatingConfigurations, mutatingConfig("a", h1), mutatingConfig("b", hookFor("second", second)))
			cfg := admission.Config{Source: src}
			chain, err := admission.NewChain([]string{admission.MutatingAdmissionWebhook}, admission.Plugins{admission.MutatingAdmissionWebhook: NewMutating}, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			a := createPod(nil)
			err = chain.Admit(context.Background(), a)
			t.Cleanup(func() { first.CloseClientConnections(); second.CloseClientConnections() })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCalls, log); diff != "" {
				t.Fatalf("calls (-want +got):\n%s", diff)
			}
			_, round1 := a.Annotations()["mutation.webhook.admission.k8s.io/round_1_index_0"]
			if round1 != tc.wantRound1 {
				t.Fatalf("round 1 annotation present = %v, want %v: %v", round1, tc.wantRound1, a.Annotations())
			}
		})
	}
}

func TestMutatingWebhookAuditAnnotationsAndWarnings(t *testing.T) {
	s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"careful"}, AuditAnnotations: map[string]string{"k": "v"}}, nil
	})
	a := createPod(nil)
	if err := admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", hookFor("m.example.com", s))); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"m.example.com/k": "v",
		"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"c","webhook":"m.example.com","mutated":false}`,
	}
	if diff := cmp.Diff(want, a.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"careful"}, a.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestMutatingWebhookDenial(t *testing.T) {
	s := newServer(t, deny(&metav1.Status{Code: 403, Message: "no"}))
	err := admitWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, mutatingConfig("c", hookFor("m", s)))
	if st := statusOf(t, err); st.Code != 403 || st.Message != `admission webhook "m" denied the request: no` {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
}

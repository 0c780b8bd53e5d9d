package webhook

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

func TestValidatingWebhookDenialAsKubernetesToStatusErr(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result *metav1.Status
		want   metav1.Status
	}{
		{
			name:   "message and code are kept, prefixed with the webhook",
			result: &metav1.Status{Code: 403, Message: "pods must have an owner", Reason: metav1.StatusReasonForbidden},
			want:   metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: `admission webhook "v.example.com" denied the request: pods must have an owner`},
		},
		{
			name:   "a code below 400 becomes 400",
			result: &metav1.Status{Code: 200, Status: metav1.StatusSuccess, Message: "no"},
			want:   metav1.Status{Status: metav1.StatusFailure, Code: 400, Message: `admission webhook "v.example.com" denied the request: no`},
		},
		{
			name:   "no message: the reason explains",
			result: &metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid},
			want:   metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid, Message: `admission webhook "v.example.com" denied the request: Invalid`},
		},
		{
			name:   "no result at all",
			result: nil,
			want:   metav1.Status{Status: metav1.StatusFailure, Code: 400, Message: `admission webhook "v.example.com" denied the request without explanation`},
		},
		{
			name:   "details are passed on",
			result: &metav1.Status{Code: 409, Message: "taken", Details: &metav1.StatusDetails{Name: "p", Causes: []metav1.StatusCause{{Field: "spec"}}}},
			want:   metav1.Status{Status: metav1.StatusFailure, Code: 409, Message: `admission webhook "v.example.com" denied the request: taken`, Details: &metav1.StatusDetails{Name: "p", Causes: []metav1.StatusCause{{Field: "spec"}}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, deny(tc.result))
			err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, validatingConfig("c", hookFor("v.example.com", s)))
			if diff := cmp.Diff(tc.want, statusOf(t, err)); diff != "" {
				t.Fatalf("status (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		s := newServer(t, allow)
		if err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, validatingConfig("c", hookFor("v.example.com", s))); err != nil {
			t.Fatal(err)
		}
		if s.calls() != 1 {
			t.Fatalf("calls = %d, want 1", s.calls())
		}
	})
}

// failing is a webhook answer that is not a valid one.
func failing(t *testing.T, kind string) (url string, ca []byte, wantReason func(uid string) string) {
	t.Helper()
	switch kind {
	case "connection refused":
		s := newServer(t, allow)
		url, ca = s.URL+"/hook", s.caPEM
		s.Close()
		host := strings.TrimPrefix(s.URL, "https://")
		return url, ca, func(string) string {
			return fmt.Sprintf(`failed to call webhook: Post "https://%s/hook?timeout=10s": dial tcp %s: connect: connection refused`, host, host)
		}
	case "malformed JSON":
		s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			return nil, []byte("{not json")
		})
		return s.URL + "/hook", s.caPEM, func(string) string {
			return "failed to call webhook: couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string"
		}
	case "wrong uid":
		s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			return &admissionv1.AdmissionResponse{UID: "not-the-uid", Allowed: true}, nil
		})
		return s.URL + "/hook", s.caPEM, func(uid string) string {
			return fmt.Sprintf(`received invalid webhook response: expected response.uid=%q, got "not-the-uid"`, uid)
		}
	case "no response":
		s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			return nil, []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)
		})
		return s.URL + "/hook", s.caPEM, func(string) string { return "received invalid webhook response: webhook response was absent" }
	case "wrong kind":
		s := newServer(t, func(r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			return nil, []byte(fmt.Sprintf(`{"response":{"uid":%q,"allowed":true}}`, r.Request.UID))
		})
		return s.URL + "/hook", s.caPEM, func(string) string {
			return `received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind=`
		}
	case "huge response":
		s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			return nil, bytes.Repeat([]byte(" "), maxResponseBytes+10)
		})
		return s.URL + "/hook", s.caPEM, func(string) string {
			return fmt.Sprintf("failed to call webhook: the webhook response is larger than %d bytes", maxResponseBytes)
		}
	case "server error":
		s := newServer(t, allow)
		s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("boom\n"))
		})
		return s.URL + "/hook", s.caPEM, func(string) string {
			return `failed to call webhook: an error on the server ("boom") has prevented the request from succeeding`
		}
	case "unknown CA":
		s := newServer(t, allow)
		_, otherCA := serverCert(t, "example.com")
		host := strings.TrimPrefix(s.URL, "https://")
		return s.URL + "/hook", otherCA, func(string) string {
			return fmt.Sprintf(`failed to call webhook: Post "https://%s/hook?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`, host)
		}
	}
	t.Fatalf("unknown failure %q", kind)
	return
}

func TestWebhookCallFailuresFollowFailurePolicy(t *testing.T) {
	kinds := []string{"connection refused", "malformed JSON", "wrong uid", "no response", "wrong kind", "huge response", "server error", "unknown CA"}
	for _, kind := range kinds {
		for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			for _, mutating := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/mutating=%v", kind, policy, mutating)
				t.Run(name, func(t *testing.T) {
					url, ca, wantReason := failing(t, kind)
					h := webhookSpec{name: "w.example.com", url: url, caBundle: ca, rules: podRules(), failurePolicy: policy}
					a := createPod(nil)
					var err error
					if mutating {
						err = admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", h))
					} else {
						err = validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", h))
					}
					if policy == admissionregistrationv1.Ignore {
						if err != nil {
							t.Fatalf("failurePolicy Ignore: %v", err)
						}
						key := "failed-open.validating.webhook.admission.k8s.io/round_0_index_0"
						if mutating {
							key = "failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"
						}
						if got := a.Annotations()[key]; got != "w.example.com" {
							t.Fatalf("annotation %s = %q, want the webhook's name; all: %v", key, got, a.Annotations())
						}
						return
					}
					st := statusOf(t, err)
					if st.Code != 500 || st.Reason != metav1.StatusReasonInternalError {
						t.Fatalf("status = %d %s, want 500 InternalError", st.Code, st.Reason)
					}
					uid := ""
					if strings.Contains(kind, "uid") {
						uid = uidIn(st.Message)
					}
					want := `Internal error occurred: failed calling webhook "w.example.com": ` + wantReason(uid)
					if !strings.HasPrefix(st.Message, want) {
						t.Fatalf("message\n got %s\nwant %s", st.Message, want)
					}
				})
			}
		}
	}
}

// uidIn finds the uid the error quotes (each call has a new one).
func uidIn(msg string) string {
	_, rest, _ := strings.Cut(msg, `response.uid="`)
	uid, _, _ := strings.Cut(rest, `"`)
	return uid
}

func TestWebhookTimeoutSecondsBoundsTheCall(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		name           string
		timeoutSeconds *int32
		requestTimeout time.Duration
	}{
		{name: "timeoutSeconds 1", timeoutSeconds: &one},
		{name: "the request's own deadline comes first", requestTimeout: 500 * time.Millisecond},
	} {
		for _, mutating := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/mutating=%v", tc.name, mutating), func(t *testing.T) {
				release := make(chan struct{})
				s := newServer(t, allow)
				s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				})
				t.Cleanup(func() { close(release) })
				h := hookFor("slow.example.com", s)
				h.timeoutSeconds = tc.timeoutSeconds
				ctx := context.Background()
				if tc.requestTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.requestTimeout)
					defer cancel()
				}
				src := &admissiontest.Source{}
				var err error
				if mutating {
					src.Set(mutatingConfigurations, mutatingConfig("c", h))
					m, _ := plugins(t, admission.Config{Source: src})
					err = m.Admit(ctx, createPod(nil))
				} else {
					src.Set(validatingConfigurations, validatingConfig("c", h))
					_, v := plugins(t, admission.Config{Source: src})
					err = v.Validate(ctx, createPod(nil))
				}
				st := statusOf(t, err)
				// The deadline is sent rounded up to a second.
				want := fmt.Sprintf(`Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "%s/hook?timeout=1s": context deadline exceeded`, s.URL)
				if st.Code != 500 || st.Message != want {
					t.Fatalf("got %d %q\nwant 500 %q", st.Code, st.Message, want)
				}
			})
		}
	}
}

func TestValidatingWebhookAnswerMustNotCarryAPatch(t *testing.T) {
	s := newServer(t, jsonPatch(`[]`))
	err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, validatingConfig("c", hookFor("v", s)))
	want := `Internal error occurred: failed calling webhook "v": received invalid webhook response: validating webhook may not return response.patch`
	if st := statusOf(t, err); st.Message != want {
		t.Fatalf("got %q, want %q", st.Message, want)
	}
}

func TestValidatingWebhooksRunInParallel(t *testing.T) {
	// Each webhook answers only once both were called: sequential calls
	// would time out.
	var wg sync.WaitGroup
	wg.Add(2)
	barrier := func(msg string) responder {
		return func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
			wg.Done()
			wg.Wait()
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: msg}}, nil
		}
	}
	first, second := newServer(t, barrier("first")), newServer(t, barrier("second"))
	// Configuration "a" sorts first: its denial is the one returned.
	err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{},
		validatingConfig("b", hookFor("second", second)), validatingConfig("a", hookFor("first", first)))
	if st := statusOf(t, err); st.Message != `admission webhook "first" denied the request: first` {
		t.Fatalf("message = %q", st.Message)
	}
}

func TestValidatingWebhookWarningsAndAuditAnnotations(t *testing.T) {
	s := newServer(t, func(*admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"deprecated field", "", "second"}, AuditAnnotations: map[string]string{"decision": "ok"}}, nil
	})
	a := createPod(nil)
	if err := validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", hookFor("v.example.com", s))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deprecated field", "second"}, a.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"v.example.com/decision": "ok"}, a.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestWebhooksNeverCalledForAdmissionConfiguration(t *testing.T) {
	s := newServer(t, deny(nil))
	h := hookFor("v", s)
	h.rules = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
	}}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
		a := &admission.Attributes{
			Operation: admission.Create,
			Kind:      admissionregistrationv1.SchemeGroupVersion.WithKind(kind),
			Resource:  admissionregistrationv1.SchemeGroupVersion.WithResource(strings.ToLower(kind) + "s"),
			Name:      "x",
		}
		if err := validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", h)); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if s.calls() != 0 {
		t.Fatalf("webhook called %d times for admission configuration", s.calls())
	}
	// Everything else is.
	if err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, validatingConfig("c", h)); err == nil {
		t.Fatal("a pod was not denied")
	}
}

func TestWebhookDryRun(t *testing.T) {
	for _, tc := range []struct {
		sideEffects admissionregistrationv1.SideEffectClass
		wantErr     string
	}{
		{admissionregistrationv1.SideEffectClassNone, ""},
		{admissionregistrationv1.SideEffectClassNoneOnDryRun, ""},
		{admissionregistrationv1.SideEffectClassSome, `admission webhook "v" does not support dry run`},
		{admissionregistrationv1.SideEffectClassUnknown, `admission webhook "v" does not support dry run`},
	} {
		t.Run(string(tc.sideEffects), func(t *testing.T) {
			for _, mutating := range []bool{false, true} {
				s := newServer(t, allow)
				h := hookFor("v", s)
				h.sideEffects = tc.sideEffects
				a := createPod(nil)
				a.DryRun = true
				// Ignore does not hide it: the request cannot be done.
				h.failurePolicy = admissionregistrationv1.Ignore
				var err error
				if mutating {
					err = admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", h))
				} else {
					err = validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", h))
				}
				if tc.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					if r := s.last(t); r.Request.DryRun == nil || !*r.Request.DryRun {
						t.Fatal("request.dryRun is not true")
					}
					continue
				}
				st := statusOf(t, err)
				if st.Code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != tc.wantErr {
					t.Fatalf("got %d %s %q, want 400 BadRequest %q", st.Code, st.Reason, st.Message, tc.wantErr)
				}
				if s.calls() != 0 {
					t.Fatal("a webhook with side effects was called for a dry run")
				}
			}
		})
	}
}

func TestWebhookRequestIsKubernetesAdmissionReview(t *testing.T) {
	s := newServer(t, allow)
	a := createPod(map[string]string{"app": "x"})
	a.Operation = admission.Update
	a.OldObject = pod(nil)
	a.Options = &metav1.UpdateOptions{FieldManager: "kubectl"}
	if err := validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", hookFor("v", s))); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	raw := string(s.raw[0])
	s.mu.Unlock()
	r := s.last(t)
	if r.APIVersion != "admission.k8s.io/v1" || r.Kind != "AdmissionReview" {
		t.Errorf("review is %s %s", r.APIVersion, r.Kind)
	}
	req := r.Request
	if req.UID == "" || req.UID == a.UID {
		t.Errorf("uid = %q: Kubernetes sends a new uid for every call", req.UID)
	}
	want := admissionv1.AdmissionRequest{
		UID:             req.UID,
		Kind:            metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:        metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		RequestKind:     &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		RequestResource: &metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Name:            "p",
		Namespace:       "ns",
		Operation:       admissionv1.Update,
		UserInfo:        req.UserInfo,
		DryRun:          new(bool),
		Object:          req.Object,
		OldObject:       req.OldObject,
		Options:         req.Options,
	}
	if diff := cmp.Diff(want, *req); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if req.UserInfo.Username != "alice" || req.UserInfo.UID != "u-1" || req.UserInfo.Groups[0] != "devs" || req.UserInfo.Extra["scope"][0] != "a" {
		t.Errorf("userInfo = %+v", req.UserInfo)
	}
	for _, s := range []string{
		`"object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"`,
		`"oldObject":{"kind":"Pod","apiVersion":"v1"`,
		`"options":{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl"}`,
		`"labels":{"app":"x"}`,
	} {
		if !strings.Contains(raw, s) {
			t.Errorf("review lacks %s:\n%s", s, raw)
		}
	}
}

func TestWebhookAdmissionReviewVersions(t *testing.T) {
	for _, tc := range []struct {
		versions    []string
		wantVersion string
		wantErr     string
	}{
		{[]string{"v1", "v1beta1"}, "admission.k8s.io/v1", ""},
		{[]string{"v1beta1"}, "admission.k8s.io/v1beta1", ""},
		{[]string{"v2", "v1beta1", "v1"}, "admission.k8s.io/v1beta1", ""},
		{[]string{"v2"}, "", `Internal error occurred: failed calling webhook "v": could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)`},
	} {
		t.Run(strings.Join(tc.versions, ","), func(t *testing.T) {
			s := newServer(t, func(r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, []byte) {
				// v1beta1 answers are not checked for uid nor kind.
				return nil, []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, r.APIVersion, r.Request.UID))
			})
			h := hookFor("v", s)
			h.versions = tc.versions
			err := validateWith(t, &admissiontest.Source{}, createPod(nil), admission.Config{}, validatingConfig("c", h))
			if tc.wantErr != "" {
				if st := statusOf(t, err); st.Message != tc.wantErr {
					t.Fatalf("got %q, want %q", st.Message, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.last(t).APIVersion; got != tc.wantVersion {
				t.Fatalf("sent %s, want %s", got, tc.wantVersion)
			}
		})
	}
}

func TestWebhookDeleteSendsOnlyTheOldObject(t *testing.T) {
	s := newServer(t, allow)
	a := createPod(nil)
	a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
	a.Options = &metav1.DeleteOptions{}
	if err := validateWith(t, &admissiontest.Source{}, a, admission.Config{}, validatingConfig("c", hookFor("v", s))); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	raw := string(s.raw[0])
	s.mu.Unlock()
	for _, want := range []string{`"operation":"DELETE"`, `"object":null`, `"oldObject":{"kind":"Pod","apiVersion":"v1"`, `"options":{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`} {
		if !strings.Contains(raw, want) {
			t.Errorf("review lacks %s:\n%s", want, raw)
		}
	}
}

package client

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestErrors checks that the server's failures come back as StatusErrors
// that the apierrors predicates recognise, whether the body is a Status (as
// kube-apiserver sends) or something else (as proxies and load balancers
// send).
func TestErrors(t *testing.T) {
	podsGR := schema.GroupResource{Resource: "pods"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p1", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "name"), "P1", "a lowercase RFC 1123 subdomain must ..."),
		field.Required(field.NewPath("spec", "containers"), ""),
	})
	tests := []struct {
		name        string
		reply       func(w http.ResponseWriter)
		is          func(error) bool
		wantCode    int32
		wantReason  metav1.StatusReason
		wantMessage string
		check       func(t *testing.T, st metav1.Status)
	}{{
		name:        "not found",
		reply:       func(w http.ResponseWriter) { writeStatus(w, apierrors.NewNotFound(podsGR, "p1")) },
		is:          apierrors.IsNotFound,
		wantCode:    404,
		wantReason:  metav1.StatusReasonNotFound,
		wantMessage: `pods "p1" not found`,
	}, {
		name: "conflict",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, apierrors.NewConflict(podsGR, "p1", errors.New("the object has been modified; please apply your changes to the latest version and try again")))
		},
		is:         apierrors.IsConflict,
		wantCode:   409,
		wantReason: metav1.StatusReasonConflict,
	}, {
		name:       "already exists",
		reply:      func(w http.ResponseWriter) { writeStatus(w, apierrors.NewAlreadyExists(podsGR, "p1")) },
		is:         apierrors.IsAlreadyExists,
		wantCode:   409,
		wantReason: metav1.StatusReasonAlreadyExists,
	}, {
		name:       "invalid with causes",
		reply:      func(w http.ResponseWriter) { writeStatus(w, invalid) },
		is:         apierrors.IsInvalid,
		wantCode:   422,
		wantReason: metav1.StatusReasonInvalid,
		check: func(t *testing.T, st metav1.Status) {
			want := invalid.ErrStatus.Details.Causes
			if diff := cmp.Diff(want, st.Details.Causes); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "expired",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, apierrors.NewResourceExpired("too old resource version: 1 (5)"))
		},
		is:         func(err error) bool { return apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) },
		wantCode:   410,
		wantReason: metav1.StatusReasonExpired,
	}, {
		name: "gone",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410,
				Reason: metav1.StatusReasonGone, Message: "gone"}})
		},
		is:         apierrors.IsGone,
		wantCode:   410,
		wantReason: metav1.StatusReasonGone,
	}, {
		name: "too many requests, text body",
		reply: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte("slow down\n"))
		},
		is:          apierrors.IsTooManyRequests,
		wantCode:    429,
		wantReason:  metav1.StatusReasonTooManyRequests,
		wantMessage: "the server has received too many requests and has asked us to try again later (get pods p1)",
		check: func(t *testing.T, st metav1.Status) {
			if st.Details.RetryAfterSeconds != 3 {
				t.Errorf("retryAfterSeconds = %d, want 3", st.Details.RetryAfterSeconds)
			}
			if len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != "slow down" {
				t.Errorf("causes = %+v, want the body text", st.Details.Causes)
			}
		},
	}, {
		name: "not found, JSON body that is not a Status",
		reply: func(w http.ResponseWriter) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "nope"})
		},
		is:          apierrors.IsNotFound,
		wantCode:    404,
		wantReason:  metav1.StatusReasonNotFound,
		wantMessage: `the server could not find the requested resource (get pods p1)`,
	}, {
		name: "internal error, no body",
		reply: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
		},
		is:         apierrors.IsInternalError,
		wantCode:   500,
		wantReason: metav1.StatusReasonInternalError,
	}, {
		name: "forbidden",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, apierrors.NewForbidden(podsGR, "p1", errors.New("no")))
		},
		is:         apierrors.IsForbidden,
		wantCode:   403,
		wantReason: metav1.StatusReasonForbidden,
	}, {
		name: "request entity too large",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, apierrors.NewRequestEntityTooLargeError("limit is 3145728"))
		},
		is:         apierrors.IsRequestEntityTooLargeError,
		wantCode:   413,
		wantReason: metav1.StatusReasonRequestEntityTooLarge,
	}, {
		name: "unsupported media type",
		reply: func(w http.ResponseWriter) {
			writeStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 415,
				Reason: metav1.StatusReasonUnsupportedMediaType, Message: "the body of the request was in an unknown format - accepted media types include: application/json"}})
		},
		is:         apierrors.IsUnsupportedMediaType,
		wantCode:   415,
		wantReason: metav1.StatusReasonUnsupportedMediaType,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) { tt.reply(w) },
				func(c *Config) { c.MaxRetries = -1 })
			_, err := NewResource(c, Pods).Namespace("ns1").Get(context.Background(), "p1", metav1.GetOptions{})
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *StatusError", err, err)
			}
			if !tt.is(err) {
				t.Errorf("predicate false for %v", err)
			}
			st := se.Status()
			if st.Code != tt.wantCode || st.Reason != tt.wantReason {
				t.Errorf("code/reason = %d/%s, want %d/%s", st.Code, st.Reason, tt.wantCode, tt.wantReason)
			}
			if tt.wantMessage != "" && st.Message != tt.wantMessage {
				t.Errorf("message = %q, want %q", st.Message, tt.wantMessage)
			}
			if tt.check != nil {
				tt.check(t, st)
			}
		})
	}
}

// TestErrorOnWrite checks the verb and resource named in errors derived
// from HTTP codes.
func TestErrorOnWrite(t *testing.T) {
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	_, err := NewResource(c, Deployments).Namespace("ns1").Create(context.Background(), &appsv1.Deployment{}, metav1.CreateOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Fatalf("error = %v, want MethodNotAllowed", err)
	}
	if want := "the server does not allow this method on the requested resource (post deployments.apps)"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}

func FuzzDecodeError(f *testing.F) {
	f.Add(404, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	f.Add(500, "text/plain", []byte("boom"))
	f.Add(409, "", []byte(`{"kind":"Status","status":"Success"}`))
	f.Add(418, "application/json; charset=utf-8", []byte(`{"kind":"Status","details":{"causes":[{}]}}`))
	f.Fuzz(func(t *testing.T, code int, contentType string, body []byte) {
		if code < 100 || code > 999 {
			return
		}
		resp := &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}}}
		err := decodeError(resp, body, "GET", errorContext{resource: "pods", name: "p"})
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("decodeError returned %T", err)
		}
		if _, ok := decodeStatus(contentType, body); !ok && se.Status().Code != int32(code) {
			t.Errorf("code %d became %d", code, se.Status().Code)
		}
	})
}

package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRequestTimeout checks kube-apiserver's request deadline and timeout
// filters on fake time: a request past --request-timeout (or its shorter
// ?timeout=) is answered 504 Timeout while its handler finishes alone,
// writes after the timeout are dropped, and long-running requests are
// exempt.
func TestRequestTimeout(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		work     time.Duration // how long the handler works before answering
		wantCode int
		wantTook time.Duration // when the client is answered
	}{
		{name: "answer in time passes", path: "/api/v1/pods", work: 59 * time.Second, wantCode: 200, wantTook: 59 * time.Second},
		{name: "past --request-timeout gets 504", path: "/api/v1/namespaces/a/pods/b", work: time.Hour, wantCode: 504, wantTook: time.Minute},
		{name: "shorter ?timeout= applies", path: "/api/v1/pods?timeout=5s", work: time.Hour, wantCode: 504, wantTook: 5 * time.Second},
		{name: "longer ?timeout= is capped", path: "/api/v1/pods?timeout=5m", work: time.Hour, wantCode: 504, wantTook: time.Minute},
		{name: "invalid ?timeout= is 400", path: "/api/v1/pods?timeout=soon", work: time.Hour, wantCode: 400},
		{name: "non-resource requests time out", path: "/apis", work: time.Hour, wantCode: 504, wantTook: time.Minute},
		{name: "watch is exempt", path: "/api/v1/pods?watch=1", work: time.Hour, wantCode: 200, wantTook: time.Hour},
		{name: "pod attach is exempt", path: "/api/v1/namespaces/a/pods/b/attach", work: time.Hour, wantCode: 200, wantTook: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.RequestTimeout = DefaultRequestTimeout })
			synctest.Test(t, func(t *testing.T) {
				lateWrite := make(chan error, 1)
				handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					timer := time.NewTimer(tt.work)
					defer timer.Stop()
					ri := requestInfoFrom(r)
					if !ri.longRunning() {
						if _, ok := r.Context().Deadline(); !ok {
							t.Error("handler context has no deadline")
						}
					}
					select {
					case <-timer.C:
						w.WriteHeader(http.StatusOK)
						lateWrite <- nil
					case <-r.Context().Done():
						_, err := w.Write([]byte("late"))
						lateWrite <- err
					}
				})
				h := withRequestInfo(e.server.withTimeout(handler))
				start := time.Now()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
				took := time.Since(start)
				if rec.Code != tt.wantCode {
					t.Fatalf("code %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
				}
				if tt.wantCode == 400 {
					return
				}
				if took != tt.wantTook {
					t.Errorf("answered after %v, want %v", took, tt.wantTook)
				}
				err := <-lateWrite
				if tt.wantCode != 504 {
					return
				}
				if !errors.Is(err, http.ErrHandlerTimeout) {
					t.Errorf("write after the timeout: %v, want http.ErrHandlerTimeout", err)
				}
				var st metav1.Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
					t.Fatal(err)
				}
				if st.Reason != metav1.StatusReasonTimeout || st.Code != 504 || st.Message != timeoutMessage {
					t.Errorf("status %+v", st)
				}
				if n := testutil.CollectAndCount(e.server.metrics.terminations); n != 1 {
					t.Errorf("apiserver_request_terminations_total: %d series, want 1", n)
				}
			})
		})
	}
}

// TestRequestTimeoutAfterAnswerBegan checks that a handler that began its
// answer and then ran out of time has its connection cut (the answer
// cannot be completed and must not look complete).
func TestRequestTimeoutAfterAnswerBegan(t *testing.T) {
	e := newTestEnv(t)
	synctest.Test(t, func(t *testing.T) {
		finished := make(chan struct{})
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(finished)
			w.WriteHeader(http.StatusOK)
			<-r.Context().Done()
		})
		h := e.server.withTimeout(handler)
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
			<-finished
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/pods", nil))
		t.Error("ServeHTTP returned normally")
	})
}

// TestRequestTimeoutPanicPropagates checks that a handler's panic reaches
// the server as if there were no timeout filter.
func TestRequestTimeoutPanicPropagates(t *testing.T) {
	e := newTestEnv(t)
	h := e.server.withTimeout(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/pods", nil))
}

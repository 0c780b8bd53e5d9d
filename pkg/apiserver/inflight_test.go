package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
)

// blockingChain serves the server's filters in front of a router that
// holds every request until release is closed; entered receives each
// request the router got.
type blockingChain struct {
	url     string
	entered chan string
	release chan struct{}
	wg      sync.WaitGroup
}

func newBlockingChain(t *testing.T, s *Server, user *authentication.User) *blockingChain {
	t.Helper()
	b := &blockingChain{entered: make(chan string, 16), release: make(chan struct{})}
	router := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.entered <- r.Method + " " + r.URL.Path
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	var h http.Handler = s.metrics.wrap(s.withFilters(router), s.cfg.Gatherer, s.clock, s.log)
	if user != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(w, r.WithContext(authentication.WithUser(r.Context(), user)))
		})
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		b.releaseAll()
		b.wg.Wait()
		hs.CloseClientConnections()
		hs.Close()
	})
	b.url = hs.URL
	return b
}

func (b *blockingChain) releaseAll() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

// hold sends a request that the router keeps, returning once it is in.
func (b *blockingChain) hold(t *testing.T, method, path string) {
	t.Helper()
	b.wg.Go(func() {
		req, _ := http.NewRequest(method, b.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	<-b.entered
}

// send sends a request and returns its answer; a request the router takes
// is released at once so that send does not block.
func (b *blockingChain) send(t *testing.T, method, path string) response {
	t.Helper()
	done := make(chan struct{})
	go func() {
		select {
		case <-b.entered:
			// The router took it: let it through.
			b.releaseAll()
		case <-done:
		}
	}()
	defer close(done)
	req, _ := http.NewRequest(method, b.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// TestMaxInFlightLimits checks kube-apiserver's max-in-flight filter:
// requests over --max-requests-inflight / --max-mutating-requests-inflight
// get 429 TooManyRequests with Retry-After: 1, the two limits are
// separate, and long-running requests, health checks and system:masters
// are never refused.
func TestMaxInFlightLimits(t *testing.T) {
	const pods = "/api/v1/namespaces/default/pods"
	tests := []struct {
		name     string
		user     *authentication.User
		hold     [][2]string // requests held in flight
		method   string
		path     string
		wantCode int
		kind     string // request_kind of the dropped request
	}{
		{name: "read-only over the limit gets 429", hold: [][2]string{{"GET", pods}, {"GET", pods + "/a"}}, method: "GET", path: pods, wantCode: 429, kind: "readOnly"},
		{name: "mutating over the limit gets 429", hold: [][2]string{{"POST", pods}}, method: "DELETE", path: pods + "/a", wantCode: 429, kind: "mutating"},
		{name: "non-resource requests are limited", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: "/apis", wantCode: 429, kind: "readOnly"},
		{name: "read-only limit full leaves mutating free", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "POST", path: pods, wantCode: 200},
		{name: "mutating limit full leaves read-only free", hold: [][2]string{{"PUT", pods + "/a"}}, method: "GET", path: pods, wantCode: 200},
		{name: "watch (query) is long-running and exempt", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: pods + "?watch=true", wantCode: 200},
		{name: "watch (path) is long-running and exempt", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: "/api/v1/watch/namespaces/default/pods", wantCode: 200},
		{name: "pod log is long-running and exempt", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: pods + "/a/log", wantCode: 200},
		{name: "pod exec is long-running and exempt", hold: [][2]string{{"POST", pods}}, method: "POST", path: pods + "/a/exec", wantCode: 200},
		{name: "healthz is exempt", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: "/healthz", wantCode: 200},
		{name: "readyz check is exempt", hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: "/readyz/etcd", wantCode: 200},
		{name: "system:masters is served over the limit", user: &authentication.User{Name: "admin", Groups: []string{authentication.SystemPrivilegedGroup}},
			hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: pods, wantCode: 200},
		{name: "other users are refused", user: &authentication.User{Name: "alice", Groups: []string{authentication.AllAuthenticated}},
			hold: [][2]string{{"GET", pods}, {"GET", pods}}, method: "GET", path: pods, wantCode: 429, kind: "readOnly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight = 2, 1 })
			b := newBlockingChain(t, e.server, tt.user)
			for _, h := range tt.hold {
				b.hold(t, h[0], h[1])
			}
			got := b.send(t, tt.method, tt.path)
			if got.code != tt.wantCode {
				t.Fatalf("%s %s: %d, want %d: %s", tt.method, tt.path, got.code, tt.wantCode, got.body)
			}
			dropped := testutil.ToFloat64(e.server.metrics.dropped.WithLabelValues("readOnly")) + testutil.ToFloat64(e.server.metrics.dropped.WithLabelValues("mutating"))
			if tt.wantCode != http.StatusTooManyRequests {
				if dropped != 0 {
					t.Fatalf("dropped %v requests, want none", dropped)
				}
				return
			}
			if ra := got.header.Get("Retry-After"); ra != "1" {
				t.Errorf("Retry-After %q, want 1", ra)
			}
			st := got.status(t)
			if st.Reason != metav1.StatusReasonTooManyRequests || st.Code != 429 || st.Message != "Too many requests, please try again later." {
				t.Errorf("status %+v", st)
			}
			if n := testutil.ToFloat64(e.server.metrics.dropped.WithLabelValues(tt.kind)); n != 1 {
				t.Errorf("apiserver_dropped_requests_total{request_kind=%q} = %v, want 1", tt.kind, n)
			}
			if n := testutil.CollectAndCount(e.server.metrics.terminations); n != 1 {
				t.Errorf("apiserver_request_terminations_total has %d series, want 1", n)
			}
			if got, want := testutil.ToFloat64(e.server.metrics.inflight.WithLabelValues(tt.kind)), float64(len(tt.hold)); got != want {
				t.Errorf("apiserver_current_inflight_requests{request_kind=%q} = %v, want %v", tt.kind, got, want)
			}
		})
	}
}

// TestInFlightMetricsNames checks the metric names kube-apiserver uses are
// exposed.
func TestInFlightMetricsNames(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxRequestsInFlight = 1 })
	b := newBlockingChain(t, e.server, nil)
	b.hold(t, "GET", "/api/v1/pods")
	if got := b.send(t, "GET", "/api/v1/namespaces/default/pods/x"); got.code != 429 {
		t.Fatalf("%d", got.code)
	}
	want := `
# HELP apiserver_request_terminations_total Number of requests which apiserver terminated in self-defense.
# TYPE apiserver_request_terminations_total counter
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 1
`
	if err := testutil.GatherAndCompare(e.server.cfg.Gatherer, strings.NewReader(want), "apiserver_request_terminations_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(e.server.cfg.Gatherer, "apiserver_current_inflight_requests", "apiserver_dropped_requests_total"); err != nil || n == 0 {
		t.Errorf("in-flight metrics: %d series, %v", n, err)
	}
}

// TestUnlimitedInFlight checks that a negative limit turns the filter off.
func TestUnlimitedInFlight(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight = -1, -1 })
	b := newBlockingChain(t, e.server, nil)
	for i := range 5 {
		b.hold(t, "GET", fmt.Sprintf("/api/v1/namespaces/default/pods/p%d", i))
	}
	if got := b.send(t, "GET", "/api/v1/pods"); got.code != 200 {
		t.Fatalf("%d: %s", got.code, got.body)
	}
}

package compat

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func TestMain(m *testing.M) {
	// controller-runtime complains on stderr when its logger is never set.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

// server is a kplane API server on a memory backend, served over loopback
// HTTP inside the test process, with a log of the requests it saw.
type server struct {
	URL string

	// refuseWatches, while set, answers every watch request with 503, as
	// an unreachable server would, so tests can keep clients disconnected.
	refuseWatches atomic.Bool
	// dropConnections closes every open client connection, ending watches.
	dropConnections func()

	mu       sync.Mutex
	requests []string // "METHOD path?query"
}

// startServer starts a server for t and stops it when t ends.
func startServer(t testing.TB) *server {
	t.Helper()
	return startServerWith(t, memory.Config{})
}

// startServerWith starts a server on a memory backend configured by mcfg.
func startServerWith(t testing.TB, mcfg memory.Config) *server {
	t.Helper()
	backend, err := memory.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if s.refuseWatches.Load() && r.URL.Query().Get("watch") == "true" {
			http.Error(w, "watches refused by the test", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = hs.URL
	s.dropConnections = hs.CloseClientConnections
	ctx, cancel := context.WithCancel(context.Background())
	var ctrl sync.WaitGroup
	ctrl.Go(func() { _ = srv.RunControllers(ctx) })
	t.Cleanup(func() {
		cancel()
		ctrl.Wait()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return s
}

// countRequests counts the requests with this method whose URI contains
// every one of parts.
func (s *server) countRequests(method string, parts ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
next:
	for _, r := range s.requests {
		if !strings.HasPrefix(r, method+" ") {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// sawRequest reports whether the server saw a request with this method
// whose URI contains every one of parts.
func (s *server) sawRequest(method string, parts ...string) bool {
	return s.countRequests(method, parts...) > 0
}

// restConfig is a client-go configuration for s, with client-side rate
// limiting off (negative QPS) so tests and benchmarks are not slowed by it.
func (s *server) restConfig() *rest.Config {
	return &rest.Config{Host: s.URL, QPS: -1, UserAgent: "kplane-compat"}
}

// clientset returns a client-go clientset for s; its idle connections are
// closed when t ends.
func (s *server) clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

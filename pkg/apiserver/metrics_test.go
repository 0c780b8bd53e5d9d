package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kplane/kplane/pkg/storage/etcd"
)

// An API server on embedded etcd serves the member's own metrics on
// /metrics beside its own, each family once, when it is given the
// member's Gatherer as kplane apiserver does.
func TestMetricsServeEmbeddedEtcd(t *testing.T) {
	ctx := context.Background()
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	backend, err := etcd.New(etcd.Config{Client: emb.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	reg := prometheus.NewRegistry()
	// The default registry, which etcd's metrics are on, has Go and process
	// collectors too: the private registry's must not clash with them.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s, err := New(Config{
		Backend: backend, Registerer: reg, Gatherer: prometheus.Gatherers{reg, emb.Gatherer()},
		Admission: noServiceAccounts, RequestTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	post, err := http.Post(hs.URL+"/api/v1/namespaces", "application/json", strings.NewReader(`{"metadata":{"name":"m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = post.Body.Close()
	if post.StatusCode != http.StatusCreated {
		t.Fatalf("create namespace: %d", post.StatusCode)
	}
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", resp.StatusCode, body)
	}
	text := string(body)
	for _, want := range []string{
		"\netcd_disk_wal_fsync_duration_seconds_count ",
		"\netcd_mvcc_put_total ",
		"\netcd_disk_backend_commit_duration_seconds_count ",
		`apiserver_request_total{code="201",component="apiserver",group="",resource="namespaces"`,
		"\ngo_goroutines ",
		"\nprocess_resident_memory_bytes ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		name, ok := strings.CutPrefix(line, "# TYPE ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		if seen[name] {
			t.Errorf("/metrics has %s twice", name)
		}
		seen[name] = true
	}
}

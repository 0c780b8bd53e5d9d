package etcd

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// One embedded etcd serves every test of the package; each test works
// under its own prefix.
var (
	sharedOnce sync.Once
	shared     *Embedded
	sharedErr  error
	sharedDir  string
	prefixSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(durabilityDirEnv); dir != "" {
		// The child process of TestDurabilityAfterSIGKILL: write until killed.
		err := durabilityChild(dir)
		fmt.Fprintln(os.Stderr, "durability child:", err)
		os.Exit(1)
	}
	if dir := os.Getenv(apiServerChildEnv); dir != "" {
		// The child process of TestAPIServerDurabilityAfterSIGKILL.
		err := apiServerChild(dir)
		fmt.Fprintln(os.Stderr, "API server child:", err)
		os.Exit(1)
	}
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close embedded etcd:", err)
			code = 1
		}
		os.RemoveAll(sharedDir)
	}
	if code == 0 {
		// Members of the in-process cluster in TestCluster leave the HTTP
		// keep-alive connections of etcd's peer transport behind when they
		// stop; this package itself starts no HTTP.
		if err := goleak.Find(
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
			goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedEtcd returns the package's embedded etcd, starting it on first use.
func sharedEtcd(t testing.TB) *Embedded {
	t.Helper()
	sharedOnce.Do(func() {
		if sharedDir, sharedErr = os.MkdirTemp("", "kplane-etcd-test-"); sharedErr != nil {
			return
		}
		shared, sharedErr = StartEmbedded(context.Background(), EmbeddedConfig{DataDir: sharedDir, UnsafeNoFsync: true})
	})
	if sharedErr != nil {
		t.Fatalf("start embedded etcd: %v", sharedErr)
	}
	return shared
}

// newTestBackend returns a Backend on the shared etcd under a fresh prefix.
func newTestBackend(t testing.TB, cfg Config) *Backend {
	t.Helper()
	e := sharedEtcd(t)
	cfg.Client = e.Client()
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("/test-%d", prefixSeq.Add(1))
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

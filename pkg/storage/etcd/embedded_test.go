package etcd

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

var cmConfig = storage.ResourceConfig{
	Codec:       storage.JSONCodec{},
	NewFunc:     func() runtime.Object { return &corev1.ConfigMap{} },
	NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
}

func TestEmbeddedKeepsDataAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	start := func() (*Embedded, storage.Interface, *Backend) {
		t.Helper()
		e, err := StartEmbedded(ctx, EmbeddedConfig{DataDir: dir})
		if err != nil {
			t.Fatalf("StartEmbedded: %v", err)
		}
		b, err := New(Config{Client: e.Client()})
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.Storage(cmConfig)
		if err != nil {
			t.Fatal(err)
		}
		return e, s, b
	}
	e, s, b := start()
	firstURL := e.ClientURL()
	if !strings.HasPrefix(firstURL, "http://127.0.0.1:") {
		t.Errorf("client URL %s is not on loopback", firstURL)
	}
	var written []*corev1.ConfigMap
	for _, name := range []string{"a", "b", "c"} {
		out := &corev1.ConfigMap{}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": name}}
		if err := s.Create(ctx, "/configmaps/ns/"+name, cm, out); err != nil {
			t.Fatal(err)
		}
		written = append(written, out)
	}
	rev, err := b.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// The second start picks new ports over the same data.
	e, s, b = start()
	defer e.Close()
	defer b.Close()
	l := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps", storage.ListOptions{Recursive: true}, l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != len(written) {
		t.Fatalf("after restart %d objects, want %d", len(l.Items), len(written))
	}
	for i, got := range l.Items {
		if got.Name != written[i].Name || got.ResourceVersion != written[i].ResourceVersion || got.Data["v"] != written[i].Data["v"] {
			t.Errorf("after restart item %d = %s@%s %v, want %s@%s", i, got.Name, got.ResourceVersion, got.Data, written[i].Name, written[i].ResourceVersion)
		}
	}
	rev2, err := b.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev2 != rev {
		t.Errorf("revision after restart %d, want %d", rev2, rev)
	}
}

func TestEmbeddedConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  EmbeddedConfig
		want string
	}{
		{"no data dir", EmbeddedConfig{}, "DataDir is required"},
		{"public client URL", EmbeddedConfig{DataDir: t.TempDir(), ClientURL: "http://0.0.0.0:23790"}, "not a loopback address"},
		{"public peer URL", EmbeddedConfig{DataDir: t.TempDir(), PeerURL: "http://10.1.2.3:23800"}, "not a loopback address"},
		{"no port", EmbeddedConfig{DataDir: t.TempDir(), ClientURL: "http://127.0.0.1"}, "missing port"},
		{"zero port", EmbeddedConfig{DataDir: t.TempDir(), ClientURL: "http://127.0.0.1:0"}, "a port is required"},
		{"bad scheme", EmbeddedConfig{DataDir: t.TempDir(), ClientURL: "unix:///tmp/x"}, "scheme must be http or https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := StartEmbedded(ctx, tc.cfg)
			if err == nil {
				e.Close()
				t.Fatal("StartEmbedded succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestNewConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"nothing to connect to", Config{}, "Client or Endpoints is required"},
		{"relative prefix", Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "registry"}, "must start with /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.cfg)
			if err == nil {
				b.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// recordingHandler keeps the messages logged at warning level or above,
// noting whether each came after the test began closing the member.
type recordingHandler struct {
	mu      sync.Mutex
	closing bool
	loud    []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level < slog.LevelWarn {
		return nil
	}
	msg := r.Message
	if h.closing {
		msg = "while closing: " + msg
	}
	h.loud = append(h.loud, msg)
	return nil
}

// TestEmbeddedLogsQuietly checks that a member started and closed normally
// does not alarm its user: the warnings every embedded member gives for
// kplane's deliberate setup, and the listener errors etcd reports while it
// is being closed, are logged at debug level.
func TestEmbeddedLogsQuietly(t *testing.T) {
	h := &recordingHandler{}
	e, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: t.TempDir(), Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, msg := range h.loud {
		if strings.HasPrefix(msg, "while closing: ") || benign[strings.TrimPrefix(msg, "etcd: ")] {
			t.Errorf("logged at warning level or above: %q", msg)
		}
	}
}

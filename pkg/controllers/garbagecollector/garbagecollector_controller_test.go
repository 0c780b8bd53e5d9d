package garbagecollector

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
)

func TestDefaultResources(t *testing.T) {
	got := map[string]bool{}
	for _, r := range DefaultResources() {
		got[r.Resource] = r.Namespaced
	}
	for res, namespaced := range map[string]bool{"pods": true, "configmaps": true, "replicasets": true, "deployments": true, "nodes": false, "namespaces": false} {
		if ns, ok := got[res]; !ok || ns != namespaced {
			t.Errorf("%s: monitored %v, namespaced %v; want monitored, namespaced %v", res, ok, ns, namespaced)
		}
	}
	if _, ok := got["events"]; ok {
		t.Errorf("events are monitored")
	}
}

func TestNewValidates(t *testing.T) {
	c, err := client.New(client.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(informers.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client", Config{Informers: f}, "client is required"},
		{"no informers", Config{Client: c}, "informers are required"},
		{"bad resource", Config{Client: c, Informers: f, Resources: []Resource{{Kind: "X"}}}, "needs a version"},
		{"duplicate kind", Config{Client: c, Informers: f, Resources: []Resource{
			{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
			{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "cms"}, Kind: "ConfigMap", Namespaced: true},
		}}, "listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// Run gives up when ctx ends before the caches sync, leaves no goroutine
// behind (goleak checks), and refuses a second call.
func TestRunStopsBeforeSync(t *testing.T) {
	c, err := client.New(client.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	f, err := informers.New(informers.Config{Client: c, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	gc, err := New(Config{Client: c, Informers: f, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	cancel()
	if err := gc.Run(ctx, 1); err == nil || !strings.Contains(err.Error(), "did not sync") {
		t.Fatalf("Run = %v, want a sync failure", err)
	}
	if err := gc.Run(ctx, 1); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second Run = %v, want an error", err)
	}
	if err := gc.Run(ctx, 0); err == nil {
		t.Fatal("Run with no workers succeeded")
	}
}

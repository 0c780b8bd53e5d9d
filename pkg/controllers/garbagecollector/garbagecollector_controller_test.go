package garbagecollector

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// failingAPI fails every call.
type failingAPI struct{ *fakeAPI }

func (failingAPI) Get(context.Context, Resource, string, string) (*metav1.PartialObjectMetadata, error) {
	return nil, apierrors.NewServiceUnavailable("down")
}

// The attempt-to-delete worker forgets finished work, retries failures and
// virtual nodes that exist but were not observed yet, and drops nodes the
// graph has replaced.
func TestAttemptToDeleteRequeues(t *testing.T) {
	c, err := client.New(client.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var resources []Resource
	for _, r := range testResources {
		resources = append(resources, r)
	}
	owner := object{uid: "owner"}
	dep := object{uid: "dep", owners: []string{"owner"}}
	tests := []struct {
		name         string
		api          ObjectAPI
		live         []object
		replace      bool // observe the owner under other coordinates first
		wantRequeues int
		wantEvents   int // virtual delete events queued for the graph
	}{
		{name: "absent virtual owner: forgotten, virtual delete queued", wantEvents: 1},
		{name: "existing virtual owner not observed yet: retried", live: []object{owner}, wantRequeues: 1},
		{name: "a replaced node is dropped", live: []object{owner}, replace: true},
		{name: "API failure: retried", api: failingAPI{&fakeAPI{}}, wantRequeues: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := tt.api
			if api == nil {
				fake := &fakeAPI{objects: map[string]*metav1.PartialObjectMetadata{}}
				for _, o := range tt.live {
					m := o.meta()
					fake.objects[apiKey(testResources[schema.GroupKind{Kind: "ConfigMap"}], m.Namespace, m.Name)] = m
				}
				api = fake
			}
			f, err := informers.New(informers.Config{Client: c})
			if err != nil {
				t.Fatal(err)
			}
			gc, err := New(Config{Client: c, API: api, Informers: f, Resources: resources, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer gc.shutDownQueues()
			gc.builder.processEvent(add(dep))
			n, _ := gc.builder.graph.get("owner")
			if tt.replace {
				gc.builder.processEvent(add(object{ns: "other", uid: "owner"}))
			}
			// The builder queued the virtual owner; take it as a worker.
			if !gc.processAttemptToDelete(context.Background()) {
				t.Fatal("queue shut down")
			}
			if got := gc.attemptToDelete.NumRequeues(n); got != tt.wantRequeues {
				t.Errorf("requeues = %d, want %d", got, tt.wantRequeues)
			}
			if got := gc.graphChanges.Len(); got != tt.wantEvents {
				t.Errorf("graph events queued = %d, want %d", got, tt.wantEvents)
			}
		})
	}
}

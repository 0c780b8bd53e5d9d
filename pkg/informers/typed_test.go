package informers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
)

// TestTypedAccessorsOverHTTP runs the pod informer of a factory through
// pkg/client against a minimal HTTP server that streams the initial state
// as a watch-list.
func TestTypedAccessorsOverHTTP(t *testing.T) {
	podJSON := func(name, rv string) corev1.Pod {
		return corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" || r.URL.Query().Get("watch") != "true" {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, p := range []corev1.Pod{podJSON("a", "5"), podJSON("b", "6")} {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": p})
			}
			bm := podJSON("", "6")
			bm.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": bm})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := client.New(client.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := newFactory(t, informers.Config{Client: c})
	pods, err := f.Pods()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := f.Pods()
	if again != pods {
		t.Error("Pods returned two informers")
	}
	for name, get := range map[string]func() error{
		"nodes":       func() error { _, err := f.Nodes(); return err },
		"namespaces":  func() error { _, err := f.Namespaces(); return err },
		"events":      func() error { _, err := f.Events(); return err },
		"deployments": func() error { _, err := f.Deployments(); return err },
		"replicasets": func() error { _, err := f.ReplicaSets(); return err },
		"leases":      func() error { _, err := f.Leases(); return err },
	} {
		if err := get(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx)
	if !informers.WaitForNamedCacheSync(ctx, "test", pods.HasSynced) {
		t.Fatal("pods did not sync")
	}
	got, _ := pods.Lister().Namespace("default").List(labels.Everything())
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("cached pods = %v", got)
	}
	if rv := pods.LastSyncResourceVersion(); rv != "6" {
		t.Errorf("LastSyncResourceVersion = %q, want 6", rv)
	}
	f.Shutdown()
}

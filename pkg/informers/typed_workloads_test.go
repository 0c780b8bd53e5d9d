package informers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
)

// TestWorkloadAccessors syncs the job and persistent volume informers of a
// factory from a server that streams each as a watch-list, at the paths of
// a namespaced batch resource and a cluster-scoped core one.
func TestWorkloadAccessors(t *testing.T) {
	streams := map[string][]any{
		"/apis/batch/v1/jobs": {
			batchv1.Job{TypeMeta: metav1.TypeMeta{Kind: "Job", APIVersion: "batch/v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "build", ResourceVersion: "3"}},
		},
		"/api/v1/persistentvolumes": {
			corev1.PersistentVolume{TypeMeta: metav1.TypeMeta{Kind: "PersistentVolume", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "pv-1", ResourceVersion: "4"}},
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		objs, ok := streams[r.URL.Path]
		if !ok || r.URL.Query().Get("watch") != "true" {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, o := range objs {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": o})
			}
			bm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
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
	jobs, err := f.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	pvs, err := f.PersistentVolumes()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := f.Jobs(); again != jobs {
		t.Error("Jobs returned two informers")
	}
	for name, get := range map[string]func() error{
		"cronjobs":               func() error { _, err := f.CronJobs(); return err },
		"statefulsets":           func() error { _, err := f.StatefulSets(); return err },
		"daemonsets":             func() error { _, err := f.DaemonSets(); return err },
		"controllerrevisions":    func() error { _, err := f.ControllerRevisions(); return err },
		"serviceaccounts":        func() error { _, err := f.ServiceAccounts(); return err },
		"persistentvolumeclaims": func() error { _, err := f.PersistentVolumeClaims(); return err },
	} {
		if err := get(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// Start only what this test serves; the other informers would wait
	// on a server that answers them 404.
	wg.Go(func() { jobs.Run(ctx) })
	wg.Go(func() { pvs.Run(ctx) })
	if !informers.WaitForNamedCacheSync(ctx, "test", jobs.HasSynced, pvs.HasSynced) {
		t.Fatal("informers did not sync")
	}
	if got, _ := jobs.Lister().Namespace("ci").List(labels.Everything()); len(got) != 1 || got[0].Name != "build" {
		t.Errorf("cached jobs = %v", got)
	}
	if got, _ := pvs.Lister().List(labels.Everything()); len(got) != 1 || got[0].Name != "pv-1" {
		t.Errorf("cached volumes = %v", got)
	}
}

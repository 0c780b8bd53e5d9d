package configmapmirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// e2e is a kplane API server on the memory backend, a client to it, and the
// mirror controller running against it.
type e2e struct {
	t          *testing.T
	configMaps *client.ResourceClient[*corev1.ConfigMap]
	secrets    *client.ResourceClient[*corev1.Secret]
	events     *client.ResourceClient[*corev1.Event]
}

func startE2E(t *testing.T) *e2e {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	c, err := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := New(Config{Client: c, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return &e2e{
		t:          t,
		configMaps: client.NewResource(c, client.ConfigMaps).Namespace("default"),
		secrets:    client.NewResource(c, client.Secrets).Namespace("default"),
		events:     client.NewResource(c, client.Events).Namespace("default"),
	}
}

// waitFor lists rc until cond holds for the items, re-listing on every
// change a watch reports, and fails the test after a minute.
func waitFor[T cache.Object](t *testing.T, rc *client.ResourceClient[T], what string, cond func(items []T) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		list, err := rc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if cond(list.Items) {
			return
		}
		w, err := rc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
		}
		w.Stop()
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func find[T cache.Object](items []T, name string) (T, bool) {
	for _, o := range items {
		if o.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func (e *e2e) createConfigMap(name string, enabled bool, data map[string]string) *corev1.ConfigMap {
	e.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if enabled {
		cm.Annotations = map[string]string{EnabledAnnotation: "true"}
	}
	created, err := e.configMaps.Create(e.t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

// waitForMirror waits until the Secret name holds data and is controlled
// by the ConfigMap with uid.
func (e *e2e) waitForMirror(name string, uid types.UID, data map[string]string) *corev1.Secret {
	e.t.Helper()
	var got *corev1.Secret
	waitFor(e.t, e.secrets, fmt.Sprintf("secret %s mirroring %v", name, data), func(items []*corev1.Secret) bool {
		s, ok := find(items, name)
		if !ok || len(s.Data) != len(data) {
			return false
		}
		for k, v := range data {
			if string(s.Data[k]) != v {
				return false
			}
		}
		ref := metav1.GetControllerOf(s)
		if ref == nil || ref.UID != uid || ref.Kind != "ConfigMap" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			return false
		}
		got = s
		return true
	})
	return got
}

func (e *e2e) waitForEvent(object, reason string, minCount int32) {
	e.t.Helper()
	waitFor(e.t, e.events, fmt.Sprintf("event %s on %s", reason, object), func(items []*corev1.Event) bool {
		for _, ev := range items {
			if ev.InvolvedObject.Name == object && ev.InvolvedObject.Kind == "ConfigMap" && ev.Reason == reason &&
				ev.Source.Component == Name && ev.Count >= minCount {
				return true
			}
		}
		return false
	})
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	e := startE2E(t)
	ctx := t.Context()

	// A new annotated ConfigMap gets a mirror.
	app := e.createConfigMap("app", true, map[string]string{"a": "1"})
	e.waitForMirror("app", app.UID, map[string]string{"a": "1"})
	e.waitForEvent("app", ReasonCreated, 1)

	// A change to the ConfigMap reaches the Secret.
	app.Data = map[string]string{"a": "2", "b": "3"}
	app, err := e.configMaps.Update(ctx, app, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitForMirror("app", app.UID, map[string]string{"a": "2", "b": "3"})
	e.waitForEvent("app", ReasonUpdated, 1)

	// A hand edit of the Secret is reverted.
	s, err := e.secrets.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["a"] = []byte("tampered")
	if _, err := e.secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForMirror("app", app.UID, map[string]string{"a": "2", "b": "3"})

	// Someone else's Secret is never overwritten; a Warning says why.
	theirs, err := e.secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Data:       map[string][]byte{"mine": []byte("keep")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.createConfigMap("taken", true, map[string]string{"x": "y"})
	e.waitForEvent("taken", ReasonResourceExists, 1)

	// A labelled orphan is adopted and brought in line.
	if _, err := e.secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{SourceLabel: "orphan"}},
		Data:       map[string][]byte{"old": []byte("data")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphanCM := e.createConfigMap("orphan", true, map[string]string{"new": "data"})
	adopted := e.waitForMirror("orphan", orphanCM.UID, map[string]string{"new": "data"})
	if adopted.Labels[SourceLabel] != "orphan" {
		t.Errorf("adopted secret labels = %v", adopted.Labels)
	}

	// Removing the annotation releases the Secret: it stays, unowned.
	app, err = e.configMaps.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(app.Annotations, EnabledAnnotation)
	if _, err := e.configMaps.Update(ctx, app, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.secrets, "release of secret app", func(items []*corev1.Secret) bool {
		s, ok := find(items, "app")
		return ok && len(s.OwnerReferences) == 0 && string(s.Data["a"]) == "2"
	})
	e.waitForEvent("app", ReasonReleased, 1)

	// Deleting a ConfigMap deletes the Secret it controls.
	if err := e.configMaps.Delete(ctx, "orphan", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.secrets, "deletion of secret orphan", func(items []*corev1.Secret) bool {
		_, ok := find(items, "orphan")
		return !ok
	})

	// The foreign Secret is untouched through all of it.
	got, err := e.secrets.Get(ctx, "taken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != theirs.ResourceVersion || len(got.OwnerReferences) != 0 {
		t.Errorf("foreign secret changed: %+v", got.ObjectMeta)
	}
	// The released Secret is not re-adopted or deleted.
	if _, err := e.secrets.Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Errorf("released secret: %v", err)
	}
}

// TestNewRequiresClient keeps New's validation honest.
func TestNewRequiresClient(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, errNoClient) {
		t.Fatalf("New = %v", err)
	}
}

// testWriter sends log lines to the test's log, shown when it fails.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

var gadgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}

func gadget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// TestDynamicWire checks what the dynamic client sends: as client-go's, the
// client's namespace alone decides the path.
func TestDynamicWire(t *testing.T) {
	ctx := context.Background()
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/scale"):
			writeJSON(w, 200, &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}})
		case r.Method == http.MethodDelete:
			writeJSON(w, 200, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		case r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/gadgets")):
			writeJSON(w, 200, map[string]any{"apiVersion": "example.com/v1", "kind": "GadgetList", "metadata": map[string]any{"resourceVersion": "5"},
				"items": []any{gadget("ns1", "g1").Object}})
		default:
			writeJSON(w, 200, gadget("ns1", "g1").Object)
		}
	})
	dyn := NewDynamic(c)
	ns := dyn.Resource(gadgetsGVR).Namespace("ns1")
	cluster := dyn.Resource(gadgetsGVR)
	tests := []struct {
		name                      string
		call                      func() error
		method, path, query, body string
	}{
		{"get", func() error { _, err := ns.Get(ctx, "g1", metav1.GetOptions{ResourceVersion: "7"}); return err },
			"GET", "/apis/example.com/v1/namespaces/ns1/gadgets/g1", "resourceVersion=7", ""},
		{"get subresource", func() error { _, err := ns.Get(ctx, "g1", metav1.GetOptions{}, "status"); return err },
			"GET", "/apis/example.com/v1/namespaces/ns1/gadgets/g1/status", "", ""},
		{"get cluster-scoped", func() error { _, err := cluster.Get(ctx, "g1", metav1.GetOptions{}); return err },
			"GET", "/apis/example.com/v1/gadgets/g1", "", ""},
		{"list all namespaces", func() error {
			_, err := cluster.List(ctx, metav1.ListOptions{LabelSelector: "a=b", Limit: 2})
			return err
		},
			"GET", "/apis/example.com/v1/gadgets", "labelSelector=a%3Db&limit=2", ""},
		{"create", func() error {
			_, err := ns.Create(ctx, gadget("", "g1"), metav1.CreateOptions{FieldManager: "me"})
			return err
		},
			"POST", "/apis/example.com/v1/namespaces/ns1/gadgets", "fieldManager=me",
			`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"size":3}}`},
		{"create ignores the object's namespace", func() error { _, err := cluster.Create(ctx, gadget("other", "g1"), metav1.CreateOptions{}); return err },
			"POST", "/apis/example.com/v1/gadgets", "",
			`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"other"},"spec":{"size":3}}`},
		{"create on a subresource", func() error {
			_, err := ns.Create(ctx, gadget("", "g1"), metav1.CreateOptions{}, "eviction")
			return err
		},
			"POST", "/apis/example.com/v1/namespaces/ns1/gadgets/g1/eviction", "", ""},
		{"update", func() error { _, err := ns.Update(ctx, gadget("ns1", "g1"), metav1.UpdateOptions{}); return err },
			"PUT", "/apis/example.com/v1/namespaces/ns1/gadgets/g1", "",
			`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"ns1"},"spec":{"size":3}}`},
		{"update status", func() error { _, err := ns.UpdateStatus(ctx, gadget("ns1", "g1"), metav1.UpdateOptions{}); return err },
			"PUT", "/apis/example.com/v1/namespaces/ns1/gadgets/g1/status", "",
			`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"ns1"},"spec":{"size":3}}`},
		{"json patch", func() error {
			_, err := ns.Patch(ctx, "g1", types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec"}]`), metav1.PatchOptions{})
			return err
		}, "PATCH", "/apis/example.com/v1/namespaces/ns1/gadgets/g1", "", `[{"op":"remove","path":"/spec"}]`},
		{"delete", func() error { return ns.Delete(ctx, "g1", metav1.DeleteOptions{}) },
			"DELETE", "/apis/example.com/v1/namespaces/ns1/gadgets/g1", "", `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`},
		{"delete collection", func() error {
			return ns.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "a=b"})
		}, "DELETE", "/apis/example.com/v1/namespaces/ns1/gadgets", "labelSelector=a%3Db", `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`},
		{"get scale", func() error { _, err := ns.GetScale(ctx, "g1", metav1.GetOptions{}); return err },
			"GET", "/apis/example.com/v1/namespaces/ns1/gadgets/g1/scale", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			got := rec.last(t)
			if got.Method != tc.method || got.Path != tc.path || got.Query != tc.query {
				t.Errorf("sent %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, tc.method, tc.path, tc.query)
			}
			if tc.body != "" && !jsonEqual(t, got.Body, tc.body) {
				t.Errorf("body = %s, want %s", got.Body, tc.body)
			}
			if a := got.Header.Get("Accept"); a != "application/json" {
				t.Errorf("Accept = %q", a)
			}
		})
	}
}

func jsonEqual(t testing.TB, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return cmp.Equal(x, y)
}

// TestDynamicWatchDecoding: events decode to Unstructured, bookmarks without
// a kind included, and ERROR events carry their Status.
func TestDynamicWatchDecoding(t *testing.T) {
	stream := `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1","resourceVersion":"2"},"spec":{"size":3}}}
{"type":"BOOKMARK","object":{"apiVersion":"example.com/v1","metadata":{"resourceVersion":"3"}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}
`
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(stream))
	})
	w, err := NewDynamic(c).Resource(gadgetsGVR).Namespace("ns1").Watch(context.Background(), metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		switch {
		case ev.Type == watch.Error:
			got = append(got, string(ev.Type)+" "+string(ev.Status.Reason))
		default:
			size, _, _ := unstructured.NestedInt64(ev.Object.Object, "spec", "size")
			got = append(got, string(ev.Type)+" "+ev.Object.GetKind()+" "+ev.Object.GetResourceVersion()+" "+string(rune('0'+size)))
		}
	}
	want := []string{"ADDED Gadget 2 3", "BOOKMARK  3 0", "ERROR Expired"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestDynamicErrors: failures are StatusErrors; one that is not a Status
// names the resource.
func TestDynamicErrors(t *testing.T) {
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 page not found"))
	})
	_, err := NewDynamic(c).Resource(gadgetsGVR).Namespace("ns1").Get(context.Background(), "g1", metav1.GetOptions{})
	var se *apierrors.StatusError
	if !apierrors.IsNotFound(err) || !asStatus(err, &se) || se.ErrStatus.Details == nil ||
		se.ErrStatus.Details.Group != "example.com" || se.ErrStatus.Details.Kind != "gadgets" || se.ErrStatus.Details.Name != "g1" {
		t.Errorf("error = %#v", err)
	}
	if _, err := NewDynamic(c).Resource(gadgetsGVR).Namespace("ns1").Get(context.Background(), "a/b", metav1.GetOptions{}); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("a name with a slash = %v, want a client-side error", err)
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

// TestDynamicRetries: the dynamic client retries as the typed one does.
func TestDynamicRetries(t *testing.T) {
	var calls atomic.Int32
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			writeStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests}})
			return
		}
		writeJSON(w, 200, gadget("ns1", "g1").Object)
	})
	got, err := NewDynamic(c).Resource(gadgetsGVR).Namespace("ns1").Get(context.Background(), "g1", metav1.GetOptions{})
	if err != nil || got.GetName() != "g1" || calls.Load() != 2 {
		t.Errorf("get = %v, %v after %d calls; want g1 after 2", got, err, calls.Load())
	}
}

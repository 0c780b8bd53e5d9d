package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func newWidget(name string, replicas int64, color string, labels map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": meta,
		"spec":     map[string]any{"replicas": replicas, "color": color},
	}}
}

func nested(t testing.TB, u *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil {
		t.Fatalf("%s %v: %v", u.GetName(), fields, err)
	}
	return v
}

func TestDynamicCustomResource(t *testing.T) {
	ctx := context.Background()
	c := startCRDServer(t)
	createCRD(t, c, widgetCRD())
	widgets := client.NewDynamic(c).Resource(widgetsGVR).Namespace("default")

	initial, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := widgets.Watch(ctx, metav1.ListOptions{ResourceVersion: initial.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := widgets.Create(ctx, newWidget("w1", 1, "red", map[string]any{"app": "shop"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetNamespace() != "default" ||
		created.GetKind() != "Widget" || created.GetAPIVersion() != "example.com/v1" || created.GetGeneration() != 1 {
		t.Fatalf("created widget lacks server metadata: %v", created.Object)
	}
	if got := nested(t, created, "spec", "replicas"); got != int64(1) {
		t.Errorf("spec.replicas = %#v, want int64 1", got)
	}
	got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get differs from create (-create +get):\n%s", diff)
	}

	// Update with the current resourceVersion, then with the stale one.
	upd := got.DeepCopy()
	if err := unstructured.SetNestedField(upd.Object, "blue", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	updated, err := widgets.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nested(t, updated, "spec", "color") != "blue" || updated.GetGeneration() != 2 {
		t.Errorf("update: color %v generation %d, want blue 2", nested(t, updated, "spec", "color"), updated.GetGeneration())
	}
	if _, err := widgets.Update(ctx, upd, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update = %v, want Conflict", err)
	}

	// Status: the status subresource writes status only.
	st := updated.DeepCopy()
	_ = unstructured.SetNestedField(st.Object, map[string]any{"replicas": int64(1), "selector": "app=shop"}, "status")
	_ = unstructured.SetNestedField(st.Object, "green", "spec", "color")
	withStatus, err := widgets.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nested(t, withStatus, "status", "replicas") != int64(1) || nested(t, withStatus, "spec", "color") != "blue" {
		t.Errorf("after UpdateStatus: status %v, spec.color %v; want replicas 1 and color still blue",
			nested(t, withStatus, "status"), nested(t, withStatus, "spec", "color"))
	}

	// Scale.
	scale, err := widgets.GetScale(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != "app=shop" {
		t.Errorf("scale = %+v", scale)
	}
	scale.Spec.Replicas = 4
	if scale, err = widgets.UpdateScale(ctx, "w1", scale, metav1.UpdateOptions{}); err != nil || scale.Spec.Replicas != 4 {
		t.Fatalf("UpdateScale = %+v, %v", scale, err)
	}
	if got, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); err != nil || nested(t, got, "spec", "replicas") != int64(4) {
		t.Errorf("after UpdateScale: %v, %v; want spec.replicas 4", got, err)
	}
	if sub, err := widgets.Get(ctx, "w1", metav1.GetOptions{}, "scale"); err != nil || sub.GetKind() != "Scale" {
		t.Errorf("Get(scale) = %v, %v; want a Scale", sub, err)
	}

	// Patches: merge, JSON, on the status and scale subresources.
	patches := []struct {
		name  string
		pt    types.PatchType
		data  string
		sub   []string
		field []string
		want  any
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"tier":"gold"}}}`, nil, []string{"metadata", "labels", "tier"}, "gold"},
		{"json", types.JSONPatchType, `[{"op":"replace","path":"/spec/color","value":"black"}]`, nil, []string{"spec", "color"}, "black"},
		{"status merge", types.MergePatchType, `{"status":{"replicas":7}}`, []string{"status"}, []string{"status", "replicas"}, int64(7)},
		{"scale merge", types.MergePatchType, `{"spec":{"replicas":2}}`, []string{"scale"}, []string{"spec", "replicas"}, int64(2)},
	}
	for _, tc := range patches {
		t.Run("patch "+tc.name, func(t *testing.T) {
			got, err := widgets.Patch(ctx, "w1", tc.pt, []byte(tc.data), metav1.PatchOptions{}, tc.sub...)
			if err != nil {
				t.Fatal(err)
			}
			if v := nested(t, got, tc.field...); v != tc.want {
				t.Errorf("%v = %#v, want %#v", tc.field, v, tc.want)
			}
		})
	}

	// List with a selector; items carry apiVersion and kind.
	if _, err := widgets.Create(ctx, newWidget("w2", 1, "red", map[string]any{"app": "other"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := widgets.List(ctx, metav1.ListOptions{LabelSelector: "app=shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != "w1" || list.Items[0].GetKind() != "Widget" || list.GetResourceVersion() == "" {
		t.Errorf("list app=shop = %+v", list)
	}
	all, err := client.NewDynamic(c).Resource(widgetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 2 {
		t.Errorf("list across namespaces = %v, %v; want 2 items", all, err)
	}

	// Errors come back as StatusErrors with the right reason.
	errs := []struct {
		name string
		call func() error
		is   func(error) bool
	}{
		{"get missing", func() error { _, err := widgets.Get(ctx, "nope", metav1.GetOptions{}); return err }, apierrors.IsNotFound},
		{"create twice", func() error {
			_, err := widgets.Create(ctx, newWidget("w1", 1, "red", nil), metav1.CreateOptions{})
			return err
		}, apierrors.IsAlreadyExists},
		{"schema violation", func() error {
			bad := newWidget("bad", 1, "red", nil)
			_ = unstructured.SetNestedField(bad.Object, "many", "spec", "replicas")
			_, err := widgets.Create(ctx, bad, metav1.CreateOptions{})
			return err
		}, apierrors.IsInvalid},
		{"unknown resource", func() error {
			_, err := client.NewDynamic(c).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		}, apierrors.IsNotFound},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !tc.is(err) {
				t.Fatalf("error = %v, want the predicate to hold", err)
			}
			if _, ok := err.(*apierrors.StatusError); !ok {
				t.Errorf("error is %T, want *apierrors.StatusError", err)
			}
		})
	}

	// Deletes.
	if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete = %v, want NotFound", err)
	}
	if err := widgets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=other"}); err != nil {
		t.Fatal(err)
	}
	if list, err := widgets.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("list after DeleteCollection = %v, %v; want empty", list, err)
	}

	// The watch saw every change of w1, in order, as Widgets.
	var types []watch.EventType
	for {
		ev := nextChange(t, w)
		if ev.Object == nil || ev.Object.GetKind() != "Widget" {
			t.Fatalf("event %s carries %v, want a Widget", ev.Type, ev.Object)
		}
		if ev.Object.GetName() != "w1" {
			continue
		}
		types = append(types, ev.Type)
		if ev.Type == watch.Deleted {
			break
		}
	}
	// create, update, status, scale, 4 patches, delete.
	want := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Modified,
		watch.Modified, watch.Modified, watch.Modified, watch.Modified, watch.Deleted}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event types of w1 (-want +got):\n%s", diff)
	}
}

func TestDynamicDeployment(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	deploys := client.NewDynamic(c).Resource(gvr).Namespace("default")

	w, err := deploys.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	}}
	created, err := deploys.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The server defaults the typed object.
	if nested(t, created, "spec", "strategy", "type") != "RollingUpdate" {
		t.Errorf("created deployment not defaulted: %v", created.Object["spec"])
	}
	if ev := nextChange(t, w); ev.Type != watch.Added || ev.Object.GetName() != "web" || ev.Object.GetKind() != "Deployment" {
		t.Errorf("first event = %s %v", ev.Type, ev.Object)
	}

	// The server sends list items without apiVersion and kind; List fills
	// them in from the list's.
	resp, err := c.Do(ctx, client.Request{Path: "/apis/apps/v1/namespaces/default/deployments"})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Items []map[string]any `json:"items"`
	}
	if err := utiljson.Unmarshal(resp.Body, &raw); err != nil || len(raw.Items) != 1 {
		t.Fatalf("raw list: %v %v", raw, err)
	}
	_, rawHasKind := raw.Items[0]["kind"]
	t.Logf("raw list item has a kind: %v", rawHasKind)
	list, err := deploys.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("list has %d items", len(list.Items))
	}
	if got := list.Items[0].GroupVersionKind(); got != appsv1.SchemeGroupVersion.WithKind("Deployment") {
		t.Errorf("item kind = %v (raw item had kind: %v), want apps/v1 Deployment", got, rawHasKind)
	}
	if list.GetKind() != "DeploymentList" {
		t.Errorf("list kind = %q", list.GetKind())
	}

	scale, err := deploys.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 2 {
		t.Fatalf("GetScale = %+v, %v", scale, err)
	}
	scale.Spec.Replicas = 5
	if _, err := deploys.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	patched, err := deploys.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers := nested(t, patched, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "nginx:2" || nested(t, patched, "spec", "replicas") != int64(5) {
		t.Errorf("after scale and strategic patch: replicas %v containers %v", nested(t, patched, "spec", "replicas"), containers)
	}
	if ev := nextChange(t, w); ev.Type != watch.Modified {
		t.Errorf("second event = %s, want MODIFIED", ev.Type)
	}
	if err := deploys.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := nextChange(t, w); ev.Type == watch.Deleted {
			break
		}
	}
}

// TestDynamicInformer runs a shared informer on the dynamic client.
func TestDynamicInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := startCRDServer(t)
	createCRD(t, c, widgetCRD())
	widgets := client.NewDynamic(c).Resource(widgetsGVR).Namespace("default")
	if _, err := widgets.Create(ctx, newWidget("before", 1, "red", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[*unstructured.Unstructured]{
		ListerWatcher: widgets.ListerWatcher(),
		Resource:      widgetsGVR.GroupResource(),
	})
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 2) // one per widget created below
	if _, err := inf.AddEventHandler(cache.HandlerFuncs[*unstructured.Unstructured]{
		AddFunc: func(obj *unstructured.Unstructured, _ bool) { added <- obj.GetKind() + " " + obj.GetName() },
	}, cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx, inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := widgets.Create(ctx, newWidget("after", 1, "red", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		select {
		case s := <-added:
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("informer delivered only %v", got)
		}
	}
	if diff := cmp.Diff([]string{"Widget before", "Widget after"}, got); diff != "" {
		t.Errorf("adds (-want +got):\n%s", diff)
	}
	if obj, err := inf.Lister().Namespace("default").Get("after"); err != nil || obj.GetName() != "after" {
		t.Errorf("lister get = %v, %v", obj, err)
	}
}

// TestDynamicExpired: a dynamic watch from a compacted resourceVersion
// reports 410 as the typed watch does (a refusal or an ERROR event).
func TestDynamicExpired(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{HistoryRevisions: 5})
	cms := client.NewDynamic(c).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	first, err := cms.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"i":"%d"}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	if err == nil {
		ev := next(t, w)
		w.Stop()
		if ev.Type != watch.Error || ev.Status == nil || ev.Status.Code != 410 {
			t.Fatalf("watch from a compacted resourceVersion: %s %+v, want an ERROR 410", ev.Type, ev.Status)
		}
		err = apierrors.FromObject(ev.Status)
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a compacted resourceVersion: %v, want Expired or Gone", err)
	}
}

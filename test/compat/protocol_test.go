package compat

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/pager"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// TestWatchExpired checks what client-go sees when it watches or lists
// from a compacted resourceVersion: the 410 Expired that makes reflectors
// relist.
func TestWatchExpired(t *testing.T) {
	ctx := context.Background()
	srv := startServerWith(t, memory.Config{HistoryRevisions: 5})
	cms := srv.clientset(t).CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		patch := fmt.Sprintf(`{"data":{"i":"%d"}}`, i)
		if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err == nil {
		ev := nextEvent(t, w)
		w.Stop()
		if ev.Type != watch.Error {
			t.Fatalf("watch from a compacted resourceVersion: %s event, want ERROR", ev.Type)
		}
		err = apierrors.FromObject(ev.Object)
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a compacted resourceVersion: %v, want 410 Expired", err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list at a compacted resourceVersion: %v, want 410 Expired", err)
	}
}

// TestListPager pages a list with client-go's pager.
func TestListPager(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cms := srv.clientset(t).CoreV1().ConfigMaps("default")
	const n = 23
	for i := range n {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return cms.List(ctx, opts)
	}))
	p.PageSize = 5
	seen := map[string]bool{}
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		seen[obj.(*corev1.ConfigMap).Name] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("pager saw %d config maps, want %d", len(seen), n)
	}
	if !srv.sawRequest("GET", "/api/v1/namespaces/default/configmaps?", "continue=", "limit=5") {
		t.Error("the pager never sent a continue token")
	}
}

// TestFieldValidationAndDryRun sends raw JSON through client-go's REST
// client: unknown fields are refused with Strict and reported with a
// warning by default; dryRun=All validates and stores nothing.
func TestFieldValidationAndDryRun(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs := srv.clientset(t)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"b"},"bogus":1}`)

	err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").
		Param("fieldValidation", "Strict").SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if !apierrors.IsBadRequest(err) {
		t.Errorf("strict create with an unknown field: %v, want BadRequest", err)
	}

	res := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx)
	if err := res.Error(); err != nil {
		t.Fatalf("default create with an unknown field: %v", err)
	}
	if len(res.Warnings()) == 0 {
		t.Error("no warning for the unknown field")
	}

	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}},
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run create stored the object: %v", err)
	}

	// A body over 3 MiB is 413.
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = 'x'
	}
	large := append(append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"`), big...), `"}}`...)
	var code int
	err = cs.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").
		SetHeader("Content-Type", "application/json").Body(large).Do(ctx).StatusCode(&code).Error()
	if code != http.StatusRequestEntityTooLarge || !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("4 MiB body: code %d, %v; want 413", code, err)
	}
}

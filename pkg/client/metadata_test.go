package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

func TestMetadataClient(t *testing.T) {
	ctx := context.Background()
	c := startCRDServer(t)
	createCRD(t, c, widgetCRD())
	if _, err := client.NewResource(c, client.Pods).Namespace("default").Create(ctx, newPod("p1", map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.NewDynamic(c).Resource(widgetsGVR).Namespace("default").Create(ctx, newWidget("w1", 1, "red", map[string]any{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		res  *client.MetadataResourceClient
		obj  string
	}{
		{"pods", client.NewMetadata(c).Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default"), "p1"},
		{"widgets", client.NewMetadata(c).Resource(widgetsGVR).Namespace("default"), "w1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.res.Get(ctx, tc.obj, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantType := metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			if got.TypeMeta != wantType || got.Name != tc.obj || got.UID == "" || got.Labels["app"] != "web" {
				t.Errorf("get = %+v", got)
			}

			list, err := tc.res.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Name != tc.obj || list.ResourceVersion == "" || list.Kind != "PartialObjectMetadataList" {
				t.Fatalf("list = %+v", list)
			}
			if diff := cmp.Diff(got.ObjectMeta, list.Items[0].ObjectMeta); diff != "" {
				t.Errorf("listed metadata differs from get (-get +list):\n%s", diff)
			}

			w, err := tc.res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			patched, err := tc.res.Patch(ctx, tc.obj, types.MergePatchType, []byte(`{"metadata":{"annotations":{"seen":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if patched.Annotations["seen"] != "yes" || patched.Kind != "PartialObjectMetadata" {
				t.Errorf("patched = %+v", patched)
			}
			ev := nextChange(t, w)
			if ev.Type != watch.Modified || ev.Object.Name != tc.obj || ev.Object.Annotations["seen"] != "yes" || ev.Object.Kind != "PartialObjectMetadata" {
				t.Errorf("event = %s %+v", ev.Type, ev.Object)
			}

			if err := tc.res.Delete(ctx, tc.obj, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextChange(t, w); ev.Type != watch.Deleted || ev.Object.Name != tc.obj {
				t.Errorf("event = %s %+v, want DELETED", ev.Type, ev.Object)
			}
			if _, err := tc.res.Get(ctx, tc.obj, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete = %v, want NotFound", err)
			}
		})
	}
}

// TestMetadataInformer runs a shared informer on the metadata client.
func TestMetadataInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := startCRDServer(t)
	createCRD(t, c, widgetCRD())
	if _, err := client.NewDynamic(c).Resource(widgetsGVR).Namespace("default").Create(ctx, newWidget("w1", 1, "red", map[string]any{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[*metav1.PartialObjectMetadata]{
		ListerWatcher: client.NewMetadata(c).Resource(widgetsGVR).ListerWatcher(),
		Resource:      widgetsGVR.GroupResource(),
	})
	if err != nil {
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
	got, err := inf.Lister().Namespace("default").Get("w1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] != "web" || got.UID == "" {
		t.Errorf("cached metadata = %+v", got)
	}
}

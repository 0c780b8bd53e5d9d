package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// configMapPatcher patches ConfigMaps through the typed client.
type configMapPatcher struct {
	c *client.ResourceClient[*corev1.ConfigMap]
}

func (p configMapPatcher) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := p.c.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

func startAPIServer(t *testing.T) *client.ResourceClient[*corev1.ConfigMap] {
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
	return client.NewResource(c, client.ConfigMaps).Namespace("default")
}

// TestRefManagerAgainstAPIServer checks that the adoption and release
// patches do what they mean on a real kplane API server, including its
// uid precondition.
func TestRefManagerAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx := t.Context()
	cms := startAPIServer(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner", UID: "owner-uid"}}
	ownerKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	web := map[string]string{"app": "web"}
	create := func(name string, lbls map[string]string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, OwnerReferences: refs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	get := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	tr := true
	ours := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", Controller: &tr, BlockOwnerDeletion: &tr}
	bystander := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "s-uid"}

	orphan := create("orphan", web, bystander)
	leaving := create("leaving", map[string]string{"app": "db"}, ours, bystander)
	stale := create("stale", web)
	staleOwned := create("stale-owned", nil, ours)
	// Replace both behind the cache's back: same names, new uids.
	for _, name := range []string{"stale", "stale-owned"} {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("stale", web)
	create("stale-owned", nil, ours)

	m, err := NewRefManager(RefManagerConfig[*corev1.ConfigMap]{
		Owner: owner, OwnerKind: ownerKind, Selector: labels.SelectorFromSet(web),
		Patcher:  configMapPatcher{cms},
		GetOwner: func(context.Context) (metav1.Object, error) { return owner, nil },
		Logger:   discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := m.Claim(ctx, []*corev1.ConfigMap{orphan, leaving, stale, staleOwned})
	// Adopting the replaced "stale" fails its uid precondition; kube-apiserver
	// answers that with 422 Invalid (metadata.uid is immutable), which Claim
	// returns so that the controller retries with a fresh cache, as
	// Kubernetes' controllers do. Nothing else may fail.
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "stale") || strings.Contains(err.Error(), "stale-owned") {
		t.Fatalf("Claim error = %v, want only the uid precondition failure adopting stale", err)
	}
	if len(claimed) != 1 || claimed[0].Name != "orphan" {
		t.Fatalf("claimed %v, want only orphan", claimed)
	}

	if ref := metav1.GetControllerOf(get("orphan")); ref == nil || ref.UID != "owner-uid" || !*ref.BlockOwnerDeletion {
		t.Errorf("orphan's controller after adoption = %+v", ref)
	}
	if refs := get("orphan").OwnerReferences; len(refs) != 2 {
		t.Errorf("orphan's other owner lost: %+v", refs)
	}
	if refs := get("leaving").OwnerReferences; len(refs) != 1 || refs[0].UID != "s-uid" {
		t.Errorf("leaving's refs after release = %+v, want only the bystander", refs)
	}
	// The uid precondition kept both patches off the replacements.
	if ref := metav1.GetControllerOf(get("stale")); ref != nil {
		t.Errorf("replacement of stale was adopted: %+v", ref)
	}
	if ref := metav1.GetControllerOf(get("stale-owned")); ref == nil {
		t.Error("replacement of stale-owned was released")
	}
}

// TestAdoptionOfForeignControlledObject: when the cache still shows an
// orphan that another controller has since adopted, the API server must
// refuse a second controller reference.
func TestAdoptionOfForeignControlledObject(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx := t.Context()
	cms := startAPIServer(t)
	cached, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"app": "web"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := true
	live := cached.DeepCopy()
	live.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid", Controller: &tr}}
	if _, err := cms.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner", UID: "owner-uid"}}
	m, err := NewRefManager(RefManagerConfig[*corev1.ConfigMap]{
		Owner: owner, OwnerKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Selector: labels.Everything(), Patcher: configMapPatcher{cms},
		GetOwner: func(context.Context) (metav1.Object, error) { return owner, nil },
		Logger:   discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := m.ClaimObject(ctx, cached, func(*corev1.ConfigMap) bool { return true })
	if ok {
		t.Fatal("claimed an object another controller owns")
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("ClaimObject = %v, want Invalid from the server", err)
	}
	after, err := cms.Get(ctx, "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(after); ref == nil || ref.UID != "other-uid" || len(after.OwnerReferences) != 1 {
		t.Fatalf("owner references after the refused adoption: %+v", after.OwnerReferences)
	}
}

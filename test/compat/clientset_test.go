package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// nextEvent reads one event from a client-go watch, failing after a hang
// guard.
func nextEvent(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

// TestClientsetPods drives the pods API with client-go's typed clientset.
func TestClientsetPods(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	pods := srv.clientset(t).CoreV1().Pods("default")

	created, err := pods.Create(ctx, pod("web", map[string]string{"app": "web"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Namespace != "default" {
		t.Fatalf("create returned %+v", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, pod("web", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: %v, want AlreadyExists", err)
	}
	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v, %v", got, err)
	}
	if _, err := pods.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: %v, want NotFound", err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %v", list, err)
	}

	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// Update, and a stale update conflicts.
	upd := got.DeepCopy()
	upd.Labels["v"] = "2"
	updated, err := pods.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	stale := got.DeepCopy()
	stale.Labels["v"] = "stale"
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want Conflict", err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).ResourceVersion != updated.ResourceVersion {
		t.Errorf("watch after update: %s %v", ev.Type, ev.Object)
	}

	// Status subresource.
	st := updated.DeepCopy()
	st.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, st, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	nextEvent(t, w)

	// Patches of the three kinds.
	patches := []struct {
		name  string
		pt    types.PatchType
		data  string
		sub   []string
		check func(*corev1.Pod) bool
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"merged":"yes"}}}`, nil,
			func(p *corev1.Pod) bool { return p.Labels["merged"] == "yes" && p.Labels["app"] == "web" }},
		{"strategic", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`, nil,
			func(p *corev1.Pod) bool {
				return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "nginx:1.27"
			}},
		{"json", types.JSONPatchType, `[{"op":"replace","path":"/metadata/labels/app","value":"api"}]`, nil,
			func(p *corev1.Pod) bool { return p.Labels["app"] == "api" }},
		{"status strategic", types.StrategicMergePatchType, `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, []string{"status"},
			func(p *corev1.Pod) bool { return len(p.Status.Conditions) == 1 && p.Status.Phase == corev1.PodRunning }},
	}
	for _, p := range patches {
		t.Run("patch "+p.name, func(t *testing.T) {
			out, err := pods.Patch(ctx, "web", p.pt, []byte(p.data), metav1.PatchOptions{}, p.sub...)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if !p.check(out) {
				t.Errorf("patched pod: labels %v, containers %v, status %+v", out.Labels, out.Spec.Containers, out.Status)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Modified {
				t.Errorf("watch after patch: %s", ev.Type)
			}
		})
	}

	// Invalid input is 422 with causes and stores nothing.
	_, err = pods.Create(ctx, pod("Bad_Name", nil), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("invalid create: %v, want Invalid", err)
	} else if se := err.(apierrors.APIStatus).Status(); se.Details == nil || len(se.Details.Causes) == 0 {
		t.Errorf("Invalid without causes: %+v", se)
	}

	// Delete: wrong precondition, then for real.
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("other")}); !apierrors.IsConflict(err) {
		t.Errorf("delete with wrong uid: %v, want Conflict", err)
	}
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "web" {
		t.Errorf("watch after delete: %s %v", ev.Type, ev.Object)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}

	// DeleteCollection.
	for i := range 3 {
		if _, err := pods.Create(ctx, pod(fmt.Sprintf("batch-%d", i), map[string]string{"batch": "1"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=1"}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	if l, err := pods.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("after delete collection: %v, %v", l, err)
	}
}

// TestClientsetDeploymentScale drives deployments and their scale
// subresource.
func TestClientsetDeploymentScale(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	deps := srv.clientset(t).AppsV1().Deployments("default")
	created, err := deps.Create(ctx, deployment("web", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Generation != 1 {
		t.Errorf("generation = %d, want 1", created.Generation)
	}
	s, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if s.Spec.Replicas != 1 || s.Status.Selector != "app=web" {
		t.Errorf("scale = %+v", s)
	}
	s.Spec.Replicas = 4
	s2, err := deps.UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
	if err != nil || s2.Spec.Replicas != 4 {
		t.Fatalf("update scale: %+v, %v", s2, err)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: s.ResourceVersion},
		Spec: autoscalingv1.ScaleSpec{Replicas: 9}}
	if _, err := deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale scale update: %v, want Conflict", err)
	}
	got, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 4 || got.Generation != 2 {
		t.Fatalf("after scale: replicas %v generation %d, %v", got.Spec.Replicas, got.Generation, err)
	}

	// A status write leaves the generation alone; a label change does too.
	got.Status.Replicas = 4
	if got, err = deps.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || got.Generation != 2 {
		t.Fatalf("update status: generation %d, %v", got.Generation, err)
	}
	if got, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil || got.Generation != 2 {
		t.Fatalf("label patch: generation %d, %v", got.Generation, err)
	}

	// A patch that would make the object invalid stores nothing.
	_, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"selector":{"matchLabels":{"app":"other"}}}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("selector/template mismatch patch: %v, want Invalid", err)
	}
	after, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != got.ResourceVersion {
		t.Errorf("rejected patch changed the object: rv %s -> %s, %v", got.ResourceVersion, after.ResourceVersion, err)
	}

	// The replica set scale subresource too.
	rss := srv.clientset(t).AppsV1().ReplicaSets("default")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](2), Selector: created.Spec.Selector, Template: created.Spec.Template}}
	if _, err := rss.Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create replica set: %v", err)
	}
	rsScale, err := rss.GetScale(ctx, "rs", metav1.GetOptions{})
	if err != nil || rsScale.Spec.Replicas != 2 {
		t.Fatalf("replica set scale: %+v, %v", rsScale, err)
	}

	// Foreground deletion is recorded as a finalizer and the object stays
	// until the garbage collector removes it.
	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatalf("foreground delete: %v", err)
	}
	deleting, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get during foreground delete: %v", err)
	}
	if deleting.DeletionTimestamp == nil || !hasString(deleting.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("foreground delete left deletionTimestamp %v, finalizers %v", deleting.DeletionTimestamp, deleting.Finalizers)
	}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDiscovery checks that client-go's discovery client finds every
// built-in resource with its verbs and short names.
func TestDiscovery(t *testing.T) {
	srv := startServer(t)
	disc := srv.clientset(t).Discovery()
	_, lists, err := disc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	type res struct {
		gv, name string
	}
	found := map[res]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[res{l.GroupVersion, r.Name}] = r
		}
	}
	want := []struct {
		gv, name, short string
		namespaced      bool
	}{
		{"v1", "pods", "po", true}, {"v1", "nodes", "no", false}, {"v1", "namespaces", "ns", false},
		{"v1", "events", "ev", true}, {"v1", "configmaps", "cm", true}, {"v1", "secrets", "", true},
		{"apps/v1", "deployments", "deploy", true}, {"apps/v1", "replicasets", "rs", true},
		{"coordination.k8s.io/v1", "leases", "", true},
		{"v1", "pods/status", "", true}, {"apps/v1", "deployments/scale", "", true},
	}
	for _, w := range want {
		r, ok := found[res{w.gv, w.name}]
		if !ok {
			t.Errorf("discovery lacks %s %s", w.gv, w.name)
			continue
		}
		if r.Namespaced != w.namespaced {
			t.Errorf("%s %s namespaced = %v", w.gv, w.name, r.Namespaced)
		}
		if w.short != "" && !hasString(r.ShortNames, w.short) {
			t.Errorf("%s %s short names %v lack %q", w.gv, w.name, r.ShortNames, w.short)
		}
	}
	if v, err := disc.ServerVersion(); err != nil || v.GitVersion == "" {
		t.Errorf("server version: %v, %v", v, err)
	}
}

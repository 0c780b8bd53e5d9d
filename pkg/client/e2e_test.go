package client_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// startServer runs a kplane API server on a memory backend over loopback
// HTTP and returns a client for it.
func startServer(t testing.TB, mcfg memory.Config) *client.Client {
	t.Helper()
	backend, err := memory.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	c, err := client.New(client.Config{Host: hs.URL, UserAgent: "kplane-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return c
}

func newPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// next reads one event or fails after a generous hang guard.
func next[T cache.Object](t testing.TB, w cache.Watch[T]) cache.Event[T] {
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
	panic("unreachable")
}

// nextChange skips bookmarks.
func nextChange[T cache.Object](t testing.TB, w cache.Watch[T]) cache.Event[T] {
	t.Helper()
	for {
		if ev := next(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

func TestE2EPodLifecycle(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	pods := client.NewResource(c, client.Pods).Namespace("default")

	created, err := pods.Create(ctx, newPod("web-1", map[string]string{"app": "web"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Namespace != "default" {
		t.Fatalf("created pod lacks server metadata: %+v", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, newPod("web-1", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create = %v, want AlreadyExists", err)
	}
	gen := newPod("", nil)
	gen.GenerateName = "web-"
	generated, err := pods.Create(ctx, gen, metav1.CreateOptions{})
	if err != nil || len(generated.Name) <= len("web-") {
		t.Fatalf("generateName create = %v, %v", generated, err)
	}

	got, err := pods.Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get differs from create (-create +get):\n%s", diff)
	}

	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "web-1" || list.ResourceVersion == "" {
		t.Errorf("labelled list = %d items, rv %q", len(list.Items), list.ResourceVersion)
	}
	if l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + generated.Name}); err != nil || len(l.Items) != 1 {
		t.Errorf("field-selected list = %v, %v", l, err)
	}

	// Update, then a stale update conflicts.
	upd := got.DeepCopy()
	upd.Labels["tier"] = "front"
	updated, err := pods.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == got.ResourceVersion {
		t.Error("update kept the resourceVersion")
	}
	stale := got.DeepCopy()
	stale.Labels["tier"] = "back"
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update = %v, want Conflict", err)
	}

	// Status goes through the status subresource only.
	st := updated.DeepCopy()
	st.Status.Phase = corev1.PodRunning
	withStatus, err := pods.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if err != nil || withStatus.Status.Phase != corev1.PodRunning {
		t.Fatalf("update status = %v, %v", withStatus, err)
	}
	ignored := withStatus.DeepCopy()
	ignored.Status.Phase = corev1.PodFailed
	afterMain, err := pods.Update(ctx, ignored, metav1.UpdateOptions{})
	if err != nil || afterMain.Status.Phase != corev1.PodRunning {
		t.Errorf("main update changed status: %v, %v", afterMain.Status.Phase, err)
	}

	// Patches of every type.
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		sub   []string
		check func(p *corev1.Pod) bool
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"m":"1"}}}`, nil, func(p *corev1.Pod) bool { return p.Labels["m"] == "1" }},
		{"strategic", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}`, nil,
			func(p *corev1.Pod) bool {
				return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "nginx:2"
			}},
		{"json", types.JSONPatchType, `[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`, nil,
			func(p *corev1.Pod) bool { return p.Annotations["a"] == "b" }},
		{"status merge", types.MergePatchType, `{"status":{"phase":"Succeeded"}}`, []string{"status"},
			func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }},
	}
	for _, tt := range tests {
		t.Run("patch "+tt.name, func(t *testing.T) {
			p, err := pods.Patch(ctx, "web-1", tt.pt, []byte(tt.patch), metav1.PatchOptions{}, tt.sub...)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p) {
				t.Errorf("patched pod: %+v", p)
			}
		})
	}
	if _, err := pods.Patch(ctx, "web-1", types.JSONPatchType, []byte(`[{"op":"replace","path":"/metadata/name","value":"BAD NAME"}]`), metav1.PatchOptions{}); err == nil {
		t.Error("patch to an invalid name succeeded")
	}

	// Invalid objects are 422 with causes.
	_, err = pods.Create(ctx, newPod("Not_A_Name", nil), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid create = %v, want Invalid", err)
	}
	if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) == 0 {
		t.Errorf("Invalid without causes: %#v", err)
	}
	if _, err := client.NewResource(c, client.Pods).Namespace("missing").Create(ctx, newPod("x", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace = %v, want NotFound", err)
	}

	// Delete with preconditions.
	if err := pods.Delete(ctx, "web-1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("wrong"))}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong uid = %v, want Conflict", err)
	}
	if err := pods.Delete(ctx, "web-1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete = %v, want NotFound", err)
	}
	if err := pods.Delete(ctx, "web-1", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete = %v, want NotFound", err)
	}

	// DeleteCollection.
	for i := range 3 {
		if _, err := pods.Create(ctx, newPod(fmt.Sprintf("batch-%d", i), map[string]string{"batch": "yes"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=yes"}); err != nil {
		t.Fatal(err)
	}
	left, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != generated.Name {
		t.Errorf("after delete collection: %d pods left", len(left.Items))
	}
}

func TestE2EListPaging(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	cms := client.NewResource(c, client.ConfigMaps).Namespace("default")
	for i := range 7 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		l, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	want := []string{"cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-5", "cm-6"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("paged names (-want +got):\n%s", diff)
	}
}

func TestE2EScale(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	deps := client.NewResource(c, client.Deployments).Namespace("default")
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
		},
	}
	created, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Replicas != 1 || s.Name != "web" {
		t.Errorf("scale = %+v", s)
	}
	s.Spec.Replicas = 5
	s2, err := deps.UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
	if err != nil || s2.Spec.Replicas != 5 {
		t.Fatalf("update scale = %+v, %v", s2, err)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: s.ResourceVersion},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}}
	if _, err := deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale scale update = %v, want Conflict", err)
	}
	got, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 5 || got.Generation <= created.Generation {
		t.Errorf("deployment after scale: replicas %v generation %d (was %d), %v", got.Spec.Replicas, got.Generation, created.Generation, err)
	}
	ps, err := deps.PatchScale(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
	if err != nil || ps.Spec.Replicas != 3 {
		t.Fatalf("scale patch = %+v, %v", ps, err)
	}
	if got, err := deps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 3 {
		t.Errorf("after scale patch: %v, %v", got.Spec.Replicas, err)
	}
}

// TestE2EWatchResume checks that a watch from a resourceVersion delivers
// exactly the changes after it, in order.
func TestE2EWatchResume(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	pods := client.NewResource(c, client.Pods).Namespace("default")
	p, err := pods.Create(ctx, newPod("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := p.ResourceVersion
	p.Labels = map[string]string{"v": "2"}
	p2, err := pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, newPod("b", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	type seen struct {
		Type watch.EventType
		Name string
	}
	var got []seen
	lastRV := 0
	for range 3 {
		ev := nextChange(t, w)
		got = append(got, seen{ev.Type, ev.Object.Name})
		rv, err := strconv.Atoi(ev.Object.ResourceVersion)
		if err != nil || rv <= lastRV {
			t.Errorf("resourceVersion %q not increasing after %d", ev.Object.ResourceVersion, lastRV)
		}
		lastRV = rv
	}
	want := []seen{{watch.Modified, "a"}, {watch.Added, "b"}, {watch.Deleted, "a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Resuming from the update skips it.
	w2, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: p2.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if ev := nextChange(t, w2); ev.Type != watch.Added || ev.Object.Name != "b" {
		t.Errorf("first event after %s = %s %s, want ADDED b", p2.ResourceVersion, ev.Type, ev.Object.Name)
	}
}

// TestE2EWatchList checks the streaming initial list that informers use.
func TestE2EWatchList(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	pods := client.NewResource(c, client.Pods).Namespace("default")
	for _, n := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, newPod(n, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	names := map[string]bool{}
	for len(names) < 2 {
		ev := next(t, w)
		if ev.Type != watch.Added {
			t.Fatalf("initial event %s before both ADDED", ev.Type)
		}
		names[ev.Object.Name] = true
	}
	ev := next(t, w)
	if ev.Type != watch.Bookmark || ev.Object.Annotations[metav1.InitialEventsAnnotationKey] != "true" || ev.Object.ResourceVersion == "" {
		t.Fatalf("after the initial events: %s %+v, want the initial-events-end BOOKMARK", ev.Type, ev.Object.ObjectMeta)
	}
	if _, err := pods.Create(ctx, newPod("c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextChange(t, w); ev.Type != watch.Added || ev.Object.Name != "c" {
		t.Errorf("change after the bookmark = %s %s", ev.Type, ev.Object.Name)
	}
}

// TestE2EWatchSelector checks that a selecting watch sees an object leave
// (DELETED) and come back (ADDED).
func TestE2EWatchSelector(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	pods := client.NewResource(c, client.Pods).Namespace("default")
	p, err := pods.Create(ctx, newPod("a", map[string]string{"app": "web"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "app=web", ResourceVersion: p.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, app := range []string{"db", "web"} {
		if _, err := pods.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"`+app+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if ev := nextChange(t, w); ev.Type != watch.Deleted {
		t.Errorf("label removed: %s, want DELETED", ev.Type)
	}
	if ev := nextChange(t, w); ev.Type != watch.Added {
		t.Errorf("label restored: %s, want ADDED", ev.Type)
	}
}

// TestE2EExpired checks 410 handling: a watch or an exact list from a
// compacted resourceVersion is refused with Expired/Gone, which is what
// tells an informer to relist.
func TestE2EExpired(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{HistoryRevisions: 5})
	cms := client.NewResource(c, client.ConfigMaps).Namespace("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"i":"`+strconv.Itoa(i)+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err == nil {
		// kube-apiserver's way: a 200 stream holding one ERROR event.
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

	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list of a compacted resourceVersion: %v, want Expired or Gone", err)
	}
}

// TestE2ELeases checks the calls leader election makes on a Lease.
func TestE2ELeases(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	leases := client.NewResource(c, client.Leases).Namespace("kube-system")
	now := metav1.NowMicro()
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lock"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("b")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("c")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second update from the same version = %v, want Conflict", err)
	}
	got, err := leases.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil || *got.Spec.HolderIdentity != "b" || got.Spec.RenewTime == nil {
		t.Errorf("lease = %+v, %v", got.Spec, err)
	}
}

// TestE2EWatchReplaysToList is a randomized invariant test: concurrent
// writers create, update and delete pods while one watch runs; replaying
// the watch's events must give exactly the state a list returns at the
// last event's resourceVersion, with resourceVersions strictly increasing.
func TestE2EWatchReplaysToList(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	pods := client.NewResource(c, client.Pods).Namespace("default")
	start, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	const writers, ops = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for wi := range writers {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(wi)))
		wg.Go(func() {
			for i := range ops {
				name := fmt.Sprintf("w%d-%d", wi, rng.IntN(5))
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = pods.Create(ctx, newPod(name, nil), metav1.CreateOptions{})
				case 1:
					_, err = pods.Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"i":"%d"}}}`, i)), metav1.PatchOptions{})
				case 2:
					err = pods.Delete(ctx, name, metav1.DeleteOptions{})
				}
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A marker write ends the replay: every earlier change precedes it.
	marker, err := pods.Create(ctx, newPod("marker", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	state := map[string]string{} // name -> resourceVersion
	last := 0
	for {
		ev := next(t, w)
		if ev.Type == watch.Bookmark {
			continue
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %+v", ev.Status)
		}
		rv, err := strconv.Atoi(ev.Object.ResourceVersion)
		if err != nil || rv <= last {
			t.Fatalf("resourceVersion %q after %d", ev.Object.ResourceVersion, last)
		}
		last = rv
		switch ev.Type {
		case watch.Added, watch.Modified:
			state[ev.Object.Name] = ev.Object.ResourceVersion
		case watch.Deleted:
			delete(state, ev.Object.Name)
		}
		if ev.Object.Name == "marker" && ev.Object.ResourceVersion == marker.ResourceVersion {
			break
		}
	}
	list, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: marker.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range list.Items {
		want[p.Name] = p.ResourceVersion
	}
	if diff := cmp.Diff(want, state); diff != "" {
		t.Errorf("replayed watch differs from the list (-list +watch):\n%s", diff)
	}
}

// TestE2EWatchTimeout checks that the server ends a watch after its
// timeoutSeconds and that the client then closes the channel.
func TestE2EWatchTimeout(t *testing.T) {
	c := startServer(t, memory.Config{})
	w, err := client.NewResource(c, client.Pods).Namespace("default").Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Bookmark {
				t.Fatalf("unexpected event %s", ev.Type)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the watch outlived its timeoutSeconds")
		}
	}
}

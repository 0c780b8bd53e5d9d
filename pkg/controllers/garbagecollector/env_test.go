package garbagecollector

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// recordedEvent is one Event the fake recorder got.
type recordedEvent struct {
	Namespace, Name, Type, Reason string
}

// fakeRecorder keeps the events it is given.
type fakeRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
	added  chan struct{} // signalled (non-blocking) on every event
}

func newFakeRecorder() *fakeRecorder { return &fakeRecorder{added: make(chan struct{}, 1)} }

func (r *fakeRecorder) Event(obj record.Object, eventType, reason, _ string) {
	r.mu.Lock()
	r.events = append(r.events, recordedEvent{obj.GetNamespace(), obj.GetName(), eventType, reason})
	r.mu.Unlock()
	select {
	case r.added <- struct{}{}:
	default:
	}
}

func (r *fakeRecorder) has(e recordedEvent) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, e)
}

// harness is an environment running the garbage collector.
type harness struct {
	t   *testing.T
	env *testenv.Env
	cms *client.ResourceClient[*corev1.ConfigMap]
	rec *fakeRecorder
}

func startHarness(t *testing.T) *harness {
	t.Helper()
	rec := newFakeRecorder()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		gc, err := New(Config{Client: env.Client, Informers: f, Recorder: rec, Logger: logger})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return gc.Run(ctx, 2)
	}))
	return &harness{t: t, env: env, cms: client.NewResource(env.Client, client.ConfigMaps), rec: rec}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func ref(kind, apiVersion string, obj metav1.Object, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID()}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

func cmRef(obj metav1.Object, block bool) metav1.OwnerReference {
	return ref("ConfigMap", "v1", obj, block)
}

// createCM creates a ConfigMap in ns owned by owners, with finalizers.
func (h *harness) createCM(ns, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := h.cms.Namespace(ns).Create(ctxFor(h.t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, OwnerReferences: owners, Finalizers: finalizers,
	}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (h *harness) deleteCM(cm *corev1.ConfigMap, policy metav1.DeletionPropagation) {
	h.t.Helper()
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if err := h.cms.Namespace(cm.Namespace).Delete(ctxFor(h.t), cm.Name, opts); err != nil {
		h.t.Fatalf("delete configmap %s: %v", testenv.Key(cm), err)
	}
}

func (h *harness) getCM(cm *corev1.ConfigMap) *corev1.ConfigMap {
	h.t.Helper()
	got, err := h.cms.Namespace(cm.Namespace).Get(ctxFor(h.t), cm.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get configmap %s: %v", testenv.Key(cm), err)
	}
	return got
}

func (h *harness) removeFinalizers(cm *corev1.ConfigMap) {
	h.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	if _, err := h.cms.Namespace(cm.Namespace).Patch(ctxFor(h.t), cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		h.t.Fatalf("remove finalizers of %s: %v", testenv.Key(cm), err)
	}
}

func ownerUIDs(obj metav1.Object) []types.UID {
	var out []types.UID
	for _, r := range obj.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// The cases share one environment (one API server, one collector), each in
// its own namespace.
func TestGarbageCollector(t *testing.T) {
	h := startHarness(t)

	t.Run("background deletes dependents after the owner", func(t *testing.T) {
		ns := h.env.Namespace(t)
		owner := h.createCM(ns, "owner", nil)
		dep := h.createCM(ns, "dep", nil, cmRef(owner, false))
		grandchild := h.createCM(ns, "grandchild", nil, cmRef(dep, false))
		h.deleteCM(owner, metav1.DeletePropagationBackground)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(grandchild))
	})

	t.Run("pods of a deleted replicaset are collected", func(t *testing.T) {
		ns := h.env.Namespace(t)
		rss := client.NewResource(h.env.Client, client.ReplicaSets).Namespace(ns)
		rs, err := rss.Create(ctxFor(t), newReplicaSet(ns, "web"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods := client.NewResource(h.env.Client, client.Pods).Namespace(ns)
		var keys []string
		for _, name := range []string{"web-a", "web-b"} {
			p, err := pods.Create(ctxFor(t), newPod(ns, name, ref("ReplicaSet", "apps/v1", rs, true)), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, testenv.Key(p))
		}
		if err := rss.Delete(ctxFor(t), rs.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			testenv.WaitForDeletion(t, h.env, client.Pods, k)
		}
	})

	t.Run("foreground keeps the owner until blocking dependents are gone", func(t *testing.T) {
		ns := h.env.Namespace(t)
		owner := h.createCM(ns, "owner", nil)
		// The finalizer keeps the dependent, once deleted, until the test
		// lets it go.
		blocking := h.createCM(ns, "blocking", []string{"example.com/hold"}, cmRef(owner, true))
		nonBlocking := h.createCM(ns, "non-blocking", nil, cmRef(owner, false))
		h.deleteCM(owner, metav1.DeletePropagationForeground)

		testenv.WaitFor(t, h.env, client.ConfigMaps, testenv.Key(blocking), func(cm *corev1.ConfigMap) bool {
			return cm.DeletionTimestamp != nil
		})
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(nonBlocking))
		// The blocking dependent still exists, so the owner must too.
		got := h.getCM(owner)
		if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner during foreground deletion: deletionTimestamp %v, finalizers %v", got.DeletionTimestamp, got.Finalizers)
		}
		h.removeFinalizers(blocking)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(blocking))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(owner))
	})

	t.Run("foreground deletion cascades through a chain", func(t *testing.T) {
		ns := h.env.Namespace(t)
		owner := h.createCM(ns, "owner", nil)
		mid := h.createCM(ns, "mid", nil, cmRef(owner, true))
		leaf := h.createCM(ns, "leaf", []string{"example.com/hold"}, cmRef(mid, true))
		h.deleteCM(owner, metav1.DeletePropagationForeground)
		// The middle object is deleted in the foreground too: it waits
		// for the held leaf, and the owner waits for it.
		testenv.WaitFor(t, h.env, client.ConfigMaps, testenv.Key(leaf), func(cm *corev1.ConfigMap) bool {
			return cm.DeletionTimestamp != nil
		})
		gotMid := h.getCM(mid)
		if gotMid.DeletionTimestamp == nil || !slices.Contains(gotMid.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("middle object: deletionTimestamp %v, finalizers %v; want a foreground deletion", gotMid.DeletionTimestamp, gotMid.Finalizers)
		}
		if got := h.getCM(owner); got.DeletionTimestamp == nil {
			t.Fatalf("owner is not being deleted")
		}
		h.removeFinalizers(leaf)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(leaf))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(mid))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(owner))
	})

	t.Run("foreground without dependents deletes the owner", func(t *testing.T) {
		ns := h.env.Namespace(t)
		owner := h.createCM(ns, "owner", nil)
		h.deleteCM(owner, metav1.DeletePropagationForeground)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(owner))
	})

	t.Run("orphan leaves dependents without the reference", func(t *testing.T) {
		ns := h.env.Namespace(t)
		owner := h.createCM(ns, "owner", nil)
		other := h.createCM(ns, "other", nil)
		dep := h.createCM(ns, "dep", nil, cmRef(owner, true))
		dep2 := h.createCM(ns, "dep2", nil, cmRef(owner, false), cmRef(other, false))
		h.deleteCM(owner, metav1.DeletePropagationOrphan)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(owner))
		if got := ownerUIDs(h.getCM(dep)); len(got) != 0 {
			t.Errorf("orphaned dependent still has owners %v", got)
		}
		if got := ownerUIDs(h.getCM(dep2)); !slices.Equal(got, []types.UID{other.UID}) {
			t.Errorf("orphaned dependent with another owner has owners %v, want [%s]", got, other.UID)
		}
	})

	t.Run("dependent of an owner that never existed is collected", func(t *testing.T) {
		ns := h.env.Namespace(t)
		ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "00000000-0000-0000-0000-00000000dead"}
		dep := h.createCM(ns, "dep", nil, ghost)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
	})

	t.Run("an owner of the same name with another uid is not the owner", func(t *testing.T) {
		ns := h.env.Namespace(t)
		h.createCM(ns, "owner", nil)
		stale := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "00000000-0000-0000-0000-0000000000aa"}
		dep := h.createCM(ns, "dep", nil, stale)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
	})

	t.Run("a dependent with two owners survives one of them", func(t *testing.T) {
		ns := h.env.Namespace(t)
		a := h.createCM(ns, "a", nil)
		b := h.createCM(ns, "b", nil)
		dep := h.createCM(ns, "dep", nil, cmRef(a, true), cmRef(b, true))
		h.deleteCM(a, metav1.DeletePropagationBackground)
		got := testenv.WaitFor(t, h.env, client.ConfigMaps, testenv.Key(dep), func(cm *corev1.ConfigMap) bool {
			return len(cm.OwnerReferences) == 1
		})
		if uids := ownerUIDs(got); !slices.Equal(uids, []types.UID{b.UID}) || got.UID != dep.UID || got.DeletionTimestamp != nil {
			t.Fatalf("dependent after one owner's deletion: uid %s, owners %v, deletionTimestamp %v", got.UID, uids, got.DeletionTimestamp)
		}
		h.deleteCM(b, metav1.DeletePropagationBackground)
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
	})

	t.Run("a cluster-scoped owner may own namespaced dependents", func(t *testing.T) {
		ns := h.env.Namespace(t)
		nodes := client.NewResource(h.env.Client, client.Nodes)
		node, err := nodes.Create(ctxFor(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep := h.createCM(ns, "dep", nil, ref("Node", "v1", node, false))
		sibling := h.createCM(ns, "sibling", nil, ref("Node", "v1", node, false), cmRef(dep, false))
		if err := nodes.Delete(ctxFor(t), node.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(sibling))
	})

	t.Run("an owner in another namespace is not an owner", func(t *testing.T) {
		ns1, ns2 := h.env.Namespace(t), h.env.Namespace(t)
		owner := h.createCM(ns1, "owner", nil)
		// Created after the owner is in the graph: it names an observed
		// owner in another namespace, which is reported.
		testenv.WaitFor(t, h.env, client.ConfigMaps, testenv.Key(owner), func(*corev1.ConfigMap) bool { return true })
		dep := h.createCM(ns2, "dep", nil, cmRef(owner, false))
		testenv.WaitForDeletion(t, h.env, client.ConfigMaps, testenv.Key(dep))
		if _, err := h.cms.Namespace(ns1).Get(ctxFor(t), owner.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("the owner in the other namespace: %v", err)
		}
		want := recordedEvent{Namespace: ns2, Name: "dep", Type: corev1.EventTypeWarning, Reason: "OwnerRefInvalidNamespace"}
		// The event is recorded before the dependent's deletion is
		// decided, so it is there by now.
		if !h.rec.has(want) {
			t.Errorf("no event %+v; got %+v", want, h.rec.events)
		}
	})

}

func newReplicaSet(ns, name string) *appsv1.ReplicaSet {
	replicas := int32(0)
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}
}

func newPod(ns, name string, owner metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
}

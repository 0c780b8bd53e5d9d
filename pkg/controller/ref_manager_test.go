package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// patchAction is one call the fake patcher saw.
type patchAction struct {
	Namespace, Name string
	PatchType       types.PatchType
	Patch           string
}

// fakePatcher is an action-recording fake of the API server's patch verb for
// one type: it applies strategic merge patches to the objects it holds, and
// rejects them as the API server does when metadata.uid differs from the
// stored object's or when the result has two controllers.
type fakePatcher[T metav1.Object] struct {
	schema any // the Go type strategicpatch reads the merge keys from

	mu      sync.Mutex
	objects map[string]T
	actions []patchAction
	// errs, when set for a name, is returned instead of applying the patch.
	errs map[string]error
}

func newFakePatcher[T metav1.Object](t testing.TB, schema any, objs ...T) *fakePatcher[T] {
	t.Helper()
	f := &fakePatcher[T]{schema: schema, objects: make(map[string]T), errs: make(map[string]error)}
	for _, o := range objs {
		f.objects[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return f
}

func (f *fakePatcher[T]) Patch(_ context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, patchAction{namespace, name, pt, string(data)})
	gr := schema.GroupResource{Resource: "objects"}
	if err := f.errs[name]; err != nil {
		return err
	}
	cur, ok := f.objects[namespace+"/"+name]
	if !ok {
		return apierrors.NewNotFound(gr, name)
	}
	if pt != types.StrategicMergePatchType {
		return apierrors.NewBadRequest("unsupported patch type " + string(pt))
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, data, f.schema)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	out := newLike(cur)
	if err := json.Unmarshal(patched, out); err != nil {
		return err
	}
	if out.GetUID() != cur.GetUID() {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Object"}, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), out.GetUID(), "field is immutable")})
	}
	controllers := 0
	for _, r := range out.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			controllers++
		}
	}
	if controllers > 1 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Object"}, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "ownerReferences"), controllers, "only one reference can have Controller set to true")})
	}
	f.objects[namespace+"/"+name] = out
	return nil
}

// newLike returns a new zero object of the same pointer type as v.
func newLike[T metav1.Object](v T) T {
	var out any
	switch any(v).(type) {
	case *corev1.Pod:
		out = &corev1.Pod{}
	case *appsv1.ReplicaSet:
		out = &appsv1.ReplicaSet{}
	default:
		panic(fmt.Sprintf("newLike: unsupported %T", v))
	}
	return out.(T)
}

func (f *fakePatcher[T]) get(key string) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[key]
}

func (f *fakePatcher[T]) recorded() []patchAction {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]patchAction(nil), f.actions...)
}

func ownerRS(uid types.UID, deleting bool) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: uid}}
	if deleting {
		now := metav1.Unix(100, 0)
		rs.DeletionTimestamp = &now
	}
	return rs
}

func controllerRef(uid types.UID) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: uid, Controller: &t, BlockOwnerDeletion: &t}
}

func pod(name string, lbls map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: lbls, OwnerReferences: refs,
	}}
}

var discard = slog.New(slog.DiscardHandler)

var (
	matching = map[string]string{"app": "web"}
	other    = map[string]string{"app": "db"}
)

func deleting(p *corev1.Pod) *corev1.Pod {
	now := metav1.Unix(200, 0)
	p.DeletionTimestamp = &now
	return p
}

func TestClaimObject(t *testing.T) {
	const ownerUID = "owner-uid"
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("uid mismatch"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil)
	internal := apierrors.NewInternalError(errors.New("boom"))
	adoptJSON := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"owner-uid","controller":true,"blockOwnerDeletion":true}],"uid":"uid-p"}}`
	releaseJSON := `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"owner-uid"}],"uid":"uid-p"}}`
	nonController := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}

	tests := []struct {
		name        string
		owner       *appsv1.ReplicaSet // cached owner
		fresh       *appsv1.ReplicaSet // what the uncached read returns
		freshErr    error
		obj         *corev1.Pod
		patchErr    error
		wantClaimed bool
		wantErr     bool
		wantPatch   string // "" means no write
		wantReads   int
		wantRefs    []metav1.OwnerReference // refs of the stored object after the claim
	}{
		{
			name: "controlled by another owner and matching", obj: pod("p", matching, controllerRef("someone-else")),
			wantRefs: []metav1.OwnerReference{controllerRef("someone-else")},
		},
		{
			name: "controlled by another owner and not matching", obj: pod("p", other, controllerRef("someone-else")),
			wantRefs: []metav1.OwnerReference{controllerRef("someone-else")},
		},
		{
			name: "owned and matching", obj: pod("p", matching, controllerRef(ownerUID)),
			wantClaimed: true, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "owned and matching while the owner is deleted", owner: ownerRS(ownerUID, true),
			obj:         pod("p", matching, controllerRef(ownerUID)),
			wantClaimed: true, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "owned and not matching is released", obj: pod("p", other, controllerRef(ownerUID), nonController),
			wantPatch: releaseJSON, wantRefs: []metav1.OwnerReference{nonController},
		},
		{
			name: "owned and not matching while the owner is deleted", owner: ownerRS(ownerUID, true),
			obj:      pod("p", other, controllerRef(ownerUID)),
			wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "release of a vanished object", obj: pod("p", other, controllerRef(ownerUID)), patchErr: notFound,
			wantPatch: releaseJSON, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "release of a replaced object (conflict)", obj: pod("p", other, controllerRef(ownerUID)), patchErr: conflict,
			wantPatch: releaseJSON, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "release rejected as invalid", obj: pod("p", other, controllerRef(ownerUID)), patchErr: invalid,
			wantPatch: releaseJSON, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "release fails on a server error", obj: pod("p", other, controllerRef(ownerUID)), patchErr: internal,
			wantPatch: releaseJSON, wantErr: true, wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "orphan that matches is adopted", obj: pod("p", matching),
			wantClaimed: true, wantPatch: adoptJSON, wantReads: 1,
			wantRefs: []metav1.OwnerReference{controllerRef(ownerUID)},
		},
		{
			name: "orphan with a non-controller owner is adopted", obj: pod("p", matching, nonController),
			wantClaimed: true, wantPatch: adoptJSON, wantReads: 1,
			wantRefs: []metav1.OwnerReference{controllerRef(ownerUID), nonController},
		},
		{
			name: "orphan that does not match", obj: pod("p", other),
		},
		{
			name: "orphan being deleted", obj: deleting(pod("p", matching)),
		},
		{
			name: "orphan while the cached owner is deleted", owner: ownerRS(ownerUID, true), obj: pod("p", matching),
		},
		{
			name: "orphan in another namespace", obj: func() *corev1.Pod { p := pod("p", matching); p.Namespace = "elsewhere"; return p }(),
		},
		{
			name: "fresh owner has another uid", fresh: ownerRS("new-uid", false), obj: pod("p", matching),
			wantErr: true, wantReads: 1,
		},
		{
			name: "fresh owner is being deleted", fresh: ownerRS(ownerUID, true), obj: pod("p", matching),
			wantErr: true, wantReads: 1,
		},
		{
			name: "fresh owner is gone", freshErr: notFound, obj: pod("p", matching),
			wantErr: true, wantReads: 1,
		},
		{
			name: "adoption of a vanished object", obj: pod("p", matching), patchErr: notFound,
			wantPatch: adoptJSON, wantReads: 1,
		},
		{
			name: "adoption conflict", obj: pod("p", matching), patchErr: conflict,
			wantPatch: adoptJSON, wantReads: 1,
		},
		{
			name: "adoption fails on a server error", obj: pod("p", matching), patchErr: internal,
			wantPatch: adoptJSON, wantReads: 1, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := tt.owner
			if owner == nil {
				owner = ownerRS(ownerUID, false)
			}
			fresh := tt.fresh
			if fresh == nil {
				fresh = owner
			}
			fp := newFakePatcher(t, corev1.Pod{}, tt.obj.DeepCopy())
			if tt.patchErr != nil {
				fp.errs[tt.obj.Name] = tt.patchErr
			}
			reads := 0
			m, err := NewRefManager(RefManagerConfig[*corev1.Pod]{
				Owner:     owner,
				OwnerKind: rsKind,
				Selector:  labels.SelectorFromSet(matching),
				Patcher:   fp,
				Logger:    discard,
				GetOwner: func(context.Context) (metav1.Object, error) {
					reads++
					if tt.freshErr != nil {
						return nil, tt.freshErr
					}
					return fresh, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := m.Claim(t.Context(), []*corev1.Pod{tt.obj})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Claim error = %v, want error %v", err, tt.wantErr)
			}
			if got := len(claimed) == 1; got != tt.wantClaimed {
				t.Errorf("claimed = %v, want %v", got, tt.wantClaimed)
			}
			var want []patchAction
			if tt.wantPatch != "" {
				want = []patchAction{{tt.obj.Namespace, tt.obj.Name, types.StrategicMergePatchType, tt.wantPatch}}
			}
			if diff := cmp.Diff(want, fp.recorded()); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if reads != tt.wantReads {
				t.Errorf("fresh reads of the owner = %d, want %d", reads, tt.wantReads)
			}
			if diff := cmp.Diff(tt.wantRefs, fp.get(tt.obj.Namespace+"/"+tt.obj.Name).OwnerReferences); tt.patchErr == nil && diff != "" {
				t.Errorf("stored ownerReferences (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimManyReadsOwnerOnce claims a mix of objects: the owner is read
// fresh exactly once however many orphans are adopted, a failed claim does
// not stop the others, and the claimed set keeps the input order.
func TestClaimManyReadsOwnerOnce(t *testing.T) {
	const ownerUID = "owner-uid"
	objs := []*corev1.Pod{
		pod("a", matching),
		pod("b", matching, controllerRef(ownerUID)),
		pod("c", other, controllerRef(ownerUID)),
		pod("d", matching),
		pod("e", matching, controllerRef("x")),
		pod("f", matching),
		pod("g", matching),
	}
	var stored []*corev1.Pod
	for _, o := range objs {
		stored = append(stored, o.DeepCopy())
	}
	fp := newFakePatcher(t, corev1.Pod{}, stored...)
	fp.errs["f"] = apierrors.NewServiceUnavailable("try later")
	reads := 0
	claimed, err := ClaimPods(t.Context(), RefManagerConfig[*corev1.Pod]{
		Owner: ownerRS(ownerUID, false), OwnerKind: rsKind, Selector: labels.SelectorFromSet(matching), Patcher: fp, Logger: discard,
		GetOwner: func(context.Context) (metav1.Object, error) { reads++; return ownerRS(ownerUID, false), nil },
	}, objs, func(p *corev1.Pod) bool { return p.Name != "g" })
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("Claim error = %v, want the failure of f", err)
	}
	var names []string
	for _, p := range claimed {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "d"}, names); diff != "" {
		t.Errorf("claimed (-want +got):\n%s", diff)
	}
	if reads != 1 {
		t.Errorf("fresh reads = %d, want 1", reads)
	}
	var patched []string
	for _, a := range fp.recorded() {
		patched = append(patched, a.Name)
	}
	if diff := cmp.Diff([]string{"a", "c", "d", "f"}, patched); diff != "" {
		t.Errorf("patched (-want +got):\n%s", diff)
	}
	if metav1.GetControllerOf(fp.get("ns/c")) != nil {
		t.Error("c still controlled after release")
	}
}

// TestClaimNoAdoptionNoRead checks that the owner is not read when nothing
// needs adopting.
func TestClaimNoAdoptionNoRead(t *testing.T) {
	fp := newFakePatcher[*corev1.Pod](t, corev1.Pod{})
	_, err := ClaimPods(t.Context(), RefManagerConfig[*corev1.Pod]{
		Owner: ownerRS("u", false), OwnerKind: rsKind, Selector: labels.SelectorFromSet(matching), Patcher: fp, Logger: discard,
		GetOwner: func(context.Context) (metav1.Object, error) { t.Error("owner read"); return nil, nil },
	}, []*corev1.Pod{pod("a", other), pod("b", matching, controllerRef("u"))})
	if err != nil {
		t.Fatal(err)
	}
}

func TestClaimReplicaSets(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "d-uid"}}
	orphan := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs1", UID: "rs1", Labels: matching}}
	fp := newFakePatcher(t, appsv1.ReplicaSet{}, orphan.DeepCopy())
	claimed, err := ClaimReplicaSets(t.Context(), RefManagerConfig[*appsv1.ReplicaSet]{
		Owner: deploy, OwnerKind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Selector: labels.SelectorFromSet(matching), Patcher: fp, Logger: discard,
		GetOwner: func(context.Context) (metav1.Object, error) { return deploy, nil },
	}, []*appsv1.ReplicaSet{orphan})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 {
		t.Fatalf("claimed %d, want 1", len(claimed))
	}
	ref := metav1.GetControllerOf(fp.get("ns/rs1"))
	if ref == nil || ref.UID != "d-uid" || ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller ref after adoption = %+v", ref)
	}
}

// TestAdoptRejectedWhenControlledElsewhere: if another controller adopted
// the object after our cache saw it as an orphan, the server refuses a
// second controller and the claim reports an error rather than stealing it.
func TestAdoptRejectedWhenControlledElsewhere(t *testing.T) {
	cached := pod("p", matching)
	fp := newFakePatcher(t, corev1.Pod{}, pod("p", matching, controllerRef("someone-else")))
	claimed, err := ClaimPods(t.Context(), RefManagerConfig[*corev1.Pod]{
		Owner: ownerRS("u", false), OwnerKind: rsKind, Selector: labels.SelectorFromSet(matching), Patcher: fp, Logger: discard,
		GetOwner: func(context.Context) (metav1.Object, error) { return ownerRS("u", false), nil },
	}, []*corev1.Pod{cached})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("Claim error = %v, want Invalid", err)
	}
	if len(claimed) != 0 {
		t.Fatalf("claimed %v", claimed)
	}
	if ref := metav1.GetControllerOf(fp.get("ns/p")); ref.UID != "someone-else" {
		t.Fatalf("controller changed to %v", ref.UID)
	}
}

func TestNewRefManagerValidates(t *testing.T) {
	valid := RefManagerConfig[*corev1.Pod]{
		Owner: ownerRS("u", false), OwnerKind: rsKind, Selector: labels.Everything(),
		Patcher:  PatcherFunc(func(context.Context, string, string, types.PatchType, []byte) error { return nil }),
		GetOwner: func(context.Context) (metav1.Object, error) { return nil, nil },
	}
	if _, err := NewRefManager(valid); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for name, mutate := range map[string]func(*RefManagerConfig[*corev1.Pod]){
		"no owner":    func(c *RefManagerConfig[*corev1.Pod]) { c.Owner = nil },
		"no uid":      func(c *RefManagerConfig[*corev1.Pod]) { c.Owner = ownerRS("", false) },
		"no kind":     func(c *RefManagerConfig[*corev1.Pod]) { c.OwnerKind = schema.GroupVersionKind{} },
		"no selector": func(c *RefManagerConfig[*corev1.Pod]) { c.Selector = nil },
		"no patcher":  func(c *RefManagerConfig[*corev1.Pod]) { c.Patcher = nil },
		"no GetOwner": func(c *RefManagerConfig[*corev1.Pod]) { c.GetOwner = nil },
	} {
		cfg := valid
		mutate(&cfg)
		if _, err := NewRefManager(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestClaimNilObject(t *testing.T) {
	fp := newFakePatcher[*corev1.Pod](t, corev1.Pod{})
	_, err := ClaimPods(t.Context(), RefManagerConfig[*corev1.Pod]{
		Owner: ownerRS("u", false), OwnerKind: rsKind, Selector: labels.Everything(), Patcher: fp, Logger: discard,
		GetOwner: func(context.Context) (metav1.Object, error) { return ownerRS("u", false), nil },
	}, []*corev1.Pod{nil, pod("a", nil)})
	if err == nil {
		t.Fatal("nil object accepted")
	}
}

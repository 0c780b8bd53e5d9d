package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

func indexedPod(ns, name string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs}}
}

func ctrlRef(uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: uid, Controller: &yes}
}

// The index gives exactly the objects a claim may keep or adopt: those the
// owner controls in its namespace and the namespace's orphans; not the
// ones another controller controls, nor orphans of other namespaces.
func TestControlledOrOrphaned(t *testing.T) {
	x, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	notController := ctrlRef("a")
	notController.Controller = nil
	pods := []*corev1.Pod{
		indexedPod("ns", "mine", ctrlRef("a")),
		indexedPod("ns", "orphan"),
		indexedPod("ns", "owner-not-controller", notController),
		indexedPod("ns", "theirs", ctrlRef("b")),
		indexedPod("other", "mine-elsewhere", ctrlRef("a")),
		indexedPod("other", "orphan-elsewhere"),
	}
	for _, p := range pods[:3] {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	// Added after some objects: they are indexed too; adding twice is fine.
	if err := AddControllerUIDIndex(x); err != nil {
		t.Fatal(err)
	}
	if err := AddControllerUIDIndex(x); err != nil {
		t.Fatalf("second add: %v", err)
	}
	for _, p := range pods[3:] {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	got, err := ControlledOrOrphaned(x, "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns/mine", "ns/orphan", "ns/owner-not-controller"}; !slices.Equal(names(got), want) {
		t.Errorf("got %v, want %v", names(got), want)
	}
	// A pod that gains a controller leaves the orphans.
	if err := x.Update(indexedPod("ns", "orphan", ctrlRef("b"))); err != nil {
		t.Fatal(err)
	}
	got, err = ControlledOrOrphaned(x, "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns/mine", "ns/owner-not-controller"}; !slices.Equal(names(got), want) {
		t.Errorf("after adoption by b: got %v, want %v", names(got), want)
	}
	if _, err := ControlledOrOrphaned(x, "ns", ""); err == nil {
		t.Error("an empty uid was accepted")
	}
}

package fieldmanager

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func widget(data map[string]any) *unstructured.Unstructured {
	u := newWidget().(*unstructured.Unstructured)
	u.SetName("w")
	if data != nil {
		u.Object["data"] = data
	}
	return u
}

func managers(obj runtime.Object) map[string]string {
	out := map[string]string{}
	for _, e := range accessor(obj).GetManagedFields() {
		key := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			key += "/" + e.Subresource
		}
		out[key] = e.FieldsV1.GetRawString()
	}
	return out
}

func TestUpdateManagersPastTenMergeIntoAncientChanges(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	fm, err := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, New: newWidget, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var obj runtime.Object = fm.Update(newWidget(), widget(map[string]any{"k0": "v"}), "m0")
	accessor(obj).SetUID("u")
	data := map[string]any{"k0": "v"}
	for i := 1; i <= 10; i++ {
		clk.SetTime(clk.Now().Add(time.Second))
		data[fmt.Sprintf("k%d", i)] = "v"
		next := widget(maps.Clone(data))
		next.SetUID("u")
		obj = fm.Update(obj, next, fmt.Sprintf("m%d", i))
	}
	got := managers(obj)
	if len(got) != MaxUpdateManagers {
		t.Fatalf("%d managers, want %d: %v", len(got), MaxUpdateManagers, got)
	}
	// The two oldest, m0 and m1, merged into one entry.
	if want := `{"f:data":{".":{},"f:k0":{},"f:k1":{}}}`; got["ancient-changes/Update"] != want {
		t.Fatalf("ancient-changes %q, want %q (all: %v)", got["ancient-changes/Update"], want, got)
	}
	for _, gone := range []string{"m0/Update", "m1/Update"} {
		if _, ok := got[gone]; ok {
			t.Fatalf("%s kept: %v", gone, got)
		}
	}
	if got["m10/Update"] != `{"f:data":{"f:k10":{}}}` {
		t.Fatalf("newest manager %v", got)
	}
	// Entries are sorted by time: the merged one carries m1's time and
	// comes first.
	entries := accessor(obj).GetManagedFields()
	if entries[0].Manager != AncientChanges || entries[len(entries)-1].Manager != "m10" {
		t.Fatalf("order %v", entries)
	}
}

func TestResetFieldsAreNotOwned(t *testing.T) {
	fm, err := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, New: newWidget,
		Reset: fieldpath.NewSet(fieldpath.MakePathOrDie("status"))})
	if err != nil {
		t.Fatal(err)
	}
	c := widget(map[string]any{"a": "1"})
	c.Object["status"] = map[string]any{"ready": true}
	out, err := fm.Apply(newWidget(), c, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(out)["alice/Apply"]; strings.Contains(got, "status") || !strings.Contains(got, "f:a") {
		t.Fatalf("alice owns %s", got)
	}
	created := fm.Update(newWidget(), c.DeepCopy(), "bob")
	if got := managers(created)["bob/Update"]; strings.Contains(got, "status") {
		t.Fatalf("bob owns %s", got)
	}
}

func TestSubresourceUpdateKeepsLiveManagedFields(t *testing.T) {
	main, _ := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, New: newWidget})
	status, _ := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, New: newWidget, Subresource: "status"})
	live := main.Update(newWidget(), widget(map[string]any{"a": "1"}), "creator")
	accessor(live).SetUID("u")
	next := live.DeepCopyObject().(*unstructured.Unstructured)
	next.Object["status"] = map[string]any{"ready": true}
	// A client sending other managedFields through a subresource cannot
	// change them.
	next.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "forged", Operation: "Update", APIVersion: "example.com/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}})
	out := status.Update(live, next, "ctrl")
	got := managers(out)
	if _, forged := got["forged/Update"]; forged || got["ctrl/Update/status"] != `{"f:status":{".":{},"f:ready":{}}}` || got["creator/Update"] == "" {
		t.Fatalf("managers %v", got)
	}
}

func TestConflictMessageNamesEveryManager(t *testing.T) {
	fm, _ := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, New: newWidget})
	live := fm.Update(newWidget(), widget(map[string]any{"a": "1", "b": "1"}), "creator")
	accessor(live).SetUID("u")
	live, err := fm.Apply(live, widget(map[string]any{"c": "1"}), "applier", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fm.Apply(live, widget(map[string]any{"a": "2", "b": "2", "c": "2"}), "other", false)
	want := "Apply failed with 3 conflicts: conflicts with \"applier\":\n- .data.c\nconflicts with \"creator\" using example.com/v1:\n- .data.a\n- .data.b"
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

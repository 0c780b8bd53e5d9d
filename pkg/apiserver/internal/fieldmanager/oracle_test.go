package fieldmanager

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clocktesting "k8s.io/utils/clock/testing"
)

// The tests in this file run random sequences of creates, updates and
// applies through this package's FieldManager and, side by side, through
// the field manager Kubernetes publishes in k8s.io/apimachinery (the one
// kube-apiserver runs), and require the same objects, managedFields and
// errors from both.

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

type identityConvertor struct{}

func (identityConvertor) Convert(in, out, context any) error { return fmt.Errorf("not supported") }
func (identityConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}
func (identityConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func newWidget() runtime.Object {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(widgetGVK)
	return u
}

// pair is the same endpoint served by both field managers.
type pair struct {
	ours   *FieldManager
	theirs *managedfields.FieldManager
}

func newPair(t *testing.T, subresource string) pair {
	t.Helper()
	ours, err := New(Config{Types: NewDeducedTypeConverter(), Kind: widgetGVK, Subresource: subresource, New: newWidget,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := managedfields.NewDefaultCRDFieldManager(managedfields.NewDeducedTypeConverter(), identityConvertor{}, noDefaults{},
		unstructuredCreater{}, widgetGVK, widgetGVK.GroupVersion(), subresource, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pair{ours, theirs}
}

// normalized returns obj's content and its managedFields without times,
// in a fixed order, for comparison.
func normalized(t *testing.T, obj runtime.Object) (map[string]any, []metav1.ManagedFieldsEntry) {
	t.Helper()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("not unstructured: %T", obj)
	}
	u = u.DeepCopy()
	entries := u.GetManagedFields()
	for i := range entries {
		entries[i].Time = nil
	}
	slices.SortFunc(entries, func(a, b metav1.ManagedFieldsEntry) int {
		return strings.Compare(managerID(&a), managerID(&b))
	})
	u.SetManagedFields(nil)
	return u.Object, entries
}

func randomConfig(r *rand.Rand, name string) *unstructured.Unstructured {
	u := newWidget().(*unstructured.Unstructured)
	u.SetName(name)
	data := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d"} {
		if r.IntN(2) == 0 {
			data[k] = fmt.Sprintf("v%d", r.IntN(3))
		}
	}
	if len(data) > 0 {
		u.Object["data"] = data
	}
	if r.IntN(3) == 0 {
		u.Object["list"] = []any{fmt.Sprintf("x%d", r.IntN(2)), "y"}
	}
	if r.IntN(3) == 0 {
		labels := map[string]string{}
		for _, k := range []string{"app", "tier"} {
			if r.IntN(2) == 0 {
				labels[k] = fmt.Sprintf("l%d", r.IntN(2))
			}
		}
		u.SetLabels(labels)
	}
	return u
}

func TestFieldManagerMatchesKubernetesOnRandomHistories(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	for run := range 300 {
		p := newPair(t, "")
		var oursObj, theirsObj runtime.Object
		// Half the runs start from an object stored before field
		// tracking (no managedFields, a uid): the first apply gives what
		// it holds to before-first-apply.
		if r.IntN(2) == 0 {
			u := randomConfig(r, "w")
			u.SetUID("1234")
			oursObj, theirsObj = u, u.DeepCopy()
		} else {
			c := randomConfig(r, "w")
			oursObj = p.ours.Update(newWidget(), c.DeepCopy(), "creator")
			theirsObj = p.theirs.UpdateNoErrors(newWidget(), c.DeepCopy(), "creator")
			accessor(oursObj).SetUID("1234")
			accessor(theirsObj).SetUID("1234")
		}
		compare(t, run, "create", oursObj, theirsObj)
		for step := range 12 {
			what := ""
			switch r.IntN(5) {
			case 0, 1, 2:
				manager := fmt.Sprintf("applier%d", r.IntN(3))
				if r.IntN(5) == 0 {
					manager = "kubectl"
				}
				force := r.IntN(4) == 0
				c := randomConfig(r, "w")
				what = fmt.Sprintf("apply by %s (force %v) of %v", manager, force, c.Object)
				o, oerr := p.ours.Apply(oursObj.DeepCopyObject(), c.DeepCopy(), manager, force)
				th, terr := p.theirs.Apply(theirsObj.DeepCopyObject(), c.DeepCopy(), manager, force)
				if (oerr == nil) != (terr == nil) {
					t.Fatalf("run %d step %d %s: error %v, Kubernetes %v", run, step, what, oerr, terr)
				}
				if oerr != nil {
					if !apierrors.IsConflict(oerr) || oerr.Error() != terr.Error() {
						t.Fatalf("run %d step %d %s:\nerror %v\nKubernetes %v", run, step, what, oerr, terr)
					}
					// Both list causes in map order: compare them as sets.
					oc, tc := sortedCauses(oerr), sortedCauses(terr)
					if !reflect.DeepEqual(oc, tc) {
						t.Fatalf("run %d step %d %s: causes %v, Kubernetes %v", run, step, what, oc, tc)
					}
					continue
				}
				oursObj, theirsObj = o, th
			case 3:
				manager := fmt.Sprintf("updater%d", r.IntN(3))
				next := randomConfig(r, "w")
				next.SetUID("1234")
				next.SetManagedFields(accessor(oursObj).GetManagedFields())
				tnext := next.DeepCopy()
				tnext.SetManagedFields(accessor(theirsObj).GetManagedFields())
				what = fmt.Sprintf("update by %s to %v", manager, next.Object)
				oursObj = p.ours.Update(oursObj.DeepCopyObject(), next, manager)
				theirsObj = p.theirs.UpdateNoErrors(theirsObj.DeepCopyObject(), tnext, manager)
			case 4:
				// An update that sends no managedFields keeps the live ones;
				// one that sends an empty list resets them.
				next := oursObj.DeepCopyObject().(*unstructured.Unstructured)
				unstructured.SetNestedField(next.Object, fmt.Sprintf("z%d", r.IntN(2)), "data", "z")
				if r.IntN(2) == 0 {
					next.SetManagedFields([]metav1.ManagedFieldsEntry{})
					what = "update resetting managedFields"
				} else {
					next.SetManagedFields(nil)
					what = "update without managedFields"
				}
				tnext := next.DeepCopy()
				oursObj = p.ours.Update(oursObj.DeepCopyObject(), next, "resetter")
				theirsObj = p.theirs.UpdateNoErrors(theirsObj.DeepCopyObject(), tnext, "resetter")
			}
			compare(t, run, fmt.Sprintf("step %d %s", step, what), oursObj, theirsObj)
		}
	}
}

func compare(t *testing.T, run int, what string, ours, theirs runtime.Object) {
	t.Helper()
	oo, om := normalized(t, ours)
	to, tm := normalized(t, theirs)
	if !reflect.DeepEqual(oo, to) {
		t.Fatalf("run %d %s: object\n%v\nKubernetes\n%v", run, what, oo, to)
	}
	if !reflect.DeepEqual(om, tm) {
		t.Fatalf("run %d %s: managedFields\n%s\nKubernetes\n%s", run, what, entriesString(om), entriesString(tm))
	}
}

func entriesString(entries []metav1.ManagedFieldsEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  %s %s %s %q %s\n", e.Manager, e.Operation, e.APIVersion, e.Subresource, e.FieldsV1.GetRawString())
	}
	return b.String()
}

func sortedCauses(err error) []metav1.StatusCause {
	causes := slices.Clone(err.(*apierrors.StatusError).ErrStatus.Details.Causes)
	slices.SortFunc(causes, func(a, b metav1.StatusCause) int {
		return strings.Compare(a.Field+a.Message, b.Field+b.Message)
	})
	return causes
}

package apiextensions

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJSONPath(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{"replicas": int64(3), "dotted.key": "d"},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
			map[string]any{"type": "Synced", "status": "False", "n": int64(2)},
		}},
	}
	for _, tc := range []struct {
		path string
		want []any
	}{
		{".spec.replicas", []any{int64(3)}},
		{"{.spec.replicas}", []any{int64(3)}},
		{".spec['dotted.key']", []any{"d"}},
		{".spec.missing", nil},
		{`.status.conditions[?(@.type=="Ready")].status`, []any{"True"}},
		{`.status.conditions[?(@.type!="Ready")].type`, []any{"Synced"}},
		{`.status.conditions[?(@.n>1)].type`, []any{"Synced"}},
		{`.status.conditions[?(@.n)].type`, []any{"Synced"}},
		{".status.conditions[0].type", []any{"Ready"}},
		{".status.conditions[-1].type", []any{"Synced"}},
		{".status.conditions[5].type", nil},
		{".status.conditions[*].status", []any{"True", "False"}},
	} {
		p, err := ParseJSONPath(tc.path)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if diff := cmp.Diff(tc.want, p.Find(obj)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.path, diff)
		}
	}
	for _, bad := range []string{"", "spec", ".spec[", ".spec[abc]", "{.spec", `.a[?(x=="y")]`, ".a..b"} {
		if _, err := ParseJSONPath(bad); err == nil {
			t.Errorf("ParseJSONPath(%q) succeeded", bad)
		}
	}
}

func crdNamed(name, plural, kind string, short ...string) *CRD {
	c := &CRD{ObjectMeta: metav1.ObjectMeta{Name: name + ".example.com"}}
	c.Spec.Group = "example.com"
	c.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: name, Kind: kind, ListKind: kind + "List", ShortNames: short}
	return c
}

func TestAcceptNames(t *testing.T) {
	holder := crdNamed("widget", "widgets", "Widget", "wd")
	holder.Status.AcceptedNames = holder.Spec.Names
	for _, tc := range []struct {
		name   string
		crd    *CRD
		reason string
	}{
		{"fresh", crdNamed("gadget", "gadgets", "Gadget"), "NoConflicts"},
		{"plural", crdNamed("x", "widgets", "X"), "PluralConflict"},
		{"kind", crdNamed("gizmo", "gizmos", "Widget"), "ListKindConflict"}, // the list kind clashes too, and is checked last
		{"short name", crdNamed("thing", "things", "Thing", "wd"), "ShortNamesConflict"},
		{"singular as short name", crdNamed("wd", "wds", "Wd"), "SingularConflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, conds := AcceptNames(tc.crd, []*CRD{holder})
			if conds[0].Reason != tc.reason {
				t.Errorf("NamesAccepted %+v, want reason %s", conds[0], tc.reason)
			}
			accepted := tc.reason == "NoConflicts"
			if got := conds[1].Status == apiextensionsv1.ConditionTrue; got != accepted {
				t.Errorf("Established %+v", conds[1])
			}
			if accepted && names.Plural != tc.crd.Spec.Names.Plural {
				t.Errorf("accepted names %+v", names)
			}
			if !accepted && names.Plural == "widgets" {
				t.Errorf("a conflicting plural was granted: %+v", names)
			}
		})
	}
	// A CRD keeps the names it holds, and stays Established after a
	// later conflicting change.
	again := holder.DeepCopy()
	SetCondition(again, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}, metav1.Now())
	again.Spec.Names.ShortNames = []string{"gd"}
	gadget := crdNamed("gadget", "gadgets", "Gadget", "gd")
	gadget.Status.AcceptedNames = gadget.Spec.Names
	names, conds := AcceptNames(again, []*CRD{gadget})
	if conds[0].Reason != "ShortNamesConflict" || conds[1].Status != apiextensionsv1.ConditionTrue || names.ShortNames[0] != "wd" {
		t.Errorf("after a conflicting change: names %+v conditions %+v", names, conds)
	}
}

func TestSetCondition(t *testing.T) {
	c := &CRD{}
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "A"}
	if !SetCondition(c, cond, t0) {
		t.Fatal("new condition not reported as a change")
	}
	if SetCondition(c, cond, t1) {
		t.Error("an unchanged condition reported as a change")
	}
	cond.Reason = "B"
	SetCondition(c, cond, t1)
	if got := FindCondition(c, apiextensionsv1.Established); !got.LastTransitionTime.Equal(&t0) || got.Reason != "B" {
		t.Errorf("same status, new reason: %+v", got)
	}
	cond.Status = apiextensionsv1.ConditionTrue
	SetCondition(c, cond, t1)
	if got := FindCondition(c, apiextensionsv1.Established); !got.LastTransitionTime.Equal(&t1) || !IsConditionTrue(c, apiextensionsv1.Established) {
		t.Errorf("transition: %+v", got)
	}
}

func TestCells(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	obj := map[string]any{"spec": map[string]any{
		"s": "x", "i": int64(4), "f": 2.5, "whole": 3.0, "b": true,
		"when": "2026-01-01T00:00:00Z", "m": map[string]any{"k": "v"},
	}}
	for _, tc := range []struct {
		typ, path string
		want      any
	}{
		{"string", ".spec.s", "x"},
		{"string", ".spec.i", "4"},
		{"string", ".spec.m", `{"k":"v"}`},
		{"integer", ".spec.i", int64(4)},
		{"integer", ".spec.whole", int64(3)},
		{"integer", ".spec.f", nil},
		{"integer", ".spec.s", nil},
		{"number", ".spec.f", 2.5},
		{"boolean", ".spec.b", true},
		{"date", ".spec.when", "10m"},
		{"string", ".spec.missing", nil},
	} {
		cols, err := newColumns([]apiextensionsv1.CustomResourceColumnDefinition{{Name: "c", Type: tc.typ, JSONPath: tc.path}})
		if err != nil {
			t.Fatal(err)
		}
		if got := cell(cols[1], obj, now); !cmp.Equal(got, tc.want) {
			t.Errorf("%s %s = %#v, want %#v", tc.typ, tc.path, got, tc.want)
		}
	}
}

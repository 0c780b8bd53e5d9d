package cel

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplyConfigurationExpressions(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "d", "labels": map[string]any{"a": "b"}}}
	for _, tc := range []struct {
		name, expr string
		want       map[string]any
		err        string
	}{
		{
			name: "nested objects and a list",
			expr: `Object{metadata: Object.metadata{labels: {"x": object.metadata.name}}, spec: Object.spec{replicas: variables.replicas, template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "c", image: "i"}]}}}}`,
			want: map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"x": "d"}},
				"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "c", "image": "i"}},
				}}},
			},
		},
		{
			name: "a type name off its field path",
			expr: `Object{spec: Object.spec{selector: Object.spec.wrong{}}}`,
			err:  `unexpected type name "Object.spec.wrong", expected "Object.spec.selector"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCompiler(Options{Composition: true, Mutation: true})
			if err != nil {
				t.Fatal(err)
			}
			c.AddVariable("replicas", "3")
			p := c.Compile(tc.expr, ApplyConfigurationType)
			if p.Err() != nil {
				t.Fatalf("compile: %v", p.Err())
			}
			act := c.NewActivation(context.Background(), Input{Object: obj})
			out, _, err := p.Eval(act, RuntimeCostBudget)
			if err != nil {
				t.Fatalf("eval: %v", err)
			}
			got, err := ApplyConfiguration(out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("apply configuration (-want +got):\n%s", d)
			}
		})
	}
}

func TestJSONPatchExpressions(t *testing.T) {
	c, err := NewCompiler(Options{Mutation: true})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Compile(`[
		JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b~c"), value: "v"},
		JSONPatch{op: "replace", path: "/spec/replicas", value: 2},
		JSONPatch{op: "add", path: "/spec/template", value: Object.spec.template{metadata: Object.spec.template.metadata{labels: {"x": "y"}}}},
		JSONPatch{op: "move", from: "/a", path: "/b"},
	]`, JSONPatchListType)
	if p.Err() != nil {
		t.Fatalf("compile: %v", p.Err())
	}
	out, _, err := p.Eval(c.NewActivation(context.Background(), Input{}), RuntimeCostBudget)
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	ops, err := JSONPatchOps(out)
	if err != nil {
		t.Fatal(err)
	}
	type op struct {
		Op, Path, From string
		Value          any
		HasValue       bool
	}
	var got []op
	for _, o := range ops {
		v, ok, err := o.JSONValue()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, op{o.Op, o.Path, o.From, v, ok})
	}
	want := []op{
		{Op: "add", Path: "/metadata/labels/a~1b~0c", Value: "v", HasValue: true},
		{Op: "replace", Path: "/spec/replicas", Value: int64(2), HasValue: true},
		{Op: "add", Path: "/spec/template", Value: map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}}}, HasValue: true},
		{Op: "move", Path: "/b", From: "/a"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("operations (-want +got):\n%s", d)
	}
}

func TestMutationResultTypesAreChecked(t *testing.T) {
	c, err := NewCompiler(Options{Mutation: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Compile(`[JSONPatch{op: "add", path: "/x", value: 1}]`, ApplyConfigurationType); p.Err() == nil {
		t.Error("a JSONPatch list compiled as an apply configuration")
	}
	if p := c.Compile(`Object{}`, JSONPatchListType); p.Err() == nil {
		t.Error("an Object compiled as a JSONPatch list")
	}
	if p := c.Compile(`JSONPatch{op: 1}`, JSONPatchListType); p.Err() == nil {
		t.Error("a JSONPatch with a non-string op compiled")
	}
	plain, _ := NewCompiler(Options{})
	if p := plain.Compile(`Object{}`); p.Err() == nil {
		t.Error("Object compiled without Mutation")
	}
}

package cel

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func mustSchema(t testing.TB, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(y), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &s
}

// selfEnv extends the base environment with self of type t.
func selfEnv(t testing.TB, dt *DeclType) *cel.Env {
	t.Helper()
	base := newTestEnv(t)
	env, err := base.Extend(cel.CustomTypeProvider(NewTypeProvider(base.CELTypeProvider(), dt)), cel.Variable("self", dt.CelType()))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestEscape(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"foo", "foo", true},
		{"namespace", "__namespace__", true},
		{"in", "__in__", true},
		{"a-b", "a__dash__b", true},
		{"a.b/c", "a__dot__b__slash__c", true},
		{"a__b", "a__underscores__b", true},
		{"a_b", "a_b", true},
		{"1a", "", false},
		{"", "", false},
		{"a b", "", false},
		{"ä", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := Escape(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Escape(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSchemaDeclType(t *testing.T) {
	s := mustSchema(t, `
type: object
properties:
  spec:
    type: object
    required: [name]
    properties:
      name: {type: string, maxLength: 10}
      mode: {type: string, enum: [Fast, Slowest]}
      port: {x-kubernetes-int-or-string: true}
      tags: {type: array, maxItems: 5, items: {type: string}}
      hosts: {type: array, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string}, maxProperties: 7}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      untyped: {x-kubernetes-preserve-unknown-fields: true}
      template: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}
      namespace: {type: string}
      when: {type: string, format: date-time}
      data: {type: string, format: byte}
`)
	root := SchemaDeclType("root", s, true)
	if root == nil {
		t.Fatal("no type")
	}
	for _, f := range []string{"apiVersion", "kind", "metadata", "spec"} {
		if root.Fields[f] == nil {
			t.Errorf("root has no field %s", f)
		}
	}
	meta := root.Fields["metadata"].Type
	if got := fieldNames(meta); !cmp.Equal(got, []string{"generateName", "name"}) {
		t.Errorf("metadata fields = %v", got)
	}
	if n, g := meta.Fields["name"].Type.MaxElements, meta.Fields["generateName"].Type.MaxElements; n != 4*253 || g != 4*252 {
		t.Errorf("metadata.name and generateName bounded by %d and %d bytes, want %d and %d", n, g, 4*253, 4*252)
	}
	spec := root.Fields["spec"].Type
	if got, want := fieldNames(spec), []string{"__namespace__", "data", "hosts", "labels", "mode", "name", "port", "raw", "tags", "template", "when"}; !cmp.Equal(got, want) {
		t.Errorf("spec fields: %s", cmp.Diff(want, got))
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"string maxLength counts 4 bytes a rune", spec.Fields["name"].Type.MaxElements, int64(40)},
		{"enum bounds a string", spec.Fields["mode"].Type.MaxElements, int64(7)},
		{"int-or-string is dyn", spec.Fields["port"].Type.CelType().String(), "dyn"},
		{"maxItems", spec.Fields["tags"].Type.MaxElements, int64(5)},
		{"unbounded list from the request size", spec.Fields["hosts"].Type.MaxElements, (MaxRequestSizeBytes - 2) / 3},
		{"maxProperties", spec.Fields["labels"].Type.MaxElements, int64(7)},
		{"map type", spec.Fields["labels"].Type.CelType().String(), "map(string, string)"},
		{"preserved object has no fields", len(spec.Fields["raw"].Type.Fields), 0},
		{"embedded resource has kind", spec.Fields["template"].Type.Fields["kind"] != nil, true},
		{"date-time is a timestamp", spec.Fields["when"].Type.CelType().String(), "google.protobuf.Timestamp"},
		{"byte is bytes", spec.Fields["data"].Type.CelType().String(), "bytes"},
		{"required field counts in the minimum size", spec.MinSerializedSize, int64(2 + len("name") + 2 + 4)},
		{"object type name", spec.Name, "root.spec"},
	}
	for _, c := range checks {
		if !cmp.Equal(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if SchemaDeclType("x", mustSchema(t, `{type: array}`), false) != nil {
		t.Error("an array without items has a type")
	}
}

func fieldNames(t *DeclType) []string {
	return slices.Sorted(maps.Keys(t.Fields))
}

func TestValueAndTypeCheck(t *testing.T) {
	dt := SchemaDeclType("root", mustSchema(t, `
type: object
properties:
  ratio: {type: number}
  count: {type: integer}
  when: {type: string, format: date-time}
  timeout: {type: string, format: duration}
  data: {type: string, format: byte}
  port: {x-kubernetes-int-or-string: true}
  namespace: {type: string}
  my-field: {type: string}
  tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
  ports:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items: {type: object, properties: {name: {type: string}, port: {type: integer}}}
`), false)
	env := selfEnv(t, dt)
	obj := map[string]any{
		"ratio": int64(2), "count": int64(3), "when": "2024-01-02T03:04:05Z", "timeout": "1m30s", "data": "aGk=",
		"port": "80%", "namespace": "ns", "my-field": "x", "unknown": "dropped",
		"tags":  []any{"a", "b"},
		"ports": []any{map[string]any{"name": "http", "port": int64(80)}, map[string]any{"name": "https", "port": int64(443)}},
	}
	other := map[string]any{
		"tags":  []any{"b", "a"},
		"ports": []any{map[string]any{"name": "https", "port": int64(443)}, map[string]any{"name": "http", "port": int64(80)}},
	}
	tests := []struct {
		name, expr string
	}{
		{"integer-valued number is a double", `self.ratio == 2.0 && type(self.ratio) == double`},
		{"integer", `self.count == 3 && type(self.count) == int`},
		{"date-time", `self.when == timestamp("2024-01-02T03:04:05Z") && self.when.getFullYear() == 2024`},
		{"duration", `self.timeout == duration("90s")`},
		{"bytes", `self.data == b"hi"`},
		{"int-or-string", `type(self.port) == string && self.port.endsWith("%")`},
		{"escaped names", `self.__namespace__ == "ns" && self.my__dash__field == "x"`},
		{"has", `has(self.count) && !has(self.tags) == false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ast, iss := env.Compile(tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prog, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			v, _, err := prog.Eval(map[string]any{"self": dt.Value(obj)})
			if err != nil || v != types.True {
				t.Fatalf("%s = %v, %v", tt.expr, v, err)
			}
		})
	}
	t.Run("set and map list semantics", func(t *testing.T) {
		for _, expr := range []string{
			`self.tags == ['b', 'a'] && self.tags != ['a']`,
			`self.tags + ['c', 'a'] == ['a', 'b', 'c'] && (self.tags + ['c', 'a'])[2] == 'c'`,
			`self.ports == [self.ports[1], self.ports[0]]`,
			`size(self.ports + [self.ports[0]]) == 2`,
			`(self.ports + [self.ports[0]]) == self.ports`,
		} {
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatalf("%s: %v", expr, iss.Err())
			}
			prog, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			v, _, err := prog.Eval(map[string]any{"self": dt.Value(obj)})
			if err != nil || v != types.True {
				t.Errorf("%s = %v, %v", expr, v, err)
			}
		}
	})
	t.Run("map list + replaces items by key", func(t *testing.T) {
		pt := dt.Fields["ports"].Type
		merged := pt.Value(obj["ports"]).(traits.Adder).Add(pt.Value([]any{map[string]any{"name": "http", "port": int64(8080)}}))
		want := pt.Value([]any{map[string]any{"name": "http", "port": int64(8080)}, map[string]any{"name": "https", "port": int64(443)}})
		if merged.Equal(want) != types.True {
			t.Errorf("merged = %v", merged)
		}
	})
	t.Run("set and map lists compare regardless of order", func(t *testing.T) {
		tags, otherTags := dt.Fields["tags"].Type.Value(obj["tags"]), dt.Fields["tags"].Type.Value(other["tags"])
		if tags.Equal(otherTags) != types.True {
			t.Error("sets differ")
		}
		ports, otherPorts := dt.Fields["ports"].Type.Value(obj["ports"]), dt.Fields["ports"].Type.Value(other["ports"])
		if ports.Equal(otherPorts) != types.True {
			t.Error("map lists differ")
		}
		changed := dt.Fields["ports"].Type.Value([]any{map[string]any{"name": "https", "port": int64(8443)}, map[string]any{"name": "http", "port": int64(80)}})
		if ports.Equal(changed) == types.True {
			t.Error("map lists with a changed item are equal")
		}
	})
	t.Run("null properties are absent, null items and values are null", func(t *testing.T) {
		nt := SchemaDeclType("n", mustSchema(t, `
type: object
properties:
  s: {type: string, nullable: true}
  m: {type: object, additionalProperties: {type: string, nullable: true}}
  l: {type: array, items: {type: string, nullable: true}}
`), false)
		nenv := selfEnv(t, nt)
		self := nt.Value(map[string]any{"s": nil, "m": map[string]any{"a": nil}, "l": []any{nil, "x"}})
		for _, expr := range []string{`!has(self.s)`, `'a' in self.m && type(self.m['a']) == null_type`, `self.l.size() == 2 && type(self.l[0]) == null_type`} {
			ast, iss := nenv.Compile(expr)
			if iss.Err() != nil {
				t.Fatalf("%s: %v", expr, iss.Err())
			}
			prog, err := nenv.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := prog.Eval(map[string]any{"self": self}); err != nil || v != types.True {
				t.Errorf("%s = %v, %v", expr, v, err)
			}
		}
	})
	t.Run("unknown fields count for equality", func(t *testing.T) {
		ut := SchemaDeclType("u", mustSchema(t, `
type: array
items:
  type: object
  x-kubernetes-preserve-unknown-fields: true
  properties: {known: {type: integer}}
`), false)
		uenv := selfEnv(t, ut)
		self := ut.Value([]any{
			map[string]any{"known": int64(1), "unknown": "a"},
			map[string]any{"known": int64(1), "unknown": "b"},
			map[string]any{"known": int64(1), "unknown": "b"},
			map[string]any{"known": int64(1)},
			map[string]any{"known": int64(1)},
			map[string]any{"known": int64(2)},
		})
		for _, expr := range []string{
			`self[0].known == 1 && self[0] != self[1] && self[1] == self[2]`,
			`self[0] != self[3] && self[3] == self[4] && self[4] != self[5]`,
		} {
			ast, iss := uenv.Compile(expr)
			if iss.Err() != nil {
				t.Fatalf("%s: %v", expr, iss.Err())
			}
			prog, err := uenv.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := prog.Eval(map[string]any{"self": self}); err != nil || v != types.True {
				t.Errorf("%s = %v, %v", expr, v, err)
			}
		}
	})
	t.Run("unknown field does not compile", func(t *testing.T) {
		if _, iss := env.Compile(`self.unknown == "x"`); iss.Err() == nil {
			t.Error("compiled")
		}
	})
}

func TestEstimatedCost(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		expr   string
	}{
		{
			name:   "bounded list of bounded strings",
			schema: `{type: array, maxItems: 10, items: {type: string, maxLength: 5}}`,
			expr:   `self.all(x, x.size() < 10)`,
		},
		{
			name:   "unbounded nested loops",
			schema: `{type: array, items: {type: string}}`,
			expr:   `self.all(x, self.all(y, x == y))`,
		},
	}
	var costs []uint64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dt := SchemaDeclType("root", mustSchema(t, tt.schema), false)
			env := selfEnv(t, dt)
			ast, iss := env.Compile(tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			est, err := env.EstimateCost(ast, &CostEstimator{SizeEstimator: SizeEstimator{Vars: map[string]*DeclType{"self": dt}}})
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, est.Max)
		})
	}
	if len(costs) != 2 {
		t.Fatal("estimates missing")
	}
	if costs[0] > 100 {
		t.Errorf("bounded estimate = %d, want at most 100", costs[0])
	}
	if costs[1] < 1e12 {
		t.Errorf("unbounded nested estimate = %d, want at least 1e12", costs[1])
	}
}

func TestLibraryCallEstimates(t *testing.T) {
	dt := SchemaDeclType("root", mustSchema(t, `{type: object, properties: {s: {type: string, maxLength: 100}, l: {type: array, maxItems: 50, items: {type: integer}}}}`), false)
	env := selfEnv(t, dt)
	est := &CostEstimator{SizeEstimator: SizeEstimator{Vars: map[string]*DeclType{"self": dt}}}
	tests := []struct {
		name     string
		expr     string
		min, max uint64
	}{
		// 400 bytes * 0.1 = 40 for the parse, plus the select and the call
		{"quantity scales with the string", `isQuantity(self.s)`, 1, 45},
		{"url method is constant", `url("https://a").getHost() == "a"`, 1, 10},
		{"list sum scales with maxItems", `self.l.sum() > 0`, 50, 60},
		{"find multiplies string and regex", `self.s.find("[a-z]+") == ""`, 40, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ast, iss := env.Compile(tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			c, err := env.EstimateCost(ast, est)
			if err != nil {
				t.Fatal(err)
			}
			if c.Max < tt.min || c.Max > tt.max {
				t.Errorf("estimated max cost %d, want in [%d, %d]", c.Max, tt.min, tt.max)
			}
		})
	}
}

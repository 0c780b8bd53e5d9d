package celrules

import (
	"context"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// TestCostParity checks static and runtime costs of expressions against the
// values kube-apiserver computes for the same schemas and objects (as
// recorded in its cost stability tests): costs decide which CRDs are
// accepted and when evaluation runs out of budget, so they must agree.
func TestCostParity(t *testing.T) {
	tests := []struct {
		name string
		// schema's properties are val1, val2, ...
		schema string
		obj    string
		// static and runtime costs by expression; a rule in only one map is
		// checked only for that cost.
		static, runtime map[string]uint64
	}{
		{
			name:    "integers",
			schema:  `{val1: {type: integer}, val6: {type: integer, format: int64}}`,
			obj:     `{val1: 9223372036854775807, val6: 9223372036854775807}`,
			static:  map[string]uint64{"self.val1 == self.val6": 4, "type(self.val1) == int": 4},
			runtime: map[string]uint64{"self.val1 == self.val6": 5, "type(self.val1) == int": 4},
		},
		{
			name:   "unicode strings",
			schema: `{val1: {type: string}, val2: {type: string}}`,
			obj:    `{val1: "Rook takes 👑", val2: "Rook takes 👑"}`,
			static: map[string]uint64{
				"self.val1.startsWith('Rook')":                     3,
				"self.val1.matches('^[^0-9]*$')":                   943721,
				"!self.val1.matches('^[0-9]*$')":                   629149,
				"size(self.val1) == 12":                            4,
				"self.val1.indexOf('o') == 1":                      314576,
				"self.val1.replace(' ', 'x') == 'Rookxtakesx👑'":    629150,
				"self.val1.split(' ') == ['Rook', 'takes', '👑']":   629159,
				"self.val1.substring(5) == 'takes 👑'":              314576,
				"self.val1.substring(4, 10).trim() == 'takes'":     629149,
				"self.val1.upperAscii() == 'ROOK TAKES 👑'":         314577,
				"self.val1.lowerAscii() == self.val1.lowerAscii()": 943723,
			},
			runtime: map[string]uint64{
				"self.val1.startsWith('Rook')":                     3,
				"self.val1.matches('^[^0-9]*$')":                   8,
				"!self.val1.matches('^[0-9]*$')":                   7,
				"size(self.val1) == 12":                            4,
				"self.val1.indexOf('o') == 1":                      4,
				"self.val1.replace(' ', 'x') == 'Rookxtakesx👑'":    7,
				"self.val1.split(' ') == ['Rook', 'takes', '👑']":   6,
				"self.val1.substring(5) == 'takes 👑'":              5,
				"self.val1.substring(4, 10).trim() == 'takes'":     6,
				"self.val1.upperAscii() == 'ROOK TAKES 👑'":         6,
				"self.val1.lowerAscii() == self.val1.lowerAscii()": 10,
			},
		},
		{
			name:   "lists",
			schema: `{val1: {type: array, items: {type: integer}}, val2: {type: array, items: {type: integer}}}`,
			obj:    `{val1: [1, 2, 3], val2: [1, 2, 3]}`,
			static: map[string]uint64{
				"1 in self.val1": 1572865,
				"self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]": 16,
				"self.val1.all(k, size(self.val1) > 0)":       11010044,
				"self.val1.exists_one(k, self.val1 == [2])":   23592949,
			},
			runtime: map[string]uint64{
				"1 in self.val1": 5,
				"self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]": 6,
			},
		},
		{
			name: "list sets",
			schema: `{val1: {type: array, x-kubernetes-list-type: set, items: {type: string}},
val2: {type: array, x-kubernetes-list-type: set, items: {type: string}},
val3: {type: array, x-kubernetes-list-type: set, items: {type: integer}}}`,
			obj: `{val1: [a, b, c], val2: [a, c, b], val3: [` + intList(1000) + `]}`,
			static: map[string]uint64{
				"self.val1 == ['c', 'b', 'a']":             13,
				"self.val1 == self.val2":                   104862,
				"self.val1 + self.val2 == ['a', 'b', 'c']": 16,
			},
			runtime: map[string]uint64{
				"self.val1 == ['c', 'b', 'a']":                3,
				"self.val1 == self.val2":                      5,
				"self.val1 + self.val2 == ['a', 'b', 'c']":    6,
				"sets.equivalent(self.val1, ['a', 'b', 'c'])": 21,
				"sets.contains(self.val3, [1])":               1003,
				"!sets.equivalent(self.val3, [1, 2, 3])":      6004,
			},
		},
		{
			name: "list maps",
			schema: `{objs: {type: array, items: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k],
items: {type: object, properties: {k: {type: string}, v: {type: string}}}}}}`,
			obj: `{objs: [[{k: a, v: "1"}, {k: b, v: "2"}], [{k: b, v: "2"}, {k: a, v: "1"}], [{k: b, v: "3"}, {k: a, v: "1"}], [{k: c, v: "4"}]]}`,
			static: map[string]uint64{
				"self.objs[0] == self.objs[1]":                       104864,
				"self.objs[0] + self.objs[2] == self.objs[2]":        104868,
				"self.objs[0] == [self.objs[0][0], self.objs[0][1]]": 22,
				"size(self.objs[0] + [self.objs[3][0]]) == 3":        20,
			},
			runtime: map[string]uint64{
				"self.objs[0] == self.objs[1]":                       7,
				"self.objs[0] + self.objs[2] == self.objs[2]":        11,
				"self.objs[0] == [self.objs[0][0], self.objs[0][1]]": 22,
				"size(self.objs[0] + [self.objs[3][0]]) == 3":        20,
			},
		},
		{
			name:    "maps",
			schema:  `{val1: {type: object, additionalProperties: {type: string}}, val2: {type: object, additionalProperties: {type: string}}}`,
			obj:     `{val1: {k1: a, k2: b}, val2: {k2: b, k1: a}}`,
			static:  map[string]uint64{"self.val1 == self.val2": 39326, "'k1' in self.val1": 3, "self.val1.all(k, size(self.val1) > 0)": 2752508},
			runtime: map[string]uint64{"self.val1 == self.val2": 5, "'k1' in self.val1": 3},
		},
		{
			name:   "percentages in int-or-string",
			schema: `{min: {x-kubernetes-int-or-string: true}, current: {type: integer}, available: {type: integer}}`,
			obj:    `{min: 50%, current: 5, available: 10}`,
			static: map[string]uint64{
				`type(self.min) == string && self.min.matches(r'(\d+(\.\d+)?%)')`:                                                                               1258298,
				"type(self.min) == int ? self.current <= self.min : double(self.current) / double(self.available) >= double(self.min.replace('%', '')) / 100.0": 629162,
			},
			runtime: map[string]uint64{
				`type(self.min) == string && self.min.matches(r'(\d+(\.\d+)?%)')`:                                                                               10,
				"type(self.min) == int ? self.current <= self.min : double(self.current) / double(self.available) >= double(self.min.replace('%', '')) / 100.0": 17,
			},
		},
		{
			name:   "quantity",
			schema: `{val1: {type: string}, val2: {type: string}}`,
			obj:    `{val1: "20", val2: 200M}`,
			static: map[string]uint64{
				`isQuantity(self.val1)`:                                                        314575,
				`quantity(self.val1).isLessThan(quantity(self.val2))`:                          629151,
				`quantity("50k").add(quantity("20")) == quantity("50.02k")`:                    5,
				`quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")`: 6,
				`quantity(self.val1).isInteger()`:                                              314576,
			},
			runtime: map[string]uint64{
				`isQuantity(self.val1)`:                                                        3,
				`quantity(self.val1).isLessThan(quantity(self.val2))`:                          7,
				`quantity("50k").add(quantity("20")) == quantity("50.02k")`:                    5,
				`quantity("50k").sub(20) == quantity("49980")`:                                 4,
				`quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")`: 6,
				`quantity(self.val1).isInteger()`:                                              4,
			},
		},
	}
	base, err := kcel.NewBaseEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, "type: object\nproperties: "+tt.schema)
			obj := mustObject(t, tt.obj)
			for expr, want := range tt.static {
				t.Run("static "+expr, func(t *testing.T) {
					rs := withRule(s, expr)
					envs, err := newRuleEnvs(base, kcel.SchemaDeclType(rootTypeName, rs, false))
					if err != nil {
						t.Fatal(err)
					}
					c := compileRules(envs, rs)[0]
					if c.err != nil {
						t.Fatal(c.err)
					}
					if c.maxCost != want {
						t.Errorf("estimated cost %d, kube-apiserver's %d", c.maxCost, want)
					}
				})
			}
			for expr, want := range tt.runtime {
				t.Run("runtime "+expr, func(t *testing.T) {
					v, err := NewValidator(withRule(s, expr))
					if err != nil {
						t.Fatal(err)
					}
					r := &run{budget: kcel.RuntimeCostBudget}
					if errs := v.root.validate(context.Background(), r, nil, obj, nil, ratchet{}); len(errs) > 0 {
						t.Fatal(errs)
					}
					if got := uint64(kcel.RuntimeCostBudget - r.budget); got != want {
						t.Errorf("runtime cost %d, kube-apiserver's %d", got, want)
					}
				})
			}
		})
	}
}

func withRule(s *apiextensionsv1.JSONSchemaProps, rule string) *apiextensionsv1.JSONSchemaProps {
	out := *s
	out.XValidations = apiextensionsv1.ValidationRules{{Rule: rule}}
	return &out
}

func intList(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	return strings.Join(items, ", ")
}

package schema

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestListMapKeys covers how list-map keys compare: missing keys, null
// keys, null elements and compound keys, and that only the first
// repetition of each key is reported.
func TestListMapKeys(t *testing.T) {
	listMap := func(keys string) string {
		return `{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: ` + keys + `, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}`
	}
	s := structural(t, `
type: object
properties:
  strings: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [a], items: {type: string}}
  oneKey: `+listMap("[a]")+`
  twoKeys: `+listMap("[a, b]")+`
  undefinedKey: `+listMap("[a, b]")+`
  compoundKey: `+listMap("[a]")+`
  nullKey: `+listMap("[a]")+`
  nullItem: `+listMap("[a]")+`
  nullItemTwoKeys: `+listMap("[a, b]")+`
  multiple: `+listMap("[a]")+`
  set: {type: array, x-kubernetes-list-type: set, items: {x-kubernetes-preserve-unknown-fields: true}}
  nested: {type: array, items: {type: array, x-kubernetes-list-type: set, items: {type: integer}}}
  byName: {type: object, additionalProperties: {type: array, x-kubernetes-list-type: set, items: {type: string}}}
`)
	obj := object(t, `{
	  "strings": ["a"],
	  "oneKey": [{"a":"0","c":"2"},{"a":"1","c":"1"},{"a":"1","c":"2"},{}],
	  "twoKeys": [{"a":"1","b":"1"},{"a":"1","b":"2","c":"2"},{"a":"1","b":"2","c":"3"},{}],
	  "undefinedKey": [{"a":"1","b":"1"},{"a":"1","c":"2"},{"a":"1","c":"3"},{}],
	  "compoundKey": [{"a":[]},{"a":null},{"a":["a"]},{"a":["a",42],"c":"2"},{"a":["a",42],"c":["3"]}],
	  "nullKey": [{"a":[]},{"a":null},{"c":"1"},{"a":null}],
	  "nullItem": [null,{"a":"0"},{"a":null},{"c":"1"}],
	  "nullItemTwoKeys": [null,{"b":"0"},{"a":null},{"c":"1"}],
	  "multiple": [{"a":[]},{"a":null},{"a":["a"]},{"a":["a",42]},{"a":["a",42]},{"a":["a"]},{"a":["a"]}],
	  "set": [1, "1", 1.5, true, null, {"x":1}, [1], 1, "1", 1.5, true, null, {"x":1}, [1], 1],
	  "nested": [[1,2],[3,3]],
	  "byName": {"k": ["a","a"]}
	}`)
	got := messages(validateListSetsAndMaps(field.NewPath("root"), s, obj))
	sort.Strings(got)
	want := []string{
		`root.byName[k][1]: Duplicate value: "a"`,
		`root.compoundKey[4]: Duplicate value: {"a":["a",42]}`,
		`root.multiple[4]: Duplicate value: {"a":["a",42]}`,
		`root.multiple[5]: Duplicate value: {"a":["a"]}`,
		`root.nested[1][1]: Duplicate value: 3`,
		`root.nullItemTwoKeys[3]: Duplicate value: {}`,
		`root.nullItem[3]: Duplicate value: {}`,
		`root.nullKey[3]: Duplicate value: {"a":null}`,
		`root.oneKey[2]: Duplicate value: {"a":"1"}`,
		`root.set[10]: Duplicate value: true`,
		`root.set[11]: Duplicate value: null`,
		`root.set[12]: Duplicate value: {"x":1}`,
		`root.set[13]: Duplicate value: [1]`,
		`root.set[7]: Duplicate value: 1`,
		`root.set[8]: Duplicate value: "1"`,
		`root.set[9]: Duplicate value: 1.5`,
		`root.strings[0]: Invalid value: "a": must be an object for an array of list-type map`,
		`root.twoKeys[2]: Duplicate value: {"a":"1","b":"2"}`,
		`root.undefinedKey[2]: Duplicate value: {"a":"1"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

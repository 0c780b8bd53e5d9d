package patch

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// canon re-encodes JSON so documents compare independent of key order.
func canon(t testing.TB, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestJSONPatch(t *testing.T) {
	// Cases from RFC 6902, appendix A.
	tests := []struct {
		name, doc, patch, want string
		err                    error
	}{
		{"add object member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`, nil},
		{"add array element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`, nil},
		{"append with dash", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":"x"}]`, `{"foo":["bar","x"]}`, nil},
		{"remove object member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`, nil},
		{"remove array element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`, nil},
		{"replace", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`, nil},
		{"move", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`, `{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`, nil},
		{"move array element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`, `{"foo":["all","cows","eat","grass"]}`, nil},
		{"copy", `{"a":{"b":1}}`, `[{"op":"copy","from":"/a","path":"/c"}]`, `{"a":{"b":1},"c":{"b":1}}`, nil},
		{"test success", `{"baz":"qux","foo":["a",2,"c"]}`, `[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`, `{"baz":"qux","foo":["a",2,"c"]}`, nil},
		{"test failure", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`, "", ErrCannotApply},
		{"add nested to missing parent", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`, "", ErrCannotApply},
		{"escaped pointer", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10},{"op":"replace","path":"/~1","value":1}]`, `{"/":1,"~1":10}`, nil},
		{"whole document", `{"a":1}`, `[{"op":"replace","path":"","value":{"b":2}}]`, `{"b":2}`, nil},
		{"numbers compare by value", `{"n":1}`, `[{"op":"test","path":"/n","value":1.0}]`, `{"n":1}`, nil},
		{"remove missing", `{"a":1}`, `[{"op":"remove","path":"/b"}]`, "", ErrCannotApply},
		// kube-apiserver's JSON patch library adds a member replace does
		// not find, but not a missing parent or array index.
		{"replace of a missing member adds it, as kube-apiserver", `{"a":1}`, `[{"op":"replace","path":"/b","value":2}]`, `{"a":1,"b":2}`, nil},
		{"replace under a missing parent", `{"a":1}`, `[{"op":"replace","path":"/x/b","value":2}]`, "", ErrCannotApply},
		{"replace of a missing index", `{"a":[1]}`, `[{"op":"replace","path":"/a/3","value":2}]`, "", ErrCannotApply},
		{"index out of range", `{"a":[1]}`, `[{"op":"add","path":"/a/5","value":1}]`, "", ErrCannotApply},
		{"leading zero index", `{"a":[1,2]}`, `[{"op":"remove","path":"/a/01"}]`, "", ErrCannotApply},
		{"move into own child", `{"a":{"b":{}}}`, `[{"op":"move","from":"/a","path":"/a/b/c"}]`, "", ErrCannotApply},
		{"unknown op", `{}`, `[{"op":"frob","path":"/a"}]`, "", ErrBadPatch},
		{"missing value", `{}`, `[{"op":"add","path":"/a"}]`, "", ErrBadPatch},
		{"missing path", `{}`, `[{"op":"add","value":1}]`, "", ErrBadPatch},
		{"bad pointer", `{}`, `[{"op":"add","path":"a","value":1}]`, "", ErrBadPatch},
		{"not an array", `{}`, `{"op":"add"}`, "", ErrBadPatch},
		{"later failure discards earlier ops", `{"a":1}`, `[{"op":"replace","path":"/a","value":2},{"op":"test","path":"/a","value":3}]`, "", ErrCannotApply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(tc.doc)
			got, err := JSONPatch(doc, []byte(tc.patch))
			if string(doc) != tc.doc {
				t.Fatalf("input modified: %s", doc)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canon(t, tc.want), canon(t, string(got))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergePatch(t *testing.T) {
	// Cases from RFC 7386, appendix A.
	tests := []struct{ doc, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.doc+"+"+tc.patch, func(t *testing.T) {
			got, err := MergePatch([]byte(tc.doc), []byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canon(t, tc.want), canon(t, string(got))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := MergePatch([]byte(`{}`), []byte(`{"a":`)); !errors.Is(err, ErrBadPatch) {
		t.Errorf("malformed patch: %v", err)
	}
}

func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"d"}`), []byte(`[{"op":"move","from":"/a/2","path":"/e"},{"op":"copy","from":"/c","path":"/a/-"}]`))
	f.Add([]byte(`{"a":1}`), []byte(`[{"op":"remove","path":"/a"},{"op":"test","path":"","value":{}}]`))
	f.Add([]byte(`[]`), []byte(`[{"op":"add","path":"/-","value":[1]}]`))
	f.Add([]byte(`{"a":{"b":"cccccccccccccccc"}}`), []byte(`[{"op":"copy","from":"/a","path":"/a/x"},{"op":"copy","from":"/a","path":"/a/y"},{"op":"copy","from":"/a","path":"/a/z"}]`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		orig := string(doc)
		out, err := JSONPatch(doc, patch)
		if string(doc) != orig {
			t.Fatal("input modified")
		}
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		if err != nil && !errors.Is(err, ErrBadPatch) && !errors.Is(err, ErrCannotApply) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"a":{"b":1}}`), []byte(`{"a":{"b":null,"c":[1]}}`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		out, err := MergePatch(doc, patch)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		if err != nil && !errors.Is(err, ErrBadPatch) && !errors.Is(err, ErrCannotApply) {
			t.Fatalf("unclassified error %v", err)
		}
		// A merge patch is idempotent.
		if err == nil {
			again, err := MergePatch(out, patch)
			if err != nil || canon(t, string(again)) != canon(t, string(out)) {
				t.Fatalf("not idempotent: %s then %s (%v)", out, again, err)
			}
		}
	})
}

// TestJSONPatchCopyLimit checks that copies which double the document are
// refused once they add up to maxCopyBytes, long before memory runs out,
// and that copies below the limit still apply.
func TestJSONPatchCopyLimit(t *testing.T) {
	doubling := func(n int) []byte {
		ops := []map[string]any{{"op": "add", "path": "/a", "value": map[string]any{"x": strings.Repeat("x", 1024)}}}
		for i := range n {
			ops = append(ops, map[string]any{"op": "copy", "from": "/a", "path": "/a/c" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
		}
		data, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name    string
		copies  int
		refused bool
	}{
		{"few copies", 4, false},
		{"just under the limit", 11, false}, // about 2 MiB copied in all
		{"over the limit", 12, true},
		{"a bomb", 60, true}, // 2^60 KiB if nothing stopped it
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := JSONPatch([]byte(`{}`), doubling(tc.copies))
			if tc.refused {
				if !errors.Is(err, ErrCannotApply) {
					t.Fatalf("got %d bytes, err %v; want ErrCannotApply", len(out), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadPatch marks a malformed patch document.
var ErrBadPatch = errors.New("malformed patch")

// ErrCannotApply marks a well-formed patch that does not apply to the document.
var ErrCannotApply = errors.New("patch cannot be applied")

// ErrTestFailed is wrapped (beside ErrCannotApply) by the error of a patch
// whose test operation failed: callers may treat it apart (a
// MutatingAdmissionPolicy's patch is then not applied, without error).
var ErrTestFailed = errors.New("test failed")

// maxOperations bounds a JSON patch, as kube-apiserver does.
const maxOperations = 10000

// maxCopyBytes bounds the JSON size of everything a patch's copy
// operations duplicate, kube-apiserver's default: without it a few dozen
// copies of a value into itself double the document each time and exhaust
// memory long before validation could refuse the result.
const maxCopyBytes = 3 << 20

// decode parses JSON keeping numbers exact.
func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// MergePatch applies an RFC 7386 merge patch to doc.
func MergePatch(doc, patch []byte) ([]byte, error) {
	p, err := decode(patch)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPatch, err)
	}
	d, err := decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: document: %v", ErrCannotApply, err)
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	} else {
		cp := make(map[string]any, len(tm))
		for k, v := range tm {
			cp[k] = v
		}
		tm = cp
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}

// operation is one step of an RFC 6902 patch.
type operation struct {
	Op    string           `json:"op"`
	Path  *string          `json:"path"`
	From  *string          `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// JSONPatch applies an RFC 6902 JSON patch to doc.
func JSONPatch(doc, patch []byte) ([]byte, error) {
	var ops []operation
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPatch, err)
	}
	if len(ops) > maxOperations {
		return nil, fmt.Errorf("%w: the allowed maximum operations in a JSON patch is %d, got %d", ErrBadPatch, maxOperations, len(ops))
	}
	d, err := decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: document: %v", ErrCannotApply, err)
	}
	copied := 0
	for i, op := range ops {
		if op.Path == nil {
			return nil, fmt.Errorf("%w: operation %d: missing path", ErrBadPatch, i)
		}
		path, err := parsePointer(*op.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: operation %d: %v", ErrBadPatch, i, err)
		}
		value := func() (any, error) {
			if op.Value == nil {
				return nil, fmt.Errorf("%w: operation %d (%s): missing value", ErrBadPatch, i, op.Op)
			}
			v, err := decode(*op.Value)
			if err != nil {
				return nil, fmt.Errorf("%w: operation %d: value: %v", ErrBadPatch, i, err)
			}
			return v, nil
		}
		from := func() ([]string, error) {
			if op.From == nil {
				return nil, fmt.Errorf("%w: operation %d (%s): missing from", ErrBadPatch, i, op.Op)
			}
			f, err := parsePointer(*op.From)
			if err != nil {
				return nil, fmt.Errorf("%w: operation %d: from: %v", ErrBadPatch, i, err)
			}
			return f, nil
		}
		switch op.Op {
		case "add":
			v, verr := value()
			if verr != nil {
				return nil, verr
			}
			d, err = add(d, path, v)
		case "remove":
			d, _, err = remove(d, path)
		case "replace":
			v, verr := value()
			if verr != nil {
				return nil, verr
			}
			if missingMember(d, path) {
				// As kube-apiserver's JSON patch library does, replacing a
				// member an object lacks adds it; a missing parent or array
				// index still fails.
				d, err = add(d, path, v)
				break
			}
			if d, _, err = remove(d, path); err == nil {
				d, err = add(d, path, v)
			}
		case "move":
			f, ferr := from()
			if ferr != nil {
				return nil, ferr
			}
			if isPrefix(f, path) && len(f) < len(path) {
				return nil, fmt.Errorf("%w: operation %d: cannot move a value into itself", ErrCannotApply, i)
			}
			var v any
			if d, v, err = remove(d, f); err == nil {
				d, err = add(d, path, v)
			}
		case "copy":
			f, ferr := from()
			if ferr != nil {
				return nil, ferr
			}
			var v any
			if v, err = get(d, f); err == nil {
				size, serr := json.Marshal(v)
				if serr != nil {
					return nil, fmt.Errorf("%w: operation %d: %v", ErrCannotApply, i, serr)
				}
				if copied += len(size); copied > maxCopyBytes {
					return nil, fmt.Errorf("%w: operation %d: the values copied add up to more than %d bytes", ErrCannotApply, i, maxCopyBytes)
				}
				d, err = add(d, path, deepCopy(v))
			}
		case "test":
			v, verr := value()
			if verr != nil {
				return nil, verr
			}
			var cur any
			if cur, err = get(d, path); err == nil && !equal(cur, v) {
				err = fmt.Errorf("%w: %w at %q", ErrCannotApply, ErrTestFailed, *op.Path)
			}
		default:
			return nil, fmt.Errorf("%w: operation %d: unknown op %q", ErrBadPatch, i, op.Op)
		}
		if err != nil {
			if errors.Is(err, ErrBadPatch) || errors.Is(err, ErrCannotApply) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: operation %d (%s %s): %v", ErrCannotApply, i, op.Op, *op.Path, err)
		}
	}
	return json.Marshal(d)
}

// parsePointer splits an RFC 6901 JSON pointer into unescaped tokens.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q must start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("JSON pointer %q has a bad escape", p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func isPrefix(prefix, path []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if prefix[i] != path[i] {
			return false
		}
	}
	return true
}

// index parses an array index token; end allows "-" and len(arr).
func index(tok string, n int, end bool) (int, error) {
	if end && tok == "-" {
		return n, nil
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, fmt.Errorf("invalid array index %q", tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		return 0, fmt.Errorf("invalid array index %q", tok)
	}
	limit := n - 1
	if end {
		limit = n
	}
	if i > limit {
		return 0, fmt.Errorf("array index %d out of bounds", i)
	}
	return i, nil
}

// missingMember reports whether path names a member its parent, an
// object, does not have.
func missingMember(doc any, path []string) bool {
	if len(path) == 0 {
		return false
	}
	parent, err := get(doc, path[:len(path)-1])
	if err != nil {
		return false
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, exists := m[path[len(path)-1]]
	return !exists
}

func get(doc any, path []string) (any, error) {
	cur := doc
	for _, tok := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("key %q not found", tok)
			}
			cur = v
		case []any:
			i, err := index(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("cannot descend into a scalar at %q", tok)
		}
	}
	return cur, nil
}

// add returns doc with v added at path; containers on the path are copied.
func add(doc any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	tok := path[0]
	switch c := doc.(type) {
	case map[string]any:
		cp := make(map[string]any, len(c)+1)
		for k, val := range c {
			cp[k] = val
		}
		if len(path) == 1 {
			cp[tok] = v
			return cp, nil
		}
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("key %q not found", tok)
		}
		nc, err := add(child, path[1:], v)
		if err != nil {
			return nil, err
		}
		cp[tok] = nc
		return cp, nil
	case []any:
		if len(path) == 1 {
			i, err := index(tok, len(c), true)
			if err != nil {
				return nil, err
			}
			out := make([]any, 0, len(c)+1)
			out = append(out, c[:i]...)
			out = append(out, v)
			return append(out, c[i:]...), nil
		}
		i, err := index(tok, len(c), false)
		if err != nil {
			return nil, err
		}
		nc, err := add(c[i], path[1:], v)
		if err != nil {
			return nil, err
		}
		out := append([]any(nil), c...)
		out[i] = nc
		return out, nil
	default:
		return nil, fmt.Errorf("cannot add below a scalar at %q", tok)
	}
}

// remove returns doc without the value at path, and that value.
func remove(doc any, path []string) (any, any, error) {
	if len(path) == 0 {
		return nil, doc, nil
	}
	tok := path[0]
	switch c := doc.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, nil, fmt.Errorf("key %q not found", tok)
		}
		cp := make(map[string]any, len(c))
		for k, val := range c {
			cp[k] = val
		}
		if len(path) == 1 {
			delete(cp, tok)
			return cp, child, nil
		}
		nc, removed, err := remove(child, path[1:])
		if err != nil {
			return nil, nil, err
		}
		cp[tok] = nc
		return cp, removed, nil
	case []any:
		i, err := index(tok, len(c), false)
		if err != nil {
			return nil, nil, err
		}
		if len(path) == 1 {
			out := make([]any, 0, len(c)-1)
			out = append(out, c[:i]...)
			return append(out, c[i+1:]...), c[i], nil
		}
		nc, removed, err := remove(c[i], path[1:])
		if err != nil {
			return nil, nil, err
		}
		out := append([]any(nil), c...)
		out[i] = nc
		return out, removed, nil
	default:
		return nil, nil, fmt.Errorf("cannot remove below a scalar at %q", tok)
	}
}

func deepCopy(v any) any {
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, val := range c {
			out[k] = deepCopy(val)
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, val := range c {
			out[i] = deepCopy(val)
		}
		return out
	default:
		return v
	}
}

// equal compares decoded JSON values; numbers compare by value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, e1 := x.Float64()
		fy, e2 := y.Float64()
		return e1 == nil && e2 == nil && fx == fy
	default:
		return a == b
	}
}

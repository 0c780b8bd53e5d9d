package apiextensions

import (
	"fmt"
	"strconv"
	"strings"
)

// JSONPath is a parsed Kubernetes JSONPath expression of the kind printer
// columns use: fields (.a.b, ['a.b']), indexes ([0], [-1]), wildcards
// ([*], .*) and filters ([?(@.type=="Ready")]), optionally inside {}.
// It is immutable and safe for concurrent use.
type JSONPath struct {
	steps []pathStep
}

type stepKind int

const (
	stepField stepKind = iota
	stepIndex
	stepAll
	stepFilter
)

type pathStep struct {
	kind  stepKind
	name  string // stepField
	index int    // stepIndex
	// stepFilter: the relative path, the operator and the literal compared.
	filter *JSONPath
	op     string
	value  any
}

// ParseJSONPath parses expr.
func ParseJSONPath(expr string) (*JSONPath, error) {
	s := strings.TrimSpace(expr)
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return nil, fmt.Errorf("unclosed action")
		}
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	s = strings.TrimPrefix(s, "$")
	if s == "" {
		return nil, fmt.Errorf("empty path")
	}
	p := &JSONPath{}
	for len(s) > 0 {
		switch {
		case s[0] == '.':
			s = s[1:]
			if strings.HasPrefix(s, "*") {
				p.steps = append(p.steps, pathStep{kind: stepAll})
				s = s[1:]
				continue
			}
			n := 0
			for n < len(s) && s[n] != '.' && s[n] != '[' {
				n++
			}
			if n == 0 {
				if len(s) == 0 && len(p.steps) == 0 {
					return p, nil // "." is the object itself
				}
				return nil, fmt.Errorf("empty field name")
			}
			p.steps = append(p.steps, pathStep{kind: stepField, name: s[:n]})
			s = s[n:]
		case s[0] == '[':
			end := matchingBracket(s)
			if end < 0 {
				return nil, fmt.Errorf("unterminated [")
			}
			inner := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			step, err := parseBracket(inner)
			if err != nil {
				return nil, err
			}
			p.steps = append(p.steps, step)
		default:
			return nil, fmt.Errorf("unexpected %q, expected . or [", s[:1])
		}
	}
	return p, nil
}

// matchingBracket returns the index of the ] closing s[0], skipping quoted text.
func matchingBracket(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func parseBracket(inner string) (pathStep, error) {
	switch {
	case inner == "*":
		return pathStep{kind: stepAll}, nil
	case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0]:
		return pathStep{kind: stepField, name: inner[1 : len(inner)-1]}, nil
	case strings.HasPrefix(inner, "?(") && strings.HasSuffix(inner, ")"):
		return parseFilter(strings.TrimSpace(inner[2 : len(inner)-1]))
	}
	n, err := strconv.Atoi(inner)
	if err != nil {
		return pathStep{}, fmt.Errorf("unsupported index %q", inner)
	}
	return pathStep{kind: stepIndex, index: n}, nil
}

func parseFilter(expr string) (pathStep, error) {
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		i := strings.Index(expr, op)
		if i < 0 {
			continue
		}
		left, right := strings.TrimSpace(expr[:i]), strings.TrimSpace(expr[i+len(op):])
		if !strings.HasPrefix(left, "@") {
			return pathStep{}, fmt.Errorf("filter must start with @: %q", expr)
		}
		rel, err := ParseJSONPath(left[1:])
		if left == "@" {
			rel, err = &JSONPath{}, nil
		}
		if err != nil {
			return pathStep{}, err
		}
		val, err := parseLiteral(right)
		if err != nil {
			return pathStep{}, err
		}
		return pathStep{kind: stepFilter, filter: rel, op: op, value: val}, nil
	}
	// [?(@.field)]: the field exists.
	if strings.HasPrefix(expr, "@") {
		rel, err := ParseJSONPath(expr[1:])
		if err != nil {
			return pathStep{}, err
		}
		return pathStep{kind: stepFilter, filter: rel, op: "exists"}, nil
	}
	return pathStep{}, fmt.Errorf("unsupported filter %q", expr)
}

func parseLiteral(s string) (any, error) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], nil
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return nil, fmt.Errorf("unsupported literal %q", s)
}

// Find returns the values the path selects in obj, a JSON-decoded value,
// in document order. A missing field selects nothing.
func (p *JSONPath) Find(obj any) []any {
	cur := []any{obj}
	for _, st := range p.steps {
		var next []any
		for _, v := range cur {
			next = st.apply(v, next)
		}
		cur = next
		if len(cur) == 0 {
			break
		}
	}
	return cur
}

func (st *pathStep) apply(v any, out []any) []any {
	switch st.kind {
	case stepField:
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[st.name]; ok {
				out = append(out, x)
			}
		}
	case stepIndex:
		if l, ok := v.([]any); ok {
			i := st.index
			if i < 0 {
				i += len(l)
			}
			if i >= 0 && i < len(l) {
				out = append(out, l[i])
			}
		}
	case stepAll:
		switch t := v.(type) {
		case []any:
			out = append(out, t...)
		case map[string]any:
			for _, k := range sortedKeys(t) {
				out = append(out, t[k])
			}
		}
	case stepFilter:
		if l, ok := v.([]any); ok {
			for _, item := range l {
				if st.matches(item) {
					out = append(out, item)
				}
			}
		}
	}
	return out
}

func (st *pathStep) matches(item any) bool {
	found := st.filter.Find(item)
	if st.op == "exists" {
		return len(found) > 0
	}
	for _, f := range found {
		if compareLiteral(f, st.op, st.value) {
			return true
		}
	}
	return false
}

func compareLiteral(v any, op string, lit any) bool {
	switch l := lit.(type) {
	case string:
		s, ok := v.(string)
		if !ok {
			return op == "!="
		}
		switch op {
		case "==":
			return s == l
		case "!=":
			return s != l
		case "<":
			return s < l
		case ">":
			return s > l
		case "<=":
			return s <= l
		case ">=":
			return s >= l
		}
	case bool:
		b, ok := v.(bool)
		switch op {
		case "==":
			return ok && b == l
		case "!=":
			return !ok || b != l
		}
	case float64:
		f, ok := toFloat(v)
		if !ok {
			return op == "!="
		}
		switch op {
		case "==":
			return f == l
		case "!=":
			return f != l
		case "<":
			return f < l
		case ">":
			return f > l
		case "<=":
			return f <= l
		case ">=":
			return f >= l
		}
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

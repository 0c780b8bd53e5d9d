package celrules

import (
	"errors"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validFieldPath parses a rule's fieldPath, a JSON path of .name and
// ['name'] steps relative to the rule's schema s, and returns it as a
// field.Path with the schema it refers to. Steps into maps become keys;
// steps into objects must name a declared property. List indexes are not
// allowed.
func validFieldPath(path string, s *apiextensionsv1.JSONSchemaProps) (*field.Path, *apiextensionsv1.JSONSchemaProps, error) {
	var out *field.Path
	step := func(name string) error {
		switch {
		case s.Properties != nil:
			out = out.Child(name)
			p, ok := s.Properties[name]
			if !ok {
				return errors.New("does not refer to a valid field")
			}
			s = &p
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			out = out.Key(name)
			s = s.AdditionalProperties.Schema
		default:
			return errors.New("does not refer to a valid field")
		}
		return nil
	}
	toks := tokenizeFieldPath(path)
	for i := 0; i < len(toks); i++ {
		next := func() (string, bool) {
			if i+1 >= len(toks) {
				return "", false
			}
			i++
			return toks[i], true
		}
		switch toks[i] {
		case ".":
			name, ok := next()
			if !ok {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			if err := step(name); err != nil {
				return nil, nil, err
			}
		case "[":
			lit, ok := next()
			if !ok {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
				return nil, nil, fmt.Errorf("expected single quoted string but got %s", lit)
			}
			name, err := unescapeSingleQuoted(lit[1 : len(lit)-1])
			if err != nil {
				return nil, nil, fmt.Errorf("invalid string literal: %w", err)
			}
			if err := step(name); err != nil {
				return nil, nil, err
			}
			end, ok := next()
			if !ok {
				return nil, nil, errors.New("unexpected end of JSON path")
			}
			if end != "]" {
				return nil, nil, fmt.Errorf("expected ] but got %s", end)
			}
		default:
			return nil, nil, fmt.Errorf("expected [ or . but got: %s", toks[i])
		}
	}
	return out, s, nil
}

// tokenizeFieldPath splits a path into ".", "[", "]", single-quoted strings
// (kept with their quotes) and names.
func tokenizeFieldPath(path string) []string {
	var toks []string
	for i := 0; i < len(path); {
		switch c := path[i]; {
		case c == '.' || c == '[' || c == ']':
			toks = append(toks, path[i:i+1])
			i++
		case c == '\'':
			j := i + 1
			for j < len(path) && (path[j] != '\'' || path[j-1] == '\\') {
				j++
			}
			if j < len(path) {
				j++
			}
			toks = append(toks, path[i:j])
			i = j
		default:
			j := i
			for j < len(path) && !strings.ContainsRune(".[]", rune(path[j])) {
				j++
			}
			toks = append(toks, path[i:j])
			i = j
		}
	}
	return toks
}

func unescapeSingleQuoted(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\'':
			b.WriteByte('\'')
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf("invalid escape char \\%c", s[i])
		}
	}
	return b.String(), nil
}

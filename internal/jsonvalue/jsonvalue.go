// Package jsonvalue encodes JSON-decoded values (map[string]any, []any,
// string, bool, int64, float64, nil and the other integer types) to the
// very bytes encoding/json.Marshal gives, keys sorted and HTML characters
// escaped, without reflection. Custom resources are such values, and
// serving a list of them is mostly encoding them.
package jsonvalue

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Append appends the JSON encoding of v to buf. Values of other types are
// encoded with encoding/json; an error comes only from those.
func Append(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return appendString(buf, t), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case int64:
		return strconv.AppendInt(buf, t, 10), nil
	case int:
		return strconv.AppendInt(buf, int64(t), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(t), 10), nil
	case float64:
		return appendFloat(buf, t)
	case map[string]any:
		if t == nil {
			return append(buf, "null"...), nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = Append(buf, t[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		if t == nil {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		for i, e := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = Append(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, data...), nil
}

// appendFloat formats f as encoding/json does.
func appendFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(buf) - start
		if n >= 4 && buf[len(buf)-4] == 'e' && buf[len(buf)-3] == '-' && buf[len(buf)-2] == '0' {
			buf[len(buf)-2] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
		}
	}
	return buf, nil
}

const hex = "0123456789abcdef"

// appendString quotes s as encoding/json does: HTML characters and the
// line and paragraph separators escaped, invalid UTF-8 replaced.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

package markers

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Render returns the Go source of t as the openapi package declares it:
// a variable named varName of type tableType, a map[string]map[string]
// of a struct type with the fields listType, listMapKeys, mapType and
// defaultJSON. The source is gofmt'ed; definitions and fields are sorted,
// so equal tables render to equal bytes. header is written as the file's
// leading comment, one line per element.
func Render(t Table, pkg, varName, tableType string, header []string) ([]byte, error) {
	var b bytes.Buffer
	for _, h := range header {
		fmt.Fprintf(&b, "// %s\n", h)
	}
	fmt.Fprintf(&b, "\npackage %s\n\n", pkg)
	fmt.Fprintf(&b, "var %s = %s{\n", varName, tableType)
	for _, def := range slices.Sorted(maps.Keys(t)) {
		fmt.Fprintf(&b, "%s: {\n", strconv.Quote(def))
		fields := t[def]
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			m := fields[name]
			var parts []string
			if m.ListType != "" {
				parts = append(parts, "listType: "+strconv.Quote(m.ListType))
			}
			if len(m.ListMapKeys) > 0 {
				keys := make([]string, len(m.ListMapKeys))
				for i, k := range m.ListMapKeys {
					keys[i] = strconv.Quote(k)
				}
				parts = append(parts, "listMapKeys: []string{"+strings.Join(keys, ", ")+"}")
			}
			if m.MapType != "" {
				parts = append(parts, "mapType: "+strconv.Quote(m.MapType))
			}
			if m.Default != "" {
				parts = append(parts, "defaultJSON: "+quote(m.Default))
			}
			fmt.Fprintf(&b, "%s: {%s},\n", strconv.Quote(name), strings.Join(parts, ", "))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated source: %w", err)
	}
	return out, nil
}

// quote writes s as a raw string literal when it can, which keeps JSON
// defaults readable.
func quote(s string) string {
	if !strings.ContainsAny(s, "`\r") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

package cel

import "strings"

// celReserved are the identifiers CEL reserves; property names equal to one
// are exposed as __name__.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true, "var": true, "void": true, "while": true,
}

// Escape returns the CEL identifier under which a schema property is
// exposed, following Kubernetes' rules: reserved words become __word__,
// and "__", ".", "-" and "/" become __underscores__, __dot__, __dash__ and
// __slash__. It reports false for names that cannot be exposed: empty ones,
// ones starting with a digit, or with characters other than ASCII letters,
// digits and "_.-/".
func Escape(name string) (string, bool) {
	if name == "" || ('0' <= name[0] && name[0] <= '9') {
		return "", false
	}
	if celReserved[name] {
		return "__" + name + "__", true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' && i+1 < len(name) && name[i+1] == '_':
			b.WriteString("__underscores__")
			i++
		case c == '.':
			b.WriteString("__dot__")
		case c == '-':
			b.WriteString("__dash__")
		case c == '/':
			b.WriteString("__slash__")
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

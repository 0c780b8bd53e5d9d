package cel

import (
	"testing"

	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestEscapedFieldAccess reads properties whose names are CEL keywords,
// language identifiers, macro names or contain escaped characters.
func TestEscapedFieldAccess(t *testing.T) {
	values := map[string]any{
		"true": int64(1), "null": int64(3), "in": int64(4), "namespace": int64(17), "while": int64(21),
		"int": int64(101), "type": int64(110), "self": int64(201), "all": int64(203), "size": "204",
		"_true": int64(301), "dot.dot": int64(401), "dash-dash": int64(402), "slash/slash": int64(403),
		"underscore_underscore": int64(404), "doubleunderscore__doubleunderscore": int64(405),
	}
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for k, v := range values {
		typ := "integer"
		if _, ok := v.(string); ok {
			typ = "string"
		}
		props[k] = apiextensionsv1.JSONSchemaProps{Type: typ}
	}
	props["m"] = apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer"}}}
	values["m"] = map[string]any{"@": int64(1), "9": int64(2), "./-": int64(4), "👑": int64(5)}
	dt := SchemaDeclType("root", &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}, false)
	env := selfEnv(t, dt)
	self := dt.Value(values)
	for _, expr := range []string{
		"self.__true__ == 1", "self.__null__ == 3", "self.__in__ == 4", "self.__namespace__ == 17", "self.__while__ == 21",
		// reserved words (but not literals) are also field names unescaped
		"self.namespace == 17 && has(self.namespace) && self.while == 21",
		"self.int == 101", "self.type == 110", "self.self == 201", "self.all == 203", "self.size == '204'",
		"self._true == 301", "self.dot__dot__dot == 401", "self.dash__dash__dash == 402", "self.slash__slash__slash == 403",
		"self.underscore_underscore == 404", "self.doubleunderscore__underscores__doubleunderscore == 405",
		// map keys are not escaped
		"self.m['@'] == 1 && self.m['9'] == 2 && self.m['./-'] == 4 && self.m['👑'] == 5",
	} {
		t.Run(expr, func(t *testing.T) {
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prog, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := prog.Eval(map[string]any{"self": self}); err != nil || v != types.True {
				t.Errorf("= %v, %v", v, err)
			}
		})
	}
	for _, expr := range []string{"self.true == 1", "self.__illegal__ == 301"} {
		if _, iss := env.Compile(expr); iss.Err() == nil {
			t.Errorf("%s compiled", expr)
		}
	}
}

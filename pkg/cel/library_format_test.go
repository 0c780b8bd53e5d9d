package cel

import (
	"fmt"
	"testing"

	"github.com/google/cel-go/common/types"
)

func TestFormats(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		format, valid, invalid string
	}{
		{"dns1123Label", "my-name", "my.name"},
		{"dns1123Subdomain", "apiextensions.k8s.io", "Apiextensions.k8s.io"},
		{"dns1035Label", "my-name", "1-name"},
		{"qualifiedName", "apiextensions.k8s.io/v1beta1", "/v1"},
		{"dns1123LabelPrefix", "my-prefix-", "my.prefix"},
		{"dns1123SubdomainPrefix", "my.prefix.-", "My.prefix"},
		{"dns1035LabelPrefix", "my-prefix-", "1-prefix"},
		{"labelValue", "my_value-1", "-value"},
		{"uri", "http://example.com/x", "example.com"},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"},
		{"byte", "aGVsbG8=", "!!"},
		{"date", "2021-01-01", "2021-13-01"},
		{"datetime", "2021-01-01T00:00:00Z", "2021-01-01 noon"},
	}
	if len(tests) != len(formats) {
		t.Fatalf("%d formats tested, %d declared", len(tests), len(formats))
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			expr := fmt.Sprintf(`!format.%[1]s().validate(%[2]q).hasValue() && format.%[1]s().validate(%[3]q).hasValue() && format.named(%[1]q) == optional.of(format.%[1]s())`,
				tt.format, tt.valid, tt.invalid)
			v, err := evalExpr(t, env, expr)
			if err != nil || v != types.True {
				t.Fatalf("%s = %v, %v", expr, v, err)
			}
		})
	}
}

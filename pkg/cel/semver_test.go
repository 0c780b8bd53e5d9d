package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func FuzzParseSemver(f *testing.F) {
	for _, s := range []string{"1.2.3", "0.0.0-alpha.1+b.2", "1.2", "v1.2.3", "01.2.3", "1.2.3-", "1.2.3+", "18446744073709551616.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSemver(s)
		if err != nil {
			_, _ = normalizeSemver(s)
			return
		}
		// a strict version prints as it was written and parses back
		if got := v.String(); got != s {
			t.Fatalf("ParseSemver(%q).String() = %q", s, got)
		}
		back, err := ParseSemver(v.String())
		if err != nil || !cmp.Equal(back, v) || back.Compare(v) != 0 {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}

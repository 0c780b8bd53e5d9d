package featuregate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// FlagName is the name of the flag AddFlag registers.
const FlagName = "feature-gates"

var _ pflag.Value = (*Registry)(nil)

// parse reads "A=true,B=false" into a map. Empty items (",,") are skipped
// and white space around names and values is ignored; a name given twice
// keeps its last value. Values are anything strconv.ParseBool accepts.
func parse(value string) (map[string]bool, error) {
	m := map[string]bool{}
	for item := range strings.SplitSeq(value, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, &gateError{fmt.Sprintf("missing bool value for %s", k), ErrInvalidValue}
		case k == "":
			return nil, &gateError{fmt.Sprintf("missing feature name in %q", strings.TrimSpace(item)), ErrInvalidValue}
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &gateError{fmt.Sprintf("invalid value of %s=%s, want true or false", k, v), ErrInvalidValue}
		}
		m[k] = b
	}
	return m, nil
}

// Set applies a --feature-gates value such as "A=true,B=false" (see
// SetFromMap). It implements pflag.Value, so repeating the flag adds to the
// earlier settings. A malformed value changes nothing.
func (r *Registry) Set(value string) error {
	m, err := parse(value)
	if err != nil {
		return err
	}
	return r.SetFromMap(m)
}

// String returns the explicit settings as "A=true,B=false", sorted by name,
// in the form Set accepts. It implements pflag.Value.
func (r *Registry) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, f := range slices.Sorted(maps.Keys(r.explicit)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%t", f, r.explicit[f])
	}
	return b.String()
}

// Type implements pflag.Value.
func (r *Registry) Type() string { return "mapStringBool" }

// AddFlag registers the registry as the --feature-gates flag of fs, with a
// usage listing KnownFeatures. It closes the registry to additions and
// default overrides (ErrClosed), since the usage would no longer be true.
func (r *Registry) AddFlag(fs *pflag.FlagSet) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	fs.Var(r, FlagName, "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n"+
		strings.Join(r.KnownFeatures(), "\n"))
}

package featuregate

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that parse never panics, that every error is an
// ErrInvalidValue, and that a parsed map printed back parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "A=true", "A=true,B=false", " A = 1 ,,B=F", "A", "=true", "A==x", "A=true,A=false", "\u00a0A=t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("parse(%q) error %v is not ErrInvalidValue", s, err)
			}
			return
		}
		var items []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "" || k != strings.TrimSpace(k) || strings.ContainsAny(k, "=,") {
				t.Fatalf("parse(%q) produced bad name %q", s, k)
			}
			items = append(items, k+"="+strconv.FormatBool(m[k]))
		}
		again, err := parse(strings.Join(items, ","))
		if err != nil {
			t.Fatalf("reparse of %q: %v", items, err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", s, diff)
		}
	})
}

// FuzzSet checks Set against the registry's rules: it never panics, a
// rejected value changes nothing, and an accepted one leaves every named
// feature with the value given.
func FuzzSet(f *testing.F) {
	for _, s := range []string{"AlphaOff=true", "AllAlpha=true,AlphaOff=false", "GALocked=false", "Nope=1", "BetaOn=0,OldThing=t", "Promoted=true"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := newRegistry(t, v("1.2"), nil)
		if err := r.Set("BetaOff=true"); err != nil {
			t.Fatal(err)
		}
		before, beforeStr := values(r), r.String()
		err := r.Set(s)
		if err != nil {
			if diff := cmp.Diff(before, values(r)); diff != "" || r.String() != beforeStr {
				t.Fatalf("rejected Set(%q) (%v) changed state:\n%s", s, err, diff)
			}
			return
		}
		m, perr := parse(s)
		if perr != nil {
			t.Fatalf("Set(%q) accepted what parse rejects: %v", s, perr)
		}
		for k, want := range m {
			if got := r.Enabled(Feature(k)); got != want {
				t.Errorf("after Set(%q): Enabled(%s) = %t, want %t", s, k, got, want)
			}
		}
		// Locked features keep their defaults whatever was accepted.
		if !r.Enabled(gaLocked) || !r.Enabled(alphaLock) {
			t.Errorf("Set(%q) moved a locked feature", s)
		}
	})
}

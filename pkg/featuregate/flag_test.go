package featuregate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

func TestAddFlagUsage(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	r.AddFlag(fs)
	f := fs.Lookup(FlagName)
	if f == nil {
		t.Fatal("no --feature-gates flag")
	}
	want := "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n" +
		"AllAlpha=true|false (ALPHA - default=false)\n" +
		"AllBeta=true|false (BETA - default=false)\n" +
		"AlphaLocked=true|false (ALPHA - default=true)\n" +
		"AlphaOff=true|false (ALPHA - default=false)\n" +
		"BetaOff=true|false (BETA - default=false)\n" +
		"BetaOn=true|false (BETA - default=true)\n" +
		"Promoted=true|false (BETA - default=true)"
	if diff := cmp.Diff(want, f.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if f.DefValue != "" {
		t.Errorf("flag default = %q, want empty", f.DefValue)
	}
}

func TestFlagParsing(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string // String() after parsing
		wantErr string
	}{
		{name: "none", args: nil, want: ""},
		{name: "one flag", args: []string{"--feature-gates=AlphaOff=true,BetaOn=false"}, want: "AlphaOff=true,BetaOn=false"},
		{name: "repeated flags add up", args: []string{"--feature-gates=AlphaOff=true", "--feature-gates", "BetaOn=false"},
			want: "AlphaOff=true,BetaOn=false"},
		{name: "unknown feature", args: []string{"--feature-gates=Bogus=true"},
			wantErr: `invalid argument "Bogus=true" for "--feature-gates" flag: unrecognized feature gate: Bogus`},
		{name: "locked feature", args: []string{"--feature-gates=GALocked=false"},
			wantErr: "cannot set feature gate GALocked to false, feature is locked to true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t, v("1.2"), nil)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(&strings.Builder{})
			r.AddFlag(fs)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse = %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(); got != tc.want {
				t.Errorf("String = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]bool
		wantErr string
	}{
		{in: "", want: map[string]bool{}},
		{in: " , ,", want: map[string]bool{}},
		{in: "A=true", want: map[string]bool{"A": true}},
		{in: "A=true,B=FALSE,C=0,D=t", want: map[string]bool{"A": true, "B": false, "C": false, "D": true}},
		{in: " A = true ", want: map[string]bool{"A": true}},
		{in: "A=true,A=false", want: map[string]bool{"A": false}},
		{in: "A", wantErr: "missing bool value for A"},
		{in: "A=true,B", wantErr: "missing bool value for B"},
		{in: "A==true", wantErr: "invalid value of A==true"},
		{in: "A=on", wantErr: "invalid value of A=on, want true or false"},
		{in: " = true", wantErr: `missing feature name in "= true"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr && !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("parse = %v, %v; want error %q", got, err, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidValue) {
					t.Errorf("error %v is not ErrInvalidValue", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

package cel

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// SemverType is the CEL type of semantic versions.
var SemverType = cel.ObjectType("kubernetes.Semver")

// Semver is a semantic version (semver.org 2.0.0) as a CEL value.
type Semver struct {
	Major, Minor, Patch uint64
	// Pre are the dot-separated pre-release identifiers, Build the build
	// metadata identifiers (ignored when comparing).
	Pre, Build []string
}

var _ ref.Val = Semver{}

// ConvertToNative returns the Semver, or its string form.
func (v Semver) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf("").AssignableTo(t) {
		return v.String(), nil
	}
	return convertToNative(v, t)
}

// ConvertToType converts to the version's own type or to type.
func (v Semver) ConvertToType(t ref.Type) ref.Val { return convertToType(v, t) }

// Type is SemverType.
func (v Semver) Type() ref.Type { return SemverType }

// Value is the Semver itself.
func (v Semver) Value() any { return v }

// Equal reports whether two versions have the same precedence.
func (v Semver) Equal(other ref.Val) ref.Val {
	o, ok := other.(Semver)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.Compare(o) == 0)
}

// String formats the version.
func (v Semver) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if len(v.Build) > 0 {
		s += "+" + strings.Join(v.Build, ".")
	}
	return s
}

// Compare returns -1, 0 or 1 as v has lower, equal or higher precedence
// than o.
func (v Semver) Compare(o Semver) int {
	for _, d := range [][2]uint64{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	// a release is higher than its pre-releases
	switch {
	case len(v.Pre) == 0 && len(o.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(o.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(o.Pre); i++ {
		if c := comparePre(v.Pre[i], o.Pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.Pre) < len(o.Pre):
		return -1
	case len(v.Pre) > len(o.Pre):
		return 1
	}
	return 0
}

// comparePre orders pre-release identifiers: numeric ones numerically and
// below alphanumeric ones, which compare as ASCII.
func comparePre(a, b string) int {
	an, aerr := strconv.ParseUint(a, 10, 64)
	bn, berr := strconv.ParseUint(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		if an == bn {
			return 0
		}
		if an < bn {
			return -1
		}
		return 1
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// ParseSemver parses a strict semantic version such as 1.2.3-rc.1+build.5.
func ParseSemver(s string) (Semver, error) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return Semver{}, errors.New("no Major.Minor.Patch elements found")
	}
	var v Semver
	rest := parts[2]
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		build := strings.Split(rest[i+1:], ".")
		for _, b := range build {
			if b == "" || !isIdentifier(b) {
				return Semver{}, fmt.Errorf("invalid build metadata %q", rest[i+1:])
			}
		}
		v.Build, rest = build, rest[:i]
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre := strings.Split(rest[i+1:], ".")
		for _, p := range pre {
			if p == "" || !isIdentifier(p) || (isNumeric(p) && len(p) > 1 && p[0] == '0') {
				return Semver{}, fmt.Errorf("invalid pre-release version %q", rest[i+1:])
			}
		}
		v.Pre, rest = pre, rest[:i]
	}
	for i, p := range []string{parts[0], parts[1], rest} {
		if p == "" || !isNumeric(p) {
			return Semver{}, fmt.Errorf("invalid character(s) found in version number %q", p)
		}
		if len(p) > 1 && p[0] == '0' {
			return Semver{}, fmt.Errorf("version number %q must not contain leading zeroes", p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return Semver{}, fmt.Errorf("version number %q: %w", p, err)
		}
		*[]*uint64{&v.Major, &v.Minor, &v.Patch}[i] = n
	}
	return v, nil
}

// normalizeSemver parses a version leniently, as Kubernetes' semver(s, true)
// does: a leading "v", leading zeroes, and a missing minor or patch number
// (when there is no pre-release or build part) are accepted.
func normalizeSemver(s string) (Semver, error) {
	s = strings.TrimPrefix(s, "v")
	parts := strings.SplitN(s, ".", 3)
	for i, p := range parts {
		if len(p) > 1 {
			p = strings.TrimLeft(p, "0")
			if p == "" || p[0] < '0' || p[0] > '9' {
				p = "0" + p
			}
			parts[i] = p
		}
	}
	if len(parts) < 3 {
		if strings.ContainsAny(parts[len(parts)-1], "+-") {
			return Semver{}, errors.New("short version cannot contain PreRelease/Build meta data")
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
	}
	return ParseSemver(strings.Join(parts, "."))
}

func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// semverLib: semver(s[, normalize]), isSemver(s[, normalize]) and the
// methods isGreaterThan, isLessThan, compareTo, major, minor and patch.
var semverLib = &library{name: "kubernetes.Semver", funcs: []cel.EnvOption{
	cel.Function("semver",
		cel.Overload("string_to_semver", []*cel.Type{cel.StringType}, SemverType,
			cel.UnaryBinding(func(s ref.Val) ref.Val { return stringToSemver(s, types.False) })),
		cel.Overload("string_bool_to_semver", []*cel.Type{cel.StringType, cel.BoolType}, SemverType, cel.BinaryBinding(stringToSemver))),
	cel.Function("isSemver",
		cel.Overload("is_semver_string", []*cel.Type{cel.StringType}, cel.BoolType,
			cel.UnaryBinding(func(s ref.Val) ref.Val { return isSemver(s, types.False) })),
		cel.Overload("is_semver_string_bool", []*cel.Type{cel.StringType, cel.BoolType}, cel.BoolType, cel.BinaryBinding(isSemver))),
	cel.Function("isGreaterThan", cel.MemberOverload("semver_is_greater_than", []*cel.Type{SemverType, SemverType}, cel.BoolType,
		cel.BinaryBinding(semverPair(func(a, b Semver) ref.Val { return types.Bool(a.Compare(b) == 1) })))),
	cel.Function("isLessThan", cel.MemberOverload("semver_is_less_than", []*cel.Type{SemverType, SemverType}, cel.BoolType,
		cel.BinaryBinding(semverPair(func(a, b Semver) ref.Val { return types.Bool(a.Compare(b) == -1) })))),
	cel.Function("compareTo", cel.MemberOverload("semver_compare_to", []*cel.Type{SemverType, SemverType}, cel.IntType,
		cel.BinaryBinding(semverPair(func(a, b Semver) ref.Val { return types.Int(a.Compare(b)) })))),
	semverPart("major", "semver_major", func(v Semver) uint64 { return v.Major }),
	semverPart("minor", "semver_minor", func(v Semver) uint64 { return v.Minor }),
	semverPart("patch", "semver_patch", func(v Semver) uint64 { return v.Patch }),
}}

func parseSemverArgs(sv, nv ref.Val) (Semver, ref.Val) {
	s, ok := sv.Value().(string)
	if !ok {
		return Semver{}, types.MaybeNoSuchOverloadErr(sv)
	}
	normalize, ok := nv.Value().(bool)
	if !ok {
		return Semver{}, types.MaybeNoSuchOverloadErr(nv)
	}
	var v Semver
	var err error
	if normalize {
		v, err = normalizeSemver(s)
	} else {
		v, err = ParseSemver(s)
	}
	if err != nil {
		return Semver{}, types.WrapErr(err)
	}
	return v, nil
}

func stringToSemver(sv, nv ref.Val) ref.Val {
	v, errVal := parseSemverArgs(sv, nv)
	if errVal != nil {
		return errVal
	}
	return v
}

func isSemver(sv, nv ref.Val) ref.Val {
	_, errVal := parseSemverArgs(sv, nv)
	return types.Bool(errVal == nil)
}

func semverPair(f func(a, b Semver) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return func(av, bv ref.Val) ref.Val {
		a, ok := av.(Semver)
		if !ok {
			return types.MaybeNoSuchOverloadErr(av)
		}
		b, ok := bv.(Semver)
		if !ok {
			return types.MaybeNoSuchOverloadErr(bv)
		}
		return f(a, b)
	}
}

func semverPart(name, overload string, part func(Semver) uint64) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{SemverType}, cel.IntType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(Semver)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.Int(part(s))
		})))
}

package cel

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// TestLibraryCosts checks the static and runtime costs of library calls
// against the values Kubernetes records for the same expressions.
func TestLibraryCosts(t *testing.T) {
	const (
		ints    = "[1, 2, 3, 4, 5]"
		strs    = "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']"
		byteses = "[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), bytes('012345678901')]"
		durs    = "[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]"
		long    = "'01234567890123456789012345678901234567890123456789'"
		u       = "url('https:://kubernetes.io/')"
		ipv4    = "ip('192.168.0.1')"
		ipv6    = "ip('2001:db8:3333:4444:5555:6666:7777:8888')"
		cidr4   = "cidr('192.168.0.0/16')"
	)
	tests := []struct {
		expr     string
		min, max uint64
		runtime  uint64
	}{
		{ints + ".sum()", 15, 15, 15},
		{durs + ".sum()", 20, 20, 20},
		{ints + ".isSorted()", 15, 15, 15},
		{strs + ".max()", 15, 25, 15},
		{byteses + ".min()", 25, 35, 25},
		{ints + ".indexOf(3)", 15, 15, 15},
		{strs + ".lastIndexOf('x')", 15, 25, 15},
		{long + ".indexOf('123')", 5, 5, 5},
		{u + ".getScheme()", 4, 4, 4},
		{u + ".getQuery()", 4, 4, 4},
		{u + " == url('https:://kubernetes.io/')", 7, 9, 7},
		{u + " == url('http://x.b')", 5, 5, 5},
		{ipv4, 2, 2, 2},
		{ipv4 + ".family()", 3, 3, 3},
		{ipv6 + ".isLoopback()", 5, 5, 5},
		{ipv4 + " == ip('192.168.0.1')", 5, 5, 5},
		{"ip.isCanonical('192.168.0.1')", 3, 3, 3},
		{"ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8, 8, 8},
		{cidr4 + ".prefixLength()", 3, 3, 3},
		{cidr4 + ".containsCIDR(cidr('192.0.0.0/30'))", 7, 11, 7},
		{cidr4 + ".containsCIDR('192.168.0.0/16')", 7, 11, 7},
		{cidr4 + ".containsIP(ip('192.0.0.1'))", 4, 7, 4},
		{cidr4 + ".containsIP(ip('192.169.0.1'))", 5, 8, 5},
		{`semver("1234.56789012345.67890123456789")`, 4, 4, 4},
		{`isSemver("1.0.0")`, 1, 1, 1},
		{`semver("1.2.3").minor()`, 2, 2, 2},
		{`semver("1.0.0").compareTo(semver("1.2.3"))`, 3, 3, 3},
		{"'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3, 3, 3},
		{"'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 7, 9, 9},
		{"strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 7, 11, 9},
		{"'abc 123 def 123'.replace('123', '456')", 3, 3, 3},
		{"'abc 123 def 123'.replace('', 'x')", 3, 3, 3},
		{"'abc 123 def 123'.split(' ', 1)", 3, 3, 3},
		{"'abc 123 def 123'.substring(5, 8)", 2, 2, 2},
		{"'  abc 123 def 123  '.trim()", 2, 2, 2},
		{"['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')", 11, 23, 15},
		{"['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()", 10, 22, 13},
		{"'abc 123 def 123'.find('123')", 2, 2, 2},
		{"'abc 123 def 123'.findAll('123', 1)", 2, 2, 2},
		{`quantity("12Mi")`, 1, 1, 1},
		{`quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")`, 3, 6, 6},
		{`quantity("200M").compareTo(quantity("0.2G")) > 0`, 4, 4, 4},
		{`quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0`, 7, 7, 7},
		{`quantity("50.703k").asApproximateFloat() > 0.0`, 3, 3, 3},
		{`format.named("dns1123subdomain")`, 1, 1, 1},
		{`format.named("dns1123Subdomain").value().validate("my-name")`, 34, 34, 17},
		{`format.named("dns1123Label").value().validate("my-name")`, 34, 34, 10},
	}
	// As in Kubernetes' own measurements: the libraries without the
	// program optimizations of the base environment (which fold constant
	// literals), and strings and bytes of at most 12 bytes.
	env, err := cel.NewEnv(
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.TwoVarComprehensions(), cel.OptionalTypes(),
		cel.Lib(listsLib), cel.Lib(regexLib), cel.Lib(urlsLib), cel.Lib(quantityLib), cel.Lib(ipLib),
		cel.Lib(cidrLib), cel.Lib(formatLib), cel.Lib(semverLib),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
	)
	if err != nil {
		t.Fatal(err)
	}
	estimator := &CostEstimator{SizeEstimator: shortStrings{}}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ast, iss := env.Compile(tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			est, err := env.EstimateCost(ast, estimator)
			if err != nil {
				t.Fatal(err)
			}
			if want := (checker.CostEstimate{Min: tt.min, Max: tt.max}); est != want {
				t.Errorf("estimated %d..%d, Kubernetes %d..%d", est.Min, est.Max, want.Min, want.Max)
			}
			prog, err := env.Program(ast, cel.CostTracking(estimator))
			if err != nil {
				t.Fatal(err)
			}
			_, details, err := prog.Eval(map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *details.ActualCost(); got != tt.runtime {
				t.Errorf("runtime cost %d, Kubernetes %d", got, tt.runtime)
			}
		})
	}
}

// shortStrings bounds every string and bytes value to 12 bytes.
type shortStrings struct{}

func (shortStrings) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: 12}
	}
	return nil
}

func (shortStrings) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

package cel

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

func newTestEnv(t testing.TB) *cel.Env {
	t.Helper()
	env, err := NewBaseEnv()
	if err != nil {
		t.Fatalf("NewBaseEnv: %v", err)
	}
	return env
}

// evalExpr compiles and evaluates expr with no variables.
func evalExpr(t testing.TB, env *cel.Env, expr string) (ref.Val, error) {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prog, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	v, _, err := prog.Eval(cel.NoVars())
	return v, err
}

func TestLibraries(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		name string
		expr string
		// wantErr, if set, is a substring of the compile or evaluation error;
		// otherwise the expression must evaluate to true.
		wantErr string
	}{
		// lists
		{name: "isSorted ints", expr: `[1, 2, 2, 3].isSorted() && ![2, 1].isSorted() && [].isSorted()`},
		{name: "isSorted strings", expr: `["a", "b"].isSorted() && !["b", "a"].isSorted()`},
		{name: "sum", expr: `[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [duration('1s'), duration('2s')].sum() == duration('3s')`},
		{name: "sum of empty list is zero", expr: `[].sum() == 0`},
		{name: "min max", expr: `[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ["b", "a"].min() == "a"`},
		{name: "min of empty list", expr: `[].min() == 0`, wantErr: "min called on empty list"},
		{name: "max of empty list", expr: `[].max() == 0`, wantErr: "max called on empty list"},
		{name: "indexOf", expr: `[1, 2, 2, 3].indexOf(2) == 1 && [1, 2, 2, 3].lastIndexOf(2) == 2 && [1].indexOf(5) == -1 && [1].lastIndexOf(5) == -1`},
		{name: "sum of bools does not compile", expr: `[true].sum()`, wantErr: "found no matching overload for 'sum'"},
		// cel-go lists, sets, strings, two-variable comprehensions
		{name: "ext lists", expr: `[3, 1, 2].sort() == [1, 2, 3] && [[1], [2, 3]].flatten() == [1, 2, 3] && [1, 1, 2].distinct() == [1, 2] && lists.range(3) == [0, 1, 2]`},
		{name: "sets", expr: `sets.contains([1, 2, 3], [3, 1]) && sets.equivalent([1, 1], [1]) && sets.intersects([1], [1, 2])`},
		{name: "strings v2", expr: `"Hello".lowerAscii() == "hello" && "a,b".split(",") == ["a", "b"] && ["a", "b"].join("-") == "a-b" && "abc".indexOf("c") == 2 && strings.quote("x") == '"x"'`},
		{name: "strings format", expr: `"%d items".format([3]) == "3 items"`},
		{name: "two-variable comprehensions", expr: `{"a": 1}.all(k, v, k == "a" && v == 1) && [5, 6].exists(i, v, i == 1 && v == 6) && {"a": 1}.transformMap(k, v, v + 1) == {"a": 2}`},
		{name: "optionals", expr: `optional.of(1).orValue(2) == 1 && optional.none().orValue(2) == 2 && {"a": 1}[?"b"].orValue(0) == 0`},
		{name: "cross-type numeric comparison", expr: `1 < 1.5 && 2u > 1`},
		{name: "bad regex literal is a compile error", expr: `"a".matches("[")`, wantErr: "invalid matches argument"},
		{name: "bad duration literal is a compile error", expr: `duration("1x") > duration("1s")`, wantErr: "invalid duration argument"},
		// regex
		{name: "find", expr: `"abc 123".find("[0-9]+") == "123" && "abc".find("[0-9]+") == ""`},
		{name: "findAll", expr: `"123 abc 456".findAll("[0-9]+") == ["123", "456"] && "123 abc 456".findAll("[0-9]+", 1) == ["123"] && "1 2 3".findAll("[0-9]", -1).size() == 3`},
		{name: "find with illegal regex", expr: `"a".find(string("[")) == ""`, wantErr: "Illegal regex"},
		// urls
		{name: "url parts", expr: `url("https://user@example.com:8080/a%20b/c?x=1&x=2&y=3#frag").getScheme() == "https" &&
			url("https://example.com:8080/path").getHost() == "example.com:8080" &&
			url("https://example.com:8080/path").getHostname() == "example.com" &&
			url("https://example.com:8080/path").getPort() == "8080" &&
			url("https://example.com/a%20b").getEscapedPath() == "/a%20b" &&
			url("https://example.com/?x=1&x=2&y=3").getQuery() == {"x": ["1", "2"], "y": ["3"]}`},
		{name: "url of IPv6 host", expr: `url("https://[::1]:80/").getHostname() == "::1"`},
		{name: "absolute path is a URL", expr: `isURL("/path") && url("/path").getHost() == ""`},
		{name: "isURL", expr: `isURL("https://example.com") && !isURL("example.com") && !isURL("")`},
		{name: "url of a relative reference", expr: `url("example.com").getHost() == ""`, wantErr: "URL parse error during conversion from string"},
		{name: "url equality", expr: `url("https://a/b") == url("https://a/b") && url("https://a/b") != url("https://a/c")`},
		// quantity
		{name: "quantity parse", expr: `isQuantity("1.5Gi") && isQuantity("100m") && !isQuantity("1.5GiB") && !isQuantity("")`},
		{name: "quantity equality is numeric", expr: `quantity("1") == quantity("1000m") && quantity("1Ki") == quantity("1024")`},
		{name: "quantity compare", expr: `quantity("1Gi").isGreaterThan(quantity("1G")) && quantity("500m").isLessThan(quantity("1")) && quantity("1").compareTo(quantity("1000m")) == 0 && quantity("2").compareTo(quantity("1")) == 1`},
		{name: "quantity arithmetic", expr: `quantity("1").add(quantity("500m")) == quantity("1500m") && quantity("1").add(2) == quantity("3") && quantity("1").sub(quantity("250m")) == quantity("750m") && quantity("5").sub(1) == quantity("4")`},
		{name: "quantity conversions", expr: `quantity("5k").asInteger() == 5000 && quantity("1.5").asApproximateFloat() == 1.5 && quantity("5k").isInteger() && !quantity("500m").isInteger()`},
		{name: "quantity sign", expr: `sign(quantity("-1")) == -1 && sign(quantity("0")) == 0 && sign(quantity("5m")) == 1`},
		{name: "quantity asInteger of a fraction", expr: `quantity("500m").asInteger() == 0`, wantErr: "cannot convert value to integer"},
		{name: "quantity of garbage", expr: `quantity("abc") == quantity("1")`, wantErr: "quantities must match the regular expression"},
		{name: "quantity add does not modify its receiver", expr: `[quantity("1")].map(q, [q.add(1), q]) == [[quantity("2"), quantity("1")]]`},
		// ip
		{name: "ip", expr: `isIP("1.2.3.4") && isIP("::1") && !isIP("1.2.3") && !isIP("fe80::1%eth0") && !isIP("::ffff:1.2.3.4")`},
		{name: "ip family and string", expr: `ip("1.2.3.4").family() == 4 && ip("::1").family() == 6 && string(ip("2001:db8::1")) == "2001:db8::1"`},
		{name: "ip predicates", expr: `ip("127.0.0.1").isLoopback() && ip("0.0.0.0").isUnspecified() && ip("169.254.1.1").isLinkLocalUnicast() && ip("ff02::1").isLinkLocalMulticast() && ip("8.8.8.8").isGlobalUnicast()`},
		{name: "ip canonical", expr: `ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1") && !ip.isCanonical("2001:db8:0::1")`},
		{name: "ip with zone", expr: `ip("fe80::1%eth0").family() == 6`, wantErr: "with zone value is not allowed"},
		{name: "ipv4-mapped ipv6", expr: `ip("::ffff:1.2.3.4").family() == 6`, wantErr: "IPv4-mapped IPv6 address"},
		{name: "ip equality", expr: `ip("::1") == ip("0:0::1") && ip("1.2.3.4") != ip("1.2.3.5")`},
		// cidr
		{name: "cidr", expr: `isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0") && !isCIDR("10.0.0.0/33")`},
		{name: "cidr contains", expr: `cidr("10.0.0.0/8").containsIP("10.1.2.3") && cidr("10.0.0.0/8").containsIP(ip("10.1.2.3")) && !cidr("10.0.0.0/8").containsIP("11.0.0.1") &&
			cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && cidr("10.0.0.0/8").containsCIDR(cidr("10.0.0.0/8")) && !cidr("10.1.0.0/16").containsCIDR("10.0.0.0/8")`},
		{name: "cidr parts", expr: `cidr("10.1.2.3/8").ip() == ip("10.1.2.3") && cidr("10.1.2.3/8").prefixLength() == 8 && cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8") && string(cidr("::1/128")) == "::1/128"`},
		{name: "cidr parse error", expr: `cidr("10.0.0.0/99").prefixLength() == 1`, wantErr: "network address parse error"},
		// semver
		{name: "semver parse", expr: `isSemver("1.2.3") && isSemver("1.2.3-rc.1+build.5") && !isSemver("1.2") && !isSemver("v1.2.3") && !isSemver("01.2.3") && !isSemver("1.2.3-01")`},
		{name: "semver normalize", expr: `isSemver("v1.2", true) && semver("v01.2", true) == semver("1.2.0") && !isSemver("1.2-rc", true)`},
		{name: "semver parts", expr: `semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3`},
		{name: "semver precedence", expr: `semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1")) && semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta")) &&
			semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11")) && semver("1.0.0-rc.1").isLessThan(semver("1.0.0")) &&
			semver("1.10.0").isGreaterThan(semver("1.9.9")) && semver("1.0.0+a").compareTo(semver("1.0.0+b")) == 0 && semver("2.0.0").compareTo(semver("1.0.0")) == 1`},
		{name: "semver equality ignores build metadata", expr: `semver("1.0.0+a") == semver("1.0.0+b") && semver("1.0.0") != semver("1.0.1")`},
		{name: "semver of garbage", expr: `semver("1.x.0").major() == 1`, wantErr: "invalid character(s) found in version number"},
		// format
		{name: "format valid", expr: `!format.dns1123Label().validate("my-name").hasValue() && !format.dns1123Subdomain().validate("a.b.c").hasValue() && !format.uuid().validate("123e4567-e89b-12d3-a456-426614174000").hasValue()`},
		{name: "format invalid", expr: `format.dns1123Label().validate("My_Name").hasValue() && format.labelValue().validate("-x").value().size() > 0 && format.byte().validate("!!") == optional.of(["invalid base64"])`},
		{name: "format message", expr: `format.dns1035Label().validate("1a").value()[0].startsWith("a DNS-1035 label must consist of")`},
		{name: "format named", expr: `format.named("qualifiedName").hasValue() && !format.named("nope").hasValue() && format.named("dns1123Label").value() == format.dns1123Label()`},
		{name: "format datetime and uri", expr: `!format.datetime().validate("2021-01-01T00:00:00Z").hasValue() && format.date().validate("2021-13-01").hasValue() && !format.uri().validate("https://a").hasValue()`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := evalExpr(t, env, tt.expr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error containing %q", v, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.expr, err)
			}
			if v != types.True {
				t.Fatalf("%s = %v, want true", tt.expr, v)
			}
		})
	}
}

func TestRuntimeCostLimit(t *testing.T) {
	env := newTestEnv(t)
	// Each iteration scans a 1000-byte string (cost 100): 10^5 of them
	// exceed PerCallLimit after about 10^4.
	long := strings.Repeat("a", 1000)
	_, err := evalExpr(t, env, `lists.range(100000).all(i, !'`+long+`'.contains('b'))`)
	if err == nil || !strings.Contains(err.Error(), "operation cancelled: actual cost limit exceeded") {
		t.Fatalf("got %v, want the cost limit to stop evaluation", err)
	}
}

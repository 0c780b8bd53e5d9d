package cel

import "testing"

func TestSmoke(t *testing.T) {
	env, err := NewBaseEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{`[1,2].isSorted()`, `quantity("1").isLessThan(quantity("2"))`, `sign(quantity("1")) == 1`, `url("https://a/b").getHost() == "a"`,
		`format.dns1123Label().validate("a").hasValue() == false`, `cidr("10.0.0.0/8").containsIP("10.1.2.3")`, `"abc".find("b") == "b"`, `sets.contains([1],[1])`, `[1].all(i, v, v > 0)`, `"a".lowerAscii() == "a"`} {
		ast, iss := env.Compile(e)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", e, iss.Err())
		}
		p, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := p.Eval(map[string]any{})
		if err != nil || v.Value() != true {
			t.Errorf("%s: %v %v", e, v, err)
		}
	}
}

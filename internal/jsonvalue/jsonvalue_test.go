package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAppendMatchesEncodingJSON(t *testing.T) {
	cases := []any{
		nil, true, false, "", "plain", "<a href=\"x\">&amp;</a>", "tab\tnew\nline\r\x00\x1f\\", "\u2028\u2029 é 日本", "bad \xff utf8",
		int64(0), int64(-42), int64(math.MaxInt64), 3, int32(7),
		0.0, 1.5, -2.25, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 5e-324, math.MaxFloat64,
		map[string]any{}, map[string]any{"b": int64(1), "a": []any{"x", nil, map[string]any{"z": true}}},
		[]any{}, []any{1.0, "s", []any{}},
		map[string]any(nil), []any(nil),
		map[string]string{"typed": "falls back"},
	}
	for _, v := range cases {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Append(nil, v)
		if err != nil {
			t.Fatalf("Append(%#v): %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Append(%#v) = %s, want %s", v, got, want)
		}
	}
	if _, err := Append(nil, math.Inf(1)); err == nil {
		t.Error("Append(+Inf) succeeded")
	}
}

// randomValue builds a random JSON value of bounded depth.
func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(8); {
	case n == 0 || depth == 0 && n >= 5:
		return randomString(r)
	case n == 1:
		return r.Int64N(1<<40) - 1<<39
	case n == 2:
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(50)-25))
	case n == 3:
		return r.IntN(2) == 0
	case n == 4:
		return nil
	case n <= 6:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth-1)
		}
		return m
	default:
		l := []any{}
		for range r.IntN(5) {
			l = append(l, randomValue(r, depth-1))
		}
		return l
	}
}

func randomString(r *rand.Rand) string {
	alphabet := []rune("ab<>&\"\\\n\t\x01é日\u2028")
	b := make([]rune, r.IntN(8))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func TestAppendRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for range 2000 {
		v := randomValue(r, 4)
		want, _ := json.Marshal(v)
		got, err := Append(nil, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Append(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello <world> & \u2028")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

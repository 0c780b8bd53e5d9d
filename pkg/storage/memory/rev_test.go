package memory

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/storage"
)

func TestOnlyRevDiffers(t *testing.T) {
	tests := []struct {
		name   string
		a      string
		ra     uint64
		b      string
		rb     uint64
		expect bool
	}{
		{"same object", `{"rv":"12","x":1}`, 12, `{"rv":"9","x":1}`, 9, true},
		{"shared leading digits", `{"rv":"129"}`, 129, `{"rv":"123"}`, 123, true},
		{"one is a prefix of the other", `{"rv":"123"}`, 123, `{"rv":"12"}`, 12, true},
		{"other field differs", `{"rv":"12","x":2}`, 12, `{"rv":"9","x":1}`, 9, false},
		{"revision digits elsewhere too", `{"a":"12","rv":"12"}`, 12, `{"a":"9","rv":"9"}`, 9, false},
		{"digits not the revisions", `{"rv":"13"}`, 12, `{"rv":"9"}`, 9, false},
		{"equal lengths, other digits", `{"rv":"12","x":5}`, 12, `{"rv":"11","x":6}`, 11, false},
		{"empty", ``, 1, ``, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := onlyRevDiffers([]byte(tt.a), tt.ra, []byte(tt.b), tt.rb); got != tt.expect {
				t.Fatalf("onlyRevDiffers(%s, %d, %s, %d) = %v, want %v", tt.a, tt.ra, tt.b, tt.rb, got, tt.expect)
			}
		})
	}
}

// TestOnlyRevDiffersOnEncodings checks the property GuaranteedUpdate relies
// on: two JSON encodings of one object at different revisions always pass,
// whatever digits the object holds elsewhere.
func TestOnlyRevDiffersOnEncodings(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	codec := storage.JSONCodec{}
	revs := func() uint64 { return []uint64{1, 9, 10, 99, 100, 101, 123, 1234, r.Uint64N(1 << 40)}[r.IntN(9)] }
	for i := range 2000 {
		ra, rb := revs(), revs()
		if ra == rb {
			continue
		}
		obj := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(revs()), Namespace: strconv.FormatUint(ra, 10)},
			Data:       map[string]string{strconv.FormatUint(rb, 10): strconv.FormatUint(ra, 10) + strconv.FormatUint(rb, 10)},
		}
		enc := func(rev uint64) []byte {
			obj.ResourceVersion = strconv.FormatUint(rev, 10)
			data, err := codec.Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		a, b := enc(ra), enc(rb)
		if !onlyRevDiffers(a, ra, b, rb) {
			t.Fatalf("case %d: encodings at %d and %d not recognised:\n%s\n%s", i, ra, rb, a, b)
		}
		obj.Data["x"] = "y"
		if c := enc(ra); onlyRevDiffers(c, ra, b, rb) {
			t.Fatalf("case %d: changed object taken for the same:\n%s\n%s", i, c, b)
		}
	}
}

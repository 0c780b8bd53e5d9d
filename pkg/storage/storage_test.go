package storage_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/storage"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key           string
		isKey, prefix bool // valid as a key, valid as a prefix
	}{
		{"/pods/default/nginx", true, true},
		{"/nodes/n1", true, true},
		{"/pods", true, true},
		{"/pods/", false, true},
		{"/", false, true},
		{"", false, false},
		{"pods/default/nginx", false, false},
		{"/pods//nginx", false, false},
		{"/pods/default/..", false, false},
		{"/pods/../secrets", false, false},
		{"/pods/./x", false, false},
		{"/pods/x/", false, true},
		{"/pods/x//", false, false},
		{"/pods/a\x00b", false, false},
		{"/pods/\xff", false, false},
		{"/pods/a..b", true, true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			err := storage.ValidateKey(tc.key)
			if (err == nil) != tc.isKey {
				t.Errorf("ValidateKey(%q) = %v, want valid %v", tc.key, err, tc.isKey)
			}
			if err != nil && !storage.HasCode(err, storage.ErrCodeInvalidRequest) {
				t.Errorf("ValidateKey error %v is not ErrCodeInvalidRequest", err)
			}
			if err := storage.ValidatePrefix(tc.key); (err == nil) != tc.prefix {
				t.Errorf("ValidatePrefix(%q) = %v, want valid %v", tc.key, err, tc.prefix)
			}
		})
	}
}

func TestKeyPrefix(t *testing.T) {
	for _, tc := range []struct {
		key       string
		recursive bool
		want      string
	}{
		{"/pods/default", true, "/pods/default/"},
		{"/pods/default/", true, "/pods/default/"},
		{"/", true, "/"},
		{"/pods/default/x", false, "/pods/default/x"},
	} {
		if got := storage.KeyPrefix(tc.key, tc.recursive); got != tc.want {
			t.Errorf("KeyPrefix(%q, %v) = %q, want %q", tc.key, tc.recursive, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"/pods/", "/pods0"},
		{"a\xff", "b"},
		{"\xff\xff", ""},
		{"", ""},
	} {
		if got := storage.PrefixEnd(tc.in); got != tc.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"42", 42, true}, {"18446744073709551615", 1<<64 - 1, true},
		{"-1", 0, false}, {"abc", 0, false}, {"1.5", 0, false}, {"18446744073709551616", 0, false}, {" 1", 0, false},
	} {
		got, err := storage.ParseResourceVersion(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseResourceVersion(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.in) {
			t.Errorf("error %q does not name the bad value", err)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := storage.SetObjectResourceVersion(cm, 17); err != nil || cm.ResourceVersion != "17" {
		t.Fatalf("SetObjectResourceVersion: %v, %q", err, cm.ResourceVersion)
	}
	if rv, err := storage.ObjectResourceVersion(cm); err != nil || rv != 17 {
		t.Errorf("ObjectResourceVersion = %d, %v", rv, err)
	}
	if err := storage.SetObjectResourceVersion(cm, 0); err != nil || cm.ResourceVersion != "" {
		t.Errorf("SetObjectResourceVersion(0) left %q", cm.ResourceVersion)
	}
	l := &corev1.ConfigMapList{}
	if err := storage.SetListResourceVersion(l, 9, "tok"); err != nil || l.ResourceVersion != "9" || l.Continue != "tok" {
		t.Errorf("SetListResourceVersion: %v %+v", err, l.ListMeta)
	}
}

func TestJSONCodec(t *testing.T) {
	c := storage.JSONCodec{}
	in := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "3", Labels: map[string]string{"x": "y"}},
		Data:       map[string]string{"k": "v"},
	}
	data, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	// Decoding into a used object leaves nothing of it behind.
	out := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"old": "1"}}, Data: map[string]string{"stale": "1"}}
	if err := c.Decode(data, out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	// TypeMeta is kept as the caller set it, empty included.
	noType := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	data, _ = c.Encode(noType)
	if strings.Contains(string(data), "apiVersion") {
		t.Errorf("Encode added TypeMeta: %s", data)
	}
	if err := c.Decode([]byte("{bad"), &corev1.ConfigMap{}); err == nil {
		t.Error("Decode of bad JSON succeeded")
	}
	var nilCM *corev1.ConfigMap
	if err := c.Decode(data, nilCM); err == nil {
		t.Error("Decode into a nil pointer succeeded")
	}
}

func TestContinueToken(t *testing.T) {
	tok, err := storage.EncodeContinue("/pods/ns/b\x00", "/pods/", 42)
	if err != nil {
		t.Fatal(err)
	}
	key, rev, err := storage.DecodeContinue(tok, "/pods/")
	if err != nil || key != "/pods/ns/b\x00" || rev != 42 {
		t.Fatalf("DecodeContinue = %q, %d, %v", key, rev, err)
	}
	for _, bad := range []struct{ key, prefix string }{{"/pods/", "/pods/"}, {"/other/x", "/pods/"}} {
		if _, err := storage.EncodeContinue(bad.key, bad.prefix, 1); err == nil {
			t.Errorf("EncodeContinue(%q, %q) succeeded", bad.key, bad.prefix)
		}
	}
	if _, err := storage.EncodeContinue("/pods/x", "/pods/", 0); err == nil {
		t.Error("EncodeContinue at revision 0 succeeded")
	}
	for _, tc := range []struct{ name, token, says string }{
		{"empty", "", "empty"},
		{"not base64", "%%%", "base64"},
		{"not json", "bm90IGpzb24", "JSON"},
		{"wrong version", "eyJ2IjoieCIsInJ2IjoyLCJzdGFydCI6ImEifQ", "version"},
		{"no revision", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJzdGFydCI6ImEifQ", "resource version"},
		{"escapes", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiIuLi9vdGhlciJ9", ".."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := storage.DecodeContinue(tc.token, "/pods/")
			if !storage.HasCode(err, storage.ErrCodeInvalidContinue) {
				t.Fatalf("DecodeContinue(%q) = %v, want ErrCodeInvalidContinue", tc.token, err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not mention %q", err, tc.says)
			}
		})
	}
}

func TestPredicate(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	for _, tc := range []struct {
		name string
		p    storage.Predicate
		want bool
	}{
		{"empty", storage.Predicate{}, true},
		{"label", storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"app": "web"})}, true},
		{"label miss", storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"app": "db"})}, false},
		{"name", storage.Predicate{Field: fields.OneTermEqualSelector("metadata.name", "a")}, true},
		{"namespace miss", storage.Predicate{Field: fields.OneTermEqualSelector("metadata.namespace", "other")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := tc.p.Matches(cm)
			if err != nil || got != tc.want {
				t.Errorf("Matches = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	p := storage.Predicate{Field: fields.OneTermEqualSelector("spec.nodeName", "n")}
	if err := p.Validate(); err == nil {
		t.Error("a field selector beyond name and namespace without GetAttrs validated")
	}
}

func TestPreconditions(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "5"}}
	uid, other := types.UID("u1"), types.UID("u2")
	rv, stale := "5", "4"
	var nilP *storage.Preconditions
	for _, tc := range []struct {
		name string
		p    *storage.Preconditions
		code storage.ErrorCode
	}{
		{"nil", nilP, 0},
		{"match", &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, 0},
		{"uid", &storage.Preconditions{UID: &other}, storage.ErrCodeInvalidObj},
		{"rv", &storage.Preconditions{ResourceVersion: &stale}, storage.ErrCodeResourceVersionConflicts},
	} {
		err := tc.p.Check("/k", cm)
		if tc.code == 0 && err != nil || tc.code != 0 && !storage.HasCode(err, tc.code) {
			t.Errorf("%s: Check = %v, want code %d", tc.name, err, tc.code)
		}
	}
}

func TestErrors(t *testing.T) {
	err := error(storage.NewError(storage.ErrCodeExpired, "/k", 7, "gone"))
	wrapped := errors.Join(errors.New("context"), err)
	if !storage.IsExpired(wrapped) || storage.IsNotFound(wrapped) {
		t.Errorf("code helpers on a wrapped error")
	}
	if got := err.Error(); !strings.Contains(got, "/k") || !strings.Contains(got, "7") || !strings.Contains(got, "gone") {
		t.Errorf("Error() = %q", got)
	}
}

// FuzzDecodeContinue checks that no token makes DecodeContinue panic or
// return a key outside the listed prefix, and that what it accepts
// encodes back to a token that decodes the same.
func FuzzDecodeContinue(f *testing.F) {
	for _, s := range []string{"", "%%", "bm90IGpzb24", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiIuLi9vdGhlciJ9"} {
		f.Add(s)
	}
	if tok, err := storage.EncodeContinue("/pods/ns/a\x00", "/pods/", 3); err == nil {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, token string) {
		key, rev, err := storage.DecodeContinue(token, "/pods/")
		if err != nil {
			if !storage.HasCode(err, storage.ErrCodeInvalidContinue) {
				t.Fatalf("error %v is not ErrCodeInvalidContinue", err)
			}
			return
		}
		if !strings.HasPrefix(key, "/pods/") || len(key) == len("/pods/") || rev == 0 {
			t.Fatalf("accepted %q as key %q at %d", token, key, rev)
		}
		for seg := range strings.SplitSeq(key, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("accepted key %q with a %q segment", key, seg)
			}
		}
		again, err := storage.EncodeContinue(key, "/pods/", rev)
		if err != nil {
			t.Fatalf("re-encode %q: %v", key, err)
		}
		key2, rev2, err := storage.DecodeContinue(again, "/pods/")
		if err != nil || key2 != key || rev2 != rev {
			t.Fatalf("round trip of %q at %d gave %q at %d, %v", key, rev, key2, rev2, err)
		}
	})
}

// FuzzValidateKey checks that accepted keys are clean paths and that a
// valid key is a valid prefix and a prefix of itself only at segment
// boundaries.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"/pods/default/nginx", "", "/", "/a//b", "/a/../b", "/a/", "a", "/a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := storage.ValidateKey(key); err == nil {
			if !strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "//") ||
				strings.Contains(key, "/../") || strings.HasSuffix(key, "/..") || strings.Contains(key, "/./") ||
				strings.HasSuffix(key, "/.") || strings.ContainsRune(key, 0) {
				t.Fatalf("ValidateKey accepted %q", key)
			}
			if err := storage.ValidatePrefix(key); err != nil {
				t.Fatalf("valid key %q is not a valid prefix: %v", key, err)
			}
			p := storage.KeyPrefix(key, true)
			if strings.HasPrefix(key+"x", p) {
				t.Fatalf("prefix %q of %q covers the sibling %q", p, key, key+"x")
			}
		} else if !storage.HasCode(err, storage.ErrCodeInvalidRequest) {
			t.Fatalf("error %v is not ErrCodeInvalidRequest", err)
		}
		if err := storage.ValidatePrefix(key); err == nil {
			end := storage.PrefixEnd(storage.KeyPrefix(key, true))
			if end != "" && end <= storage.KeyPrefix(key, true) {
				t.Fatalf("PrefixEnd(%q) = %q is not after it", key, end)
			}
		}
	})
}

package authentication

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokenFile(t *testing.T) {
	const file = "# comment\n" +
		"tok1,alice,uid-1,\"dev,ops\"\n" +
		"tok2,bob,uid-2\n" +
		"tok3, carol , uid-3, \"a, b,\"\n"
	tf, err := ParseTokenFile(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token string
		want  *User
	}{
		{"tok1", &User{Name: "alice", UID: "uid-1", Groups: []string{"dev", "ops"}}},
		{"tok2", &User{Name: "bob", UID: "uid-2"}},
		{"tok3", &User{Name: "carol", UID: "uid-3", Groups: []string{"a", "b"}}},
		{"tok4", nil},
		{"", nil},
	} {
		u, ok, err := tf.AuthenticateToken(context.Background(), tc.token)
		if err != nil || ok != (tc.want != nil) {
			t.Fatalf("%q: ok=%v err=%v", tc.token, ok, err)
		}
		if diff := cmp.Diff(tc.want, u); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.token, diff)
		}
	}
	// A returned user is the caller's to change.
	u, _, _ := tf.AuthenticateToken(context.Background(), "tok1")
	u.Groups[0] = "system:masters"
	if u2, _, _ := tf.AuthenticateToken(context.Background(), "tok1"); u2.Groups[0] != "dev" {
		t.Fatal("changing a returned user changed the token file")
	}
}

func TestTokenFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"fewer than three columns", "tok,alice\n", "line 1: want at least 3 columns (token, user name, user uid), found 2"},
		{"empty token", "ok,alice,1\n ,bob,2\n", "line 2: empty token"},
		{"empty user", "tok,,1\n", "line 1: empty user name"},
		{"duplicate token", "tok,alice,1\ntok,bob,2\n", "line 2: token listed twice"},
		{"bad quoting", "tok,alice,1,\"dev\n", "extraneous or missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokenFile(strings.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("\xef\xbb\xbftok,alice,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tf.AuthenticateToken(context.Background(), "tok"); !ok {
		t.Fatal("token after a byte order mark not found")
	}
	if _, err := LoadTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file: no error")
	}
}

package authentication

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnion(t *testing.T) {
	none := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, nil })
	fail := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, errors.New("bad token") })
	alice := AuthenticatorFunc(func(*http.Request) (*User, bool, error) {
		return &User{Name: "alice", Groups: []string{"dev"}}, true, nil
	})
	anon := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return AnonymousUser(), true, nil })
	for _, tc := range []struct {
		name    string
		authns  []Authenticator
		want    *User
		wantErr bool
	}{
		{name: "none handles the request", authns: []Authenticator{none, nil, none}},
		{name: "first that identifies the sender wins and gets system:authenticated",
			authns: []Authenticator{none, alice, fail}, want: &User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}},
		{name: "a failure does not stop the others", authns: []Authenticator{fail, alice},
			want: &User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}},
		{name: "a failure and no success is an error", authns: []Authenticator{none, fail}, wantErr: true},
		{name: "the anonymous user is not made authenticated", authns: []Authenticator{anon},
			want: &User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := Union(tc.authns...).AuthenticateRequest(httptest.NewRequest(http.MethodGet, "/", nil))
			if (err != nil) != tc.wantErr || ok != (tc.want != nil) {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if diff := cmp.Diff(tc.want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithAuthenticatedGroupKeepsTheOriginal(t *testing.T) {
	u := &User{Name: "bob", Groups: make([]string, 1, 4)}
	got := WithAuthenticatedGroup(u)
	if len(u.Groups) != 1 || len(got.Groups) != 2 || got.Groups[1] != AllAuthenticated {
		t.Fatalf("original %v, result %v", u.Groups, got.Groups)
	}
	for _, g := range []string{AllAuthenticated, AllUnauthenticated} {
		in := &User{Name: "x", Groups: []string{g}}
		if WithAuthenticatedGroup(in) != in {
			t.Errorf("user already in %s changed", g)
		}
	}
}

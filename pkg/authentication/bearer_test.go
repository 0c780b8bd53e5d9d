package authentication

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBearer(t *testing.T) {
	tokens := TokenAuthenticatorFunc(func(_ context.Context, tok string) (*User, bool, error) {
		if tok == "good" {
			return &User{Name: "alice"}, true, nil
		}
		return nil, false, nil
	})
	a := Bearer(tokens)
	for _, tc := range []struct {
		name    string
		headers []string // Authorization values; nil sends none
		wantOK  bool
		wantErr string
	}{
		{name: "no Authorization header is not handled"},
		{name: "Bearer token", headers: []string{"Bearer good"}, wantOK: true},
		{name: "scheme is case-insensitive", headers: []string{"bEaReR good"}, wantOK: true},
		{name: "surrounding spaces are trimmed", headers: []string{"  Bearer good  "}, wantOK: true},
		{name: "unknown token is invalid", headers: []string{"Bearer bad"}, wantErr: "invalid bearer token"},
		{name: "empty header", headers: []string{""}, wantErr: "empty Authorization header"},
		{name: "scheme without token", headers: []string{"Bearer"}, wantErr: "empty bearer token"},
		{name: "scheme and space without token", headers: []string{"Bearer "}, wantErr: "empty bearer token"},
		{name: "two spaces before the token", headers: []string{"Bearer  good"}, wantErr: "malformed"},
		{name: "token with a space inside", headers: []string{"Bearer go od"}, wantErr: "malformed"},
		{name: "basic scheme", headers: []string{"Basic YWxpY2U6cGFzcw=="}, wantErr: "malformed"},
		{name: "token without scheme", headers: []string{"good"}, wantErr: "malformed"},
		{name: "two Authorization headers", headers: []string{"Bearer good", "Bearer good"}, wantErr: "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			for _, h := range tc.headers {
				r.Header.Add("Authorization", h)
			}
			u, ok, err := a.AuthenticateRequest(r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("got ok=%v err=%v, want error with %q", ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK {
				t.Fatalf("got ok=%v err=%v, want ok=%v", ok, err, tc.wantOK)
			}
			if ok && u.Name != "alice" {
				t.Errorf("user %q, want alice", u.Name)
			}
		})
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer x", "bearer  x", "Basic a", "", " ", "Bearer\tx", "Bearer x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", h)
		tok, present, err := BearerToken(r)
		if !present {
			t.Fatal("a set header is always present")
		}
		if err == nil && (tok == "" || strings.ContainsAny(tok, " \t")) {
			t.Fatalf("token %q accepted from %q", tok, h)
		}
	})
}

package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rotatingTokens is a TokenSource handing out "t1", then "t2", ... each
// time its current token is invalidated; it records the invalidations.
type rotatingTokens struct {
	mu          sync.Mutex
	n           int
	invalidated []string
	err         error // returned by Token when set
}

func (s *rotatingTokens) Token(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	if s.n == 0 {
		s.n = 1
	}
	return "t" + string(rune('0'+s.n)), nil
}

func (s *rotatingTokens) InvalidateToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalidated = append(s.invalidated, tok)
	if tok == "t"+string(rune('0'+s.n)) {
		s.n++
	}
}

// authorizations returns the Authorization header of every request rec saw.
func (rec *recorder) authorizations() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, r := range rec.reqs {
		out = append(out, r.Header.Get("Authorization"))
	}
	return out
}

// acceptToken answers 401 unless the request carries "Bearer "+good.
func acceptToken(good string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+good {
			writeStatus(w, apierrors.NewUnauthorized("bad token"))
			return
		}
		writeJSON(w, http.StatusCreated, testPod("ns1", "p1"))
	}
}

func TestTokenSource(t *testing.T) {
	tests := []struct {
		name      string
		good      string // the token the server accepts
		source    func() TokenSource
		wantAuth  []string
		wantErr   func(error) bool
		wantInval []string
	}{
		{
			name: "every request asks the source", good: "t1",
			source:   func() TokenSource { return &rotatingTokens{} },
			wantAuth: []string{"Bearer t1"},
		},
		{
			name: "a 401 invalidates the token and retries once with the next", good: "t2",
			source:    func() TokenSource { return &rotatingTokens{} },
			wantAuth:  []string{"Bearer t1", "Bearer t2"},
			wantInval: []string{"t1"},
		},
		{
			name: "the retry's 401 is returned", good: "t9",
			source:    func() TokenSource { return &rotatingTokens{} },
			wantAuth:  []string{"Bearer t1", "Bearer t2"},
			wantErr:   apierrors.IsUnauthorized,
			wantInval: []string{"t1"},
		},
		{
			name: "a source that can not invalidate is not retried", good: "other",
			source: func() TokenSource {
				return TokenSourceFunc(func(context.Context) (string, error) { return "fixed", nil })
			},
			wantAuth: []string{"Bearer fixed"},
			wantErr:  apierrors.IsUnauthorized,
		},
		{
			name: "a failing source fails the request unsent", good: "t1",
			source:  func() TokenSource { return &rotatingTokens{err: errors.New("issuer down")} },
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "issuer down") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.source()
			rec, c := newServer(t, acceptToken(tt.good), func(cfg *Config) { cfg.BearerToken = ""; cfg.TokenSource = src })
			_, err := NewResource(c, Pods).Namespace("ns1").Create(context.Background(), testPod("ns1", "p1"), metav1.CreateOptions{})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Create: %v", err)
			case tt.wantErr != nil && (err == nil || !tt.wantErr(err)):
				t.Fatalf("Create: error %v, want another", err)
			}
			if diff := cmp.Diff(tt.wantAuth, rec.authorizations()); diff != "" {
				t.Errorf("Authorization headers (-want +got):\n%s", diff)
			}
			if rt, ok := src.(*rotatingTokens); ok {
				if diff := cmp.Diff(tt.wantInval, rt.invalidated); diff != "" {
					t.Errorf("invalidated (-want +got):\n%s", diff)
				}
			}
			if rec := rec.reqs; len(rec) == 2 && rec[0].Body != rec[1].Body {
				t.Errorf("the retry sent another body: %q then %q", rec[0].Body, rec[1].Body)
			}
		})
	}
}

// TestTokenSourceWatch checks that a watch also gets its token from the
// source and is re-sent after a 401.
func TestTokenSourceWatch(t *testing.T) {
	src := &rotatingTokens{}
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t2" {
			writeStatus(w, apierrors.NewUnauthorized("bad token"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
	}, func(cfg *Config) { cfg.BearerToken = ""; cfg.TokenSource = src })
	w, err := NewResource(c, Pods).Namespace("ns1").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	w.Stop()
	if diff := cmp.Diff([]string{"Bearer t1", "Bearer t2"}, rec.authorizations()); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
}

func TestTokenSourceExcludesBearerToken(t *testing.T) {
	_, err := New(Config{Host: "https://h", BearerToken: "x", TokenSource: &rotatingTokens{}})
	if err == nil || !strings.Contains(err.Error(), "exclude") {
		t.Fatalf("New: %v, want BearerToken and TokenSource refused together", err)
	}
}

func TestWithoutCredentials(t *testing.T) {
	hc := &http.Client{}
	cfg := Config{
		Host: "https://h:6443", CAData: []byte("ca"), CAFile: "ca.pem", TLSServerName: "kplane", Insecure: true,
		CertData: []byte("cert"), KeyData: []byte("key"), BearerToken: "tok", TokenSource: &rotatingTokens{},
		UserAgent: "ua", QPS: 5, Burst: 7, HTTPClient: hc, MaxRetries: 3,
	}
	got := cfg.WithoutCredentials()
	if got.CertData != nil || got.KeyData != nil || got.BearerToken != "" || got.TokenSource != nil {
		t.Errorf("credentials kept: cert %q key %q token %q source %v", got.CertData, got.KeyData, got.BearerToken, got.TokenSource)
	}
	if got.Host != cfg.Host || string(got.CAData) != "ca" || got.CAFile != cfg.CAFile || got.TLSServerName != cfg.TLSServerName ||
		!got.Insecure || got.UserAgent != "ua" || got.QPS != 5 || got.Burst != 7 || got.HTTPClient != hc || got.MaxRetries != 3 {
		t.Errorf("connection settings changed: %+v", got)
	}
	if cfg.CertData == nil || cfg.BearerToken == "" {
		t.Error("the original Config was changed")
	}
}

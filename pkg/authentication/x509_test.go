package authentication

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"
)

func TestX509(t *testing.T) {
	ca := newTestCA(t, "kplane-ca")
	other := newTestCA(t, "another-ca")
	valid := func(c *testCA, cn string, orgs ...string) *x509.Certificate {
		return c.clientCert(t, cn, orgs, testNow.Add(-time.Minute), testNow.Add(time.Hour))
	}
	a, err := NewX509(X509Config{ClientCA: ca.pool, Clock: testclock.NewFakePassiveClock(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		chain   []*x509.Certificate
		want    *User
		ok      bool
		wantErr string
	}{
		{name: "no certificate is not handled"},
		{name: "common name is the user, organizations the groups",
			chain: []*x509.Certificate{valid(ca, "alice", "dev", "ops")}, ok: true,
			want: &User{Name: "alice", Groups: []string{"dev", "ops"}}},
		{name: "certificate signed by another CA is refused",
			chain: []*x509.Certificate{valid(other, "mallory", "system:masters")}, wantErr: "certificate signed by unknown authority"},
		{name: "expired certificate is refused",
			chain:   []*x509.Certificate{ca.clientCert(t, "alice", nil, testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))},
			wantErr: "expired"},
		{name: "certificate not valid yet is refused",
			chain:   []*x509.Certificate{ca.clientCert(t, "alice", nil, testNow.Add(time.Hour), testNow.Add(2*time.Hour))},
			wantErr: "not yet valid"},
		{name: "certificate without the clientAuth usage is refused",
			chain:   []*x509.Certificate{ca.clientCert(t, "alice", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour), x509.ExtKeyUsageServerAuth)},
			wantErr: "incompatible key usage"},
		{name: "certificate without common name is refused",
			chain: []*x509.Certificate{valid(ca, "", "system:masters")}, wantErr: "no common name"},
		{name: "certificate without organizations has no groups",
			chain: []*x509.Certificate{valid(ca, "bob")}, ok: true, want: &User{Name: "bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := a.AuthenticateRequest(requestWithCert(tc.chain...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("got ok=%v err=%v, want an error with %q", ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok {
				t.Fatalf("got ok=%v err=%v, want ok=%v", ok, err, tc.ok)
			}
			if diff := cmp.Diff(tc.want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func TestX509RequiresClientCA(t *testing.T) {
	if _, err := NewX509(X509Config{}); err == nil {
		t.Fatal("NewX509 without ClientCA: no error")
	}
}

func TestX509RemembersVerifiedChainsOnlyWhileValid(t *testing.T) {
	ca := newTestCA(t, "kplane-ca")
	clk := testclock.NewFakePassiveClock(testNow)
	a, err := NewX509(X509Config{ClientCA: ca.pool, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.clientCert(t, "alice", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour))
	for range 2 {
		if _, ok, err := a.AuthenticateRequest(requestWithCert(cert)); !ok || err != nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
	clk.SetTime(testNow.Add(time.Hour + time.Second))
	if _, _, err := a.AuthenticateRequest(requestWithCert(cert)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a remembered chain past its expiry: %v", err)
	}
	// The same leaf sent with another (bogus) intermediate is verified anew.
	clk.SetTime(testNow)
	other := newTestCA(t, "other")
	if _, ok, err := a.AuthenticateRequest(requestWithCert(cert, other.cert)); !ok || err != nil {
		t.Fatalf("with an extra intermediate: ok=%v err=%v", ok, err)
	}
	if len(a.verified.entries) != 1 {
		t.Errorf("%d chains remembered, want 1 (the expired one is dropped)", len(a.verified.entries))
	}
}

package authentication

import (
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"
)

func TestRequestHeader(t *testing.T) {
	proxyCA := newTestCA(t, "front-proxy-ca")
	clientCA := newTestCA(t, "kplane-ca")
	valid := func(c *testCA, cn string) *x509.Certificate {
		return c.clientCert(t, cn, nil, testNow.Add(-time.Minute), testNow.Add(time.Hour))
	}
	proxy := valid(proxyCA, "front-proxy-client")
	a, err := NewRequestHeader(RequestHeaderConfig{
		ClientCA:            proxyCA.pool,
		AllowedNames:        []string{"front-proxy-client", "aggregator"},
		UsernameHeaders:     []string{"X-Remote-User", "x-other-user"},
		UIDHeaders:          []string{"X-Remote-Uid"},
		GroupHeaders:        []string{"X-Remote-Group", "X-Other-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-", "x-other-extra-"},
		Clock:               testclock.NewFakePassiveClock(testNow),
	})
	if err != nil {
		t.Fatal(err)
	}
	identity := http.Header{
		"X-Remote-User":         {"alice"},
		"X-Remote-Uid":          {"uid-1"},
		"X-Remote-Group":        {"dev", "ops"},
		"X-Other-Group":         {"qa"},
		"X-Remote-Extra-Scopes": {"read", "write"},
	}
	for _, tc := range []struct {
		name    string
		chain   []*x509.Certificate
		header  http.Header
		want    *User
		wantErr string
		// left are the headers the request keeps afterwards.
		left http.Header
	}{
		{name: "proxy certificate and headers give the user", chain: []*x509.Certificate{proxy}, header: identity,
			want: &User{Name: "alice", UID: "uid-1", Groups: []string{"dev", "ops", "qa"}, Extra: map[string][]string{"scopes": {"read", "write"}}}},
		{name: "no certificate is not handled", header: identity, left: identity},
		{name: "common name not allowed is refused", chain: []*x509.Certificate{valid(proxyCA, "mallory")}, header: identity,
			wantErr: "not one of the allowed names", left: identity},
		{name: "proxy certificate of another CA is refused", chain: []*x509.Certificate{valid(clientCA, "front-proxy-client")}, header: identity,
			wantErr: "certificate signed by unknown authority", left: identity},
		{name: "expired proxy certificate is refused",
			chain:  []*x509.Certificate{proxyCA.clientCert(t, "front-proxy-client", nil, testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))},
			header: identity, wantErr: "expired", left: identity},
		{name: "proxy certificate without the clientAuth usage is refused",
			chain:  []*x509.Certificate{proxyCA.clientCert(t, "front-proxy-client", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour), x509.ExtKeyUsageServerAuth)},
			header: identity, wantErr: "incompatible key usage", left: identity},
		{name: "proxy certificate without a username header is not handled", chain: []*x509.Certificate{proxy},
			header: http.Header{"X-Remote-Group": {"system:masters"}, "Accept": {"*/*"}},
			left:   http.Header{"X-Remote-Group": {"system:masters"}, "Accept": {"*/*"}}},
		{name: "an empty username header is skipped for the next", chain: []*x509.Certificate{proxy},
			header: http.Header{"X-Remote-User": {""}, "X-Other-User": {"bob"}},
			want:   &User{Name: "bob"}},
		{name: "empty group values are dropped", chain: []*x509.Certificate{proxy},
			header: http.Header{"X-Remote-User": {"bob"}, "X-Remote-Group": {"", "dev"}},
			want:   &User{Name: "bob", Groups: []string{"dev"}}},
		{name: "extra keys are lowercased and percent-decoded", chain: []*x509.Certificate{proxy},
			header: http.Header{"X-Remote-User": {"bob"}, "X-Remote-Extra-Acme.com%2Fproject": {"a"}, "X-Other-Extra-Acme.com%2fproject": {"b"}, "X-Remote-Extra-Bad%zz": {"c"}},
			want:   &User{Name: "bob", Extra: map[string][]string{"acme.com/project": {"a", "b"}, "bad%zz": {"c"}}}},
		{name: "other headers are kept after success", chain: []*x509.Certificate{proxy},
			header: http.Header{"X-Remote-User": {"bob"}, "Accept": {"*/*"}, "X-Remote-Extras": {"x"}},
			want:   &User{Name: "bob"}, left: http.Header{"Accept": {"*/*"}, "X-Remote-Extras": {"x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := requestWithCert(tc.chain...)
			r.Header = tc.header.Clone()
			u, ok, err := a.AuthenticateRequest(r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("got ok=%v err=%v, want an error with %q", ok, err, tc.wantErr)
				}
			} else if err != nil || ok != (tc.want != nil) {
				t.Fatalf("got ok=%v err=%v, want ok=%v", ok, err, tc.want != nil)
			}
			if diff := cmp.Diff(tc.want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			left := tc.left
			if left == nil {
				left = http.Header{}
			}
			if diff := cmp.Diff(left, r.Header); diff != "" {
				t.Errorf("headers left on the request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestHeaderAnyNameWhenNoneAllowed(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	a, err := NewRequestHeader(RequestHeaderConfig{ClientCA: ca.pool, UsernameHeaders: []string{"X-Remote-User"}, Clock: testclock.NewFakePassiveClock(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	r := requestWithCert(ca.clientCert(t, "whoever", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour)))
	r.Header.Set("x-remote-user", "alice")
	u, ok, err := a.AuthenticateRequest(r)
	if err != nil || !ok || u.Name != "alice" {
		t.Fatalf("got %+v ok=%v err=%v, want alice", u, ok, err)
	}
}

// TestRequestHeaderInUnion checks the order kube-apiserver uses: the
// request-header authenticator first, then X509 of the client CA.
func TestRequestHeaderInUnion(t *testing.T) {
	proxyCA := newTestCA(t, "front-proxy-ca")
	clientCA := newTestCA(t, "kplane-ca")
	clk := testclock.NewFakePassiveClock(testNow)
	rh, err := NewRequestHeader(RequestHeaderConfig{ClientCA: proxyCA.pool, UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewX509(X509Config{ClientCA: clientCA.pool, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	union := Union(rh, x)
	for _, tc := range []struct {
		name    string
		cert    *x509.Certificate
		want    string
		wantErr bool
	}{
		{name: "proxy certificate: the header's user", cert: proxyCA.clientCert(t, "front-proxy-client", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour)), want: "alice"},
		{name: "client certificate: its common name, headers ignored", cert: clientCA.clientCert(t, "bob", nil, testNow.Add(-time.Minute), testNow.Add(time.Hour)), want: "bob"},
		{name: "expired proxy certificate: refused", cert: proxyCA.clientCert(t, "front-proxy-client", nil, testNow.Add(-2*time.Hour), testNow.Add(-time.Hour)), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := requestWithCert(tc.cert)
			r.Header.Set("X-Remote-User", "alice")
			r.Header.Set("X-Remote-Group", "system:masters")
			u, ok, err := union.AuthenticateRequest(r)
			if tc.wantErr {
				if err == nil || ok {
					t.Fatalf("got %+v ok=%v err=%v, want an error", u, ok, err)
				}
				return
			}
			if err != nil || !ok || u.Name != tc.want {
				t.Fatalf("got %+v ok=%v err=%v, want %s", u, ok, err, tc.want)
			}
		})
	}
}

func TestNewRequestHeaderValidates(t *testing.T) {
	pool := x509.NewCertPool()
	for _, tc := range []struct {
		name string
		cfg  RequestHeaderConfig
		want string
	}{
		{"no client CA", RequestHeaderConfig{UsernameHeaders: []string{"X-Remote-User"}}, "ClientCA is required"},
		{"no username header", RequestHeaderConfig{ClientCA: pool}, "username header is required"},
		{"blank group header", RequestHeaderConfig{ClientCA: pool, UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{" "}}, "empty group header"},
		{"blank extra prefix", RequestHeaderConfig{ClientCA: pool, UsernameHeaders: []string{"X-Remote-User"}, ExtraHeaderPrefixes: []string{""}}, "empty extra header prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewRequestHeader(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

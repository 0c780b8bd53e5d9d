package apiserver

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/kplane/kplane/pkg/authentication"
)

const whoamiPath = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

var whoamiBody = map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}

// whoami returns the user a SelfSubjectReview reports.
func (e *authEnv) whoami(c *http.Client, headers ...string) authenticationv1.UserInfo {
	e.t.Helper()
	r := e.do(c, "POST", whoamiPath, whoamiBody, headers...)
	if r.code != http.StatusCreated {
		e.t.Fatalf("whoami: %d %s", r.code, r.body)
	}
	var ssr authenticationv1.SelfSubjectReview
	r.decode(e.t, &ssr)
	return ssr.Status.UserInfo
}

func tokenFile(t testing.TB, csv string) *authentication.TokenFile {
	t.Helper()
	tf, err := authentication.ParseTokenFile(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestAuthentication(t *testing.T) {
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = authentication.Union(x, authentication.Bearer(tokenFile(t, "secret-token,carol,uid-c,\"dev,ops\"\n")))
	})
	other := newTestCA(t, "another-ca", authEnvStart)
	anon := e.client()
	pods := podPath("default", "")
	for _, tc := range []struct {
		name    string
		client  *http.Client
		path    string
		headers []string
		want    int
	}{
		{name: "request without credentials is unauthorized", client: anon, path: pods, want: 401},
		{name: "discovery without credentials is unauthorized", client: anon, path: "/api", want: 401},
		{name: "healthz is served to anonymous", client: anon, path: "/healthz", want: 200},
		{name: "livez checks are served to anonymous", client: anon, path: "/livez/ping", want: 200},
		{name: "readyz is served to anonymous", client: anon, path: "/readyz", want: 200},
		{name: "version is served to anonymous", client: anon, path: "/version", want: 200},
		{name: "a path merely starting like healthz is not", client: anon, path: "/healthzz", want: 401},
		{name: "metrics without credentials are unauthorized", client: anon, path: "/metrics", want: 401},
		{name: "metrics with a client certificate", client: e.client(e.user("alice")), path: "/metrics", want: 200},
		{name: "client certificate of the client CA", client: e.client(e.user("alice", "dev")), path: pods, want: 200},
		{name: "client certificate signed by another CA is unauthorized",
			client: e.client(other.issue(t, "alice", []string{"system:masters"}, authEnvStart.Add(-time.Minute), authEnvStart.Add(time.Hour))), path: pods, want: 401},
		{name: "expired client certificate is unauthorized",
			client: e.client(e.ca.issue(t, "alice", nil, authEnvStart.Add(-2*time.Hour), authEnvStart.Add(-time.Hour))), path: pods, want: 401},
		{name: "client certificate without common name is unauthorized", client: e.client(e.user("", "system:masters")), path: pods, want: 401},
		{name: "bad client certificate is unauthorized on healthz too",
			client: e.client(e.ca.issue(t, "alice", nil, authEnvStart.Add(-2*time.Hour), authEnvStart.Add(-time.Hour))), path: "/healthz", want: 401},
		{name: "token-file user", client: anon, path: pods, headers: []string{"Authorization", "Bearer secret-token"}, want: 200},
		{name: "unknown bearer token is unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer wrong"}, want: 401},
		{name: "unknown bearer token is unauthorized on healthz too", client: anon, path: "/healthz", headers: []string{"Authorization", "Bearer wrong"}, want: 401},
		{name: "malformed Authorization header is unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer  secret-token"}, want: 401},
		{name: "basic credentials are unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Basic Y2Fyb2w6eA=="}, want: 401},
		{name: "empty bearer token is unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer"}, want: 401},
		{name: "forged JWT is unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."}, want: 401},
		{name: "binary garbage in the header is unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer \xff\xfe\x80"}, want: 401},
		{name: "two Authorization headers are unauthorized", client: anon, path: pods, headers: []string{"Authorization", "Bearer secret-token", "Authorization", "Bearer secret-token"}, want: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.client, "GET", tc.path, nil, tc.headers...)
			if r.code != tc.want {
				t.Fatalf("got %d, want %d: %s", r.code, tc.want, r.body)
			}
			if tc.want == 401 {
				st := r.status(t)
				want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: 401}
				if diff := cmp.Diff(want, st); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
		})
	}
	t.Run("nothing is stored by an unauthorized write", func(t *testing.T) {
		r := e.do(anon, "POST", pods, testPod("intruder", nil), "Authorization", "Bearer wrong")
		r.expect(t, 401, metav1.StatusReasonUnauthorized)
		r = e.do(e.client(e.user("alice")), "GET", podPath("default", "intruder"), nil)
		r.expect(t, 404, metav1.StatusReasonNotFound)
	})
}

func TestSelfSubjectReviewReportsTheAuthenticatedUser(t *testing.T) {
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = authentication.Union(x, authentication.Bearer(tokenFile(t, "tok,carol,uid-c,\"dev,ops\"\n")))
		cfg.Anonymous.Paths = []string{whoamiPath}
	})
	for _, tc := range []struct {
		name    string
		client  *http.Client
		headers []string
		want    authenticationv1.UserInfo
	}{
		{"client certificate", e.client(e.user("alice", "dev")), nil,
			authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", "system:authenticated"}}},
		{"token-file user", e.client(), []string{"Authorization", "Bearer tok"},
			authenticationv1.UserInfo{Username: "carol", UID: "uid-c", Groups: []string{"dev", "ops", "system:authenticated"}}},
		{"anonymous where anonymous is allowed", e.client(), nil,
			authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, e.whoami(tc.client, tc.headers...)); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnonymousConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		anon AnonymousConfig
		path string
		want int
	}{
		{"default: healthz", AnonymousConfig{}, "/healthz", 200},
		{"default: pods refused", AnonymousConfig{}, "/api/v1/pods", 401},
		{"disabled: healthz refused (--anonymous-auth=false)", AnonymousConfig{Disabled: true}, "/healthz", 401},
		{"disabled: version refused", AnonymousConfig{Disabled: true}, "/version", 401},
		{"every path (kube-apiserver's unconditioned anonymous auth)", AnonymousConfig{Paths: []string{"*"}}, "/api/v1/pods", 200},
		{"listed prefix covers subpaths", AnonymousConfig{Paths: []string{"/api/*"}}, "/api/v1/pods", 200},
		{"exact entry does not cover subpaths", AnonymousConfig{Paths: []string{"/api"}}, "/api/v1/pods", 401},
		{"empty list allows nothing", AnonymousConfig{Paths: []string{}}, "/healthz", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
				cfg.Authenticator = x
				cfg.Anonymous = tc.anon
			})
			if r := e.do(e.client(), "GET", tc.path, nil); r.code != tc.want {
				t.Fatalf("got %d, want %d: %s", r.code, tc.want, r.body)
			}
		})
	}
}

func TestAuthenticationOffByDefault(t *testing.T) {
	// The zero Config serves everyone, as before authentication existed.
	e := newAuthEnv(t, nil)
	if r := e.do(e.client(), "GET", podPath("default", ""), nil); r.code != 200 {
		t.Fatalf("anonymous list: %d %s", r.code, r.body)
	}
	anon := authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	// This listener only requests certificates: unverified, they name nobody.
	if diff := cmp.Diff(anon, e.whoami(e.client(e.user("alice")))); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	// A certificate the listener verified names the caller.
	v := newAuthEnvTLS(t, tls.VerifyClientCertIfGiven, nil)
	want := authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", "system:authenticated"}}
	// The listener verifies at the real time, not the env's fake one.
	cert := v.ca.issue(t, "alice", []string{"dev"}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if diff := cmp.Diff(want, v.whoami(v.client(cert))); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
}

package apiserver

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
)

const testIssuerURL = "https://kplane.example:6443"

// newTokenEnv is an authEnv issuing ServiceAccount tokens, where the
// client certificate "admin" may do anything (no authorizer).
func newTokenEnv(t testing.TB, mutate ...func(*ServiceAccountIssuerConfig)) (*authEnv, *authentication.TokenSigner) {
	t.Helper()
	signer, err := authentication.GenerateTokenSigner()
	if err != nil {
		t.Fatal(err)
	}
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.ServiceAccountIssuer = ServiceAccountIssuerConfig{Issuer: testIssuerURL, Signer: signer}
		for _, m := range mutate {
			m(&cfg.ServiceAccountIssuer)
		}
	})
	return e, signer
}

func saPath(ns, name string) string {
	p := "/api/v1/namespaces/" + ns + "/serviceaccounts"
	if name != "" {
		p += "/" + name
	}
	return p
}

func tokenRequest(spec authenticationv1.TokenRequestSpec) map[string]any {
	return map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
}

// requestToken creates a token for the ServiceAccount ns/name as admin.
func (e *authEnv) requestToken(admin *http.Client, ns, name string, spec authenticationv1.TokenRequestSpec) authenticationv1.TokenRequest {
	e.t.Helper()
	r := e.do(admin, "POST", saPath(ns, name)+"/token", tokenRequest(spec))
	if r.code != http.StatusCreated {
		e.t.Fatalf("token request: %d %s", r.code, r.body)
	}
	var tr authenticationv1.TokenRequest
	r.decode(e.t, &tr)
	return tr
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

func TestTokenRequestAndServiceAccountTokens(t *testing.T) {
	e, _ := newTokenEnv(t)
	admin := e.client(e.user("admin"))
	var sa corev1.ServiceAccount
	e.do(admin, "POST", saPath("default", ""), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}).decode(t, &sa)
	var pod corev1.Pod
	p := testPod("web", nil)
	p.Spec.ServiceAccountName = "builder"
	p.Spec.NodeName = "node-a"
	e.do(admin, "POST", podPath("default", ""), p).decode(t, &pod)

	tr := e.requestToken(admin, "default", "builder", authenticationv1.TokenRequestSpec{})
	t.Run("the answer is kube-apiserver's", func(t *testing.T) {
		if tr.APIVersion != "authentication.k8s.io/v1" || tr.Kind != "TokenRequest" || tr.Name != "builder" || tr.Namespace != "default" {
			t.Errorf("type and metadata %+v %+v", tr.TypeMeta, tr.ObjectMeta)
		}
		if *tr.Spec.ExpirationSeconds != 3600 || !cmp.Equal(tr.Spec.Audiences, []string{testIssuerURL}) {
			t.Errorf("defaulted spec %+v", tr.Spec)
		}
		if want := authEnvStart.Add(time.Hour); !tr.Status.ExpirationTimestamp.Time.Equal(want) {
			t.Errorf("expires %v, want %v", tr.Status.ExpirationTimestamp, want)
		}
		parts := strings.Split(tr.Status.Token, ".")
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]any
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		if claims["iss"] != testIssuerURL || claims["sub"] != "system:serviceaccount:default:builder" || claims["jti"] == "" {
			t.Errorf("claims %v", claims)
		}
	})
	t.Run("the token authenticates as the ServiceAccount", func(t *testing.T) {
		got := e.whoami(e.client(), bearer(tr.Status.Token)...)
		jti := got.Extra[authentication.ExtraCredentialID]
		want := authenticationv1.UserInfo{Username: "system:serviceaccount:default:builder", UID: string(sa.UID),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
			Extra:  map[string]authenticationv1.ExtraValue{authentication.ExtraCredentialID: jti}}
		if diff := cmp.Diff(want, got); diff != "" || len(jti) != 1 || !strings.HasPrefix(jti[0], "JTI=") {
			t.Errorf("user (-want +got):\n%s", diff)
		}
	})
	bound := e.requestToken(admin, "default", "builder", authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}})
	t.Run("a pod-bound token names the pod and its node", func(t *testing.T) {
		got := e.whoami(e.client(), bearer(bound.Status.Token)...)
		for k, v := range map[string]string{authentication.ExtraPodName: "web", authentication.ExtraPodUID: string(pod.UID), authentication.ExtraNodeName: "node-a"} {
			if !cmp.Equal(got.Extra[k], authenticationv1.ExtraValue{v}) {
				t.Errorf("extra %s = %v, want %s", k, got.Extra[k], v)
			}
		}
	})
	t.Run("a token signed by another key is unauthorized", func(t *testing.T) {
		other, _ := authentication.GenerateTokenSigner()
		claims, _ := authentication.NewServiceAccountClaims(testIssuerURL, authentication.TokenBinding{ServiceAccount: &sa}, []string{testIssuerURL}, authEnvStart, time.Hour, "x")
		forged, _ := other.Sign(claims)
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(forged)...).expect(t, 401, metav1.StatusReasonUnauthorized)
	})
	t.Run("a token for another audience is unauthorized", func(t *testing.T) {
		tok := e.requestToken(admin, "default", "builder", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
		if !cmp.Equal(tok.Spec.Audiences, []string{"vault"}) {
			t.Errorf("audiences %v", tok.Spec.Audiences)
		}
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(tok.Status.Token)...).expect(t, 401, metav1.StatusReasonUnauthorized)
	})
	t.Run("a token whose bound pod was deleted is unauthorized", func(t *testing.T) {
		e.do(admin, "DELETE", podPath("default", "web")+"?gracePeriodSeconds=0", nil).expect(t, 200, "")
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(bound.Status.Token)...).expect(t, 401, metav1.StatusReasonUnauthorized)
		// The unbound token still works.
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(tr.Status.Token)...).expect(t, 200, "")
	})
	t.Run("an expired token is unauthorized", func(t *testing.T) {
		e.clock.Step(time.Hour + 59*time.Second)
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(tr.Status.Token)...).expect(t, 200, "")
		e.clock.Step(2 * time.Second)
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(tr.Status.Token)...).expect(t, 401, metav1.StatusReasonUnauthorized)
	})
	t.Run("a token of a deleted ServiceAccount is unauthorized", func(t *testing.T) {
		fresh := e.requestToken(admin, "default", "builder", authenticationv1.TokenRequestSpec{})
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(fresh.Status.Token)...).expect(t, 200, "")
		e.do(admin, "DELETE", saPath("default", "builder"), nil).expect(t, 200, "")
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(fresh.Status.Token)...).expect(t, 401, metav1.StatusReasonUnauthorized)
		// Recreated under the same name, it is another ServiceAccount.
		e.do(admin, "POST", saPath("default", ""), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}).expect(t, 201, "")
		e.do(e.client(), "GET", podPath("default", ""), nil, bearer(fresh.Status.Token)...).expect(t, 401, metav1.StatusReasonUnauthorized)
	})
}

func TestTokenRequestValidation(t *testing.T) {
	e, _ := newTokenEnv(t, func(c *ServiceAccountIssuerConfig) { c.MaxTokenExpiration = 2 * time.Hour })
	admin := e.client(e.user("admin"))
	e.do(admin, "POST", saPath("default", ""), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}).expect(t, 201, "")
	p := testPod("other-sa-pod", nil)
	p.Spec.ServiceAccountName = "someone-else"
	e.do(admin, "POST", podPath("default", ""), p).expect(t, 201, "")
	e.do(admin, "POST", "/api/v1/namespaces/default/secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}).expect(t, 201, "")
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name    string
		path    string
		body    any
		code    int
		reason  metav1.StatusReason
		message string
	}{
		{"expiration under 10 minutes", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{ExpirationSeconds: secs(599)}), 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "sa" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"expiration over 2^32 seconds", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{ExpirationSeconds: secs(1<<32 + 1)}), 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "sa" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{"name in the body differs from the URL", saPath("default", "sa") + "/token",
			map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{"name": "other"}}, 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "sa" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"missing ServiceAccount", saPath("default", "nobody") + "/token", tokenRequest(authenticationv1.TokenRequestSpec{}), 404, metav1.StatusReasonNotFound,
			`serviceaccounts "nobody" not found`},
		{"bound pod runs as another ServiceAccount", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other-sa-pod"}}), 400, metav1.StatusReasonBadRequest,
			`cannot bind token for serviceaccount "sa" to pod running with different serviceaccount name.`},
		{"bound pod missing", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "ghost"}}), 404, metav1.StatusReasonNotFound,
			`pods "ghost" not found`},
		{"bound secret with another uid", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s", UID: "stale"}}), 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (stale) does not match the UID in record. The object might have been deleted and then recreated`},
		{"bound to an unsupported kind", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "d"}}), 400, metav1.StatusReasonBadRequest,
			`cannot bind token to object of type apps/v1, Kind=Deployment`},
		{"bound object without a name", saPath("default", "sa") + "/token",
			tokenRequest(authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1"}}), 422, metav1.StatusReasonInvalid,
			`TokenRequest.authentication.k8s.io "sa" is invalid: spec.boundObjectRef.name: Required value`},
		{"malformed body", saPath("default", "sa") + "/token", "{", 400, metav1.StatusReasonBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(admin, "POST", tc.path, tc.body)
			r.expect(t, tc.code, tc.reason)
			if msg := r.status(t).Message; tc.message != "" && msg != tc.message {
				t.Errorf("message %q\nwant    %q", msg, tc.message)
			}
		})
	}
	t.Run("the expiration is capped with a warning", func(t *testing.T) {
		r := e.do(admin, "POST", saPath("default", "sa")+"/token", tokenRequest(authenticationv1.TokenRequestSpec{ExpirationSeconds: secs(86400)}))
		r.expect(t, 201, "")
		var tr authenticationv1.TokenRequest
		r.decode(t, &tr)
		if *tr.Spec.ExpirationSeconds != 7200 || !strings.Contains(r.header.Get("Warning"), "requested expiration of 86400 seconds shortened to 7200 seconds") {
			t.Errorf("expiration %d, warning %q", *tr.Spec.ExpirationSeconds, r.header.Get("Warning"))
		}
	})
	t.Run("only POST is served", func(t *testing.T) {
		e.do(admin, "GET", saPath("default", "sa")+"/token", nil).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	})
	t.Run("a dry run issues no token", func(t *testing.T) {
		r := e.do(admin, "POST", saPath("default", "sa")+"/token?dryRun=All", tokenRequest(authenticationv1.TokenRequestSpec{}))
		r.expect(t, 201, "")
		var tr authenticationv1.TokenRequest
		r.decode(t, &tr)
		if tr.Status.Token != "" {
			t.Error("dry run issued a token")
		}
	})
	t.Run("discovery lists the subresource", func(t *testing.T) {
		var list metav1.APIResourceList
		e.do(admin, "GET", "/api/v1", nil).decode(t, &list)
		var found *metav1.APIResource
		for i := range list.APIResources {
			if list.APIResources[i].Name == "serviceaccounts/token" {
				found = &list.APIResources[i]
			}
		}
		want := &metav1.APIResource{Name: "serviceaccounts/token", Namespaced: true, Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: metav1.Verbs{"create"}}
		if diff := cmp.Diff(want, found); diff != "" {
			t.Errorf("discovery (-want +got):\n%s", diff)
		}
	})
}

func TestTokenRequestNotServedWithoutSigner(t *testing.T) {
	signer, _ := authentication.GenerateTokenSigner()
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.ServiceAccountIssuer = ServiceAccountIssuerConfig{Issuer: testIssuerURL, Keys: []crypto.PublicKey{signer.PublicKey()}}
	})
	admin := e.client(e.user("admin"))
	e.do(admin, "POST", saPath("default", ""), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}).expect(t, 201, "")
	e.do(admin, "POST", saPath("default", "sa")+"/token", tokenRequest(authenticationv1.TokenRequestSpec{})).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestIssuerDiscovery(t *testing.T) {
	e, signer := newTokenEnv(t)
	anon := e.client()
	r := e.do(anon, "GET", "/.well-known/openid-configuration", nil)
	r.expect(t, 200, "")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var doc map[string]any
	r.decode(t, &doc)
	want := map[string]any{
		"issuer": testIssuerURL, "jwks_uri": testIssuerURL + "/openid/v1/jwks",
		"response_types_supported": []any{"id_token"}, "subject_types_supported": []any{"public"},
		"id_token_signing_alg_values_supported": []any{"ES256"},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("discovery (-want +got):\n%s", diff)
	}
	r = e.do(anon, "GET", "/openid/v1/jwks", nil)
	r.expect(t, 200, "")
	if ct := r.header.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("content type %q", ct)
	}
	var jwks struct{ Keys []authentication.JWK }
	r.decode(t, &jwks)
	wantKey, _ := authentication.PublicJWK(signer.PublicKey())
	if diff := cmp.Diff([]authentication.JWK{wantKey}, jwks.Keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	e.do(anon, "POST", "/openid/v1/jwks", "").expect(t, 405, metav1.StatusReasonMethodNotAllowed)

	plain := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.ServiceAccountIssuer = ServiceAccountIssuerConfig{Issuer: "kplane", Signer: signer}
	})
	plain.do(plain.client(), "GET", "/.well-known/openid-configuration", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestServiceAccountIssuerConfigErrors(t *testing.T) {
	signer, _ := authentication.GenerateTokenSigner()
	backend := newTestEnv(t).server.cfg.Backend
	if _, err := New(Config{Backend: backend, ServiceAccountIssuer: ServiceAccountIssuerConfig{Signer: signer}}); err == nil {
		t.Error("a Signer without Issuer: no error")
	}
}

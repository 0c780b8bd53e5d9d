package authentication

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
)

// fakeObjects is an in-memory ServiceAccountGetter.
type fakeObjects struct {
	mu    sync.Mutex
	objs  map[string]metav1.Object // "kind/namespace/name"
	calls int
}

func newFakeObjects(objs ...metav1.Object) *fakeObjects {
	f := &fakeObjects{objs: map[string]metav1.Object{}}
	for _, o := range objs {
		f.put(o)
	}
	return f
}

func kindOf(o metav1.Object) string { return fmt.Sprintf("%T", o) }

func (f *fakeObjects) put(o metav1.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[kindOf(o)+"/"+o.GetNamespace()+"/"+o.GetName()] = o
}

func (f *fakeObjects) remove(o metav1.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objs, kindOf(o)+"/"+o.GetNamespace()+"/"+o.GetName())
}

func get[T metav1.Object](f *fakeObjects, namespace, name string) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var zero T
	o, ok := f.objs[kindOf(zero)+"/"+namespace+"/"+name]
	if !ok {
		return zero, fmt.Errorf("%s %q not found", kindOf(zero), name)
	}
	return o.(T), nil
}

func (f *fakeObjects) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return get[*corev1.ServiceAccount](f, ns, name)
}
func (f *fakeObjects) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return get[*corev1.Pod](f, ns, name)
}
func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return get[*corev1.Secret](f, ns, name)
}
func (f *fakeObjects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return get[*corev1.Node](f, "", name)
}

const testIssuer = "https://kplane.test"

func testSA() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "builder", UID: "sa-uid"}}
}

func testBoundPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web", UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: "builder", NodeName: "node-a"}}
}

func testBoundSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "tok", UID: "secret-uid"}}
}

func testNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
}

func mustSigner(t testing.TB, key crypto.Signer) *TokenSigner {
	t.Helper()
	s, err := NewTokenSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

func testRSAKey(t testing.TB) *rsa.PrivateKey {
	rsaOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	})
	return rsaKey
}

func mustToken(t testing.TB, s *TokenSigner, b TokenBinding, mutate ...func(*ServiceAccountClaims)) string {
	t.Helper()
	c, err := NewServiceAccountClaims(testIssuer, b, []string{testIssuer}, testNow, time.Hour, "jti-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mutate {
		m(c)
	}
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestServiceAccountTokens(t *testing.T) {
	ec, err := GenerateTokenSigner()
	if err != nil {
		t.Fatal(err)
	}
	rs := mustSigner(t, testRSAKey(t))
	stranger, _ := GenerateTokenSigner()
	clk := testclock.NewFakePassiveClock(testNow)
	saUser := &User{Name: "system:serviceaccount:ns1:builder", UID: "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"},
		Extra:  map[string][]string{ExtraCredentialID: {"JTI=jti-1"}}}
	podUser := &User{Name: saUser.Name, UID: saUser.UID, Groups: saUser.Groups, Extra: map[string][]string{
		ExtraCredentialID: {"JTI=jti-1"}, ExtraPodName: {"web"}, ExtraPodUID: {"pod-uid"},
		ExtraNodeName: {"node-a"}, ExtraNodeUID: {"node-uid"}}}
	deleting := func(o metav1.Object, ago time.Duration) metav1.Object {
		ts := metav1.NewTime(testNow.Add(-ago))
		o.SetDeletionTimestamp(&ts)
		return o
	}
	for _, tc := range []struct {
		name    string
		token   func() string
		objects []metav1.Object
		now     time.Time
		want    *User
		// handled false: the token is not this authenticator's (another may know it).
		unhandled bool
		wantErr   string
	}{
		{name: "ES256 token of a live ServiceAccount",
			token: func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) }, want: saUser},
		{name: "RS256 token of a live ServiceAccount",
			token: func() string { return mustToken(t, rs, TokenBinding{ServiceAccount: testSA()}) }, want: saUser},
		{name: "token bound to a live pod on a node carries pod and node extras",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod(), Node: testNode()})
			},
			objects: []metav1.Object{testSA(), testBoundPod()}, want: podUser},
		{name: "token bound to a live secret",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Secret: testBoundSecret()})
			},
			objects: []metav1.Object{testSA(), testBoundSecret()}, want: saUser},
		{name: "token signed by another key is refused",
			token: func() string { return mustToken(t, stranger, TokenBinding{ServiceAccount: testSA()}) }, wantErr: "invalid signature"},
		{name: "token whose claims were changed after signing is refused",
			token: func() string {
				tok := mustToken(t, ec, TokenBinding{ServiceAccount: testSA()})
				parts := strings.Split(tok, ".")
				c := mustToken(t, stranger, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Subject = "system:serviceaccount:kube-system:admin" })
				return parts[0] + "." + strings.Split(c, ".")[1] + "." + parts[2]
			}, wantErr: "invalid signature"},
		{name: "unsigned token (alg none) is refused",
			token: func() string {
				tok := mustToken(t, ec, TokenBinding{ServiceAccount: testSA()})
				parts := strings.Split(tok, ".")
				return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
			}, wantErr: "invalid signature"},
		{name: "ES256 signature presented as RS256 is refused",
			token: func() string {
				tok := mustToken(t, ec, TokenBinding{ServiceAccount: testSA()})
				parts := strings.Split(tok, ".")
				hdr, _ := json.Marshal(jwsHeader{Alg: AlgRS256, Kid: ec.KeyID()})
				return base64.RawURLEncoding.EncodeToString(hdr) + "." + parts[1] + "." + parts[2]
			}, wantErr: "invalid signature"},
		{name: "expired token is refused",
			token: func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			now:   testNow.Add(time.Hour + 61*time.Second), wantErr: "expired"},
		{name: "token expired less than the 60s leeway ago is accepted",
			token: func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			now:   testNow.Add(time.Hour + 59*time.Second), want: saUser},
		{name: "token not valid yet is refused",
			token: func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			now:   testNow.Add(-2 * time.Minute), wantErr: "not valid yet"},
		{name: "token without exp is refused",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Expiry = 0 })
			}, wantErr: "no expiry"},
		{name: "token of another issuer is not handled",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Issuer = "https://elsewhere" })
			}, unhandled: true},
		{name: "opaque token is not handled", token: func() string { return "abc123" }, unhandled: true},
		{name: "token for another audience is refused",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Audience = Audience{"vault"} })
			}, wantErr: "not among the API audiences"},
		{name: "token whose ServiceAccount was deleted is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			objects: []metav1.Object{}, wantErr: "not found"},
		{name: "token whose ServiceAccount was recreated (new uid) is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			objects: []metav1.Object{func() metav1.Object { sa := testSA(); sa.UID = "new"; return sa }()},
			wantErr: "ServiceAccount UID (new) does not match claim (sa-uid)"},
		{name: "token whose ServiceAccount is being deleted for over 60s is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}) },
			objects: []metav1.Object{deleting(testSA(), 2*time.Minute)}, wantErr: "has been deleted"},
		{name: "token whose bound pod was deleted is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod()}) },
			objects: []metav1.Object{testSA()}, wantErr: "bound pod ns1/web"},
		{name: "token whose bound pod was recreated is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod()}) },
			objects: []metav1.Object{testSA(), func() metav1.Object { p := testBoundPod(); p.UID = "other"; return p }()},
			wantErr: "pod UID (other) does not match claim (pod-uid)"},
		{name: "token whose bound pod began deleting under 60s ago is accepted",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod()}) },
			objects: []metav1.Object{testSA(), deleting(testBoundPod(), 30*time.Second)},
			want: &User{Name: saUser.Name, UID: saUser.UID, Groups: saUser.Groups, Extra: map[string][]string{
				ExtraCredentialID: {"JTI=jti-1"}, ExtraPodName: {"web"}, ExtraPodUID: {"pod-uid"}}}},
		{name: "token whose bound pod is being deleted for over 60s is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod()}) },
			objects: []metav1.Object{testSA(), deleting(testBoundPod(), 61*time.Second)}, wantErr: "bound pod ns1/web has been deleted"},
		{name: "token whose bound secret was deleted is refused",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Secret: testBoundSecret()})
			},
			objects: []metav1.Object{testSA()}, wantErr: "bound secret ns1/tok"},
		{name: "token bound to a deleted node is refused",
			token:   func() string { return mustToken(t, ec, TokenBinding{ServiceAccount: testSA(), Node: testNode()}) },
			objects: []metav1.Object{testSA()}, wantErr: "bound node node-a"},
		{name: "token whose sub does not match the kubernetes.io claim is refused",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Subject = "system:serviceaccount:kube-system:admin" })
			}, wantErr: "sub does not name"},
		{name: "token without the kubernetes.io claim is refused",
			token: func() string {
				return mustToken(t, ec, TokenBinding{ServiceAccount: testSA()}, func(c *ServiceAccountClaims) { c.Kubernetes = nil })
			}, wantErr: "no kubernetes.io claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.objects
			if objs == nil {
				objs = []metav1.Object{testSA()}
			}
			now := tc.now
			if now.IsZero() {
				now = testNow
			}
			clk.SetTime(now)
			v, err := NewServiceAccountTokens(ServiceAccountTokensConfig{
				Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{rs.PublicKey(), ec.PublicKey()},
				Getter: newFakeObjects(objs...), Clock: clk,
			})
			if err != nil {
				t.Fatal(err)
			}
			u, ok, err := v.AuthenticateToken(context.Background(), tc.token())
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("got ok=%v err=%v, want error with %q", ok, err, tc.wantErr)
				}
				return
			case tc.unhandled:
				if ok || err != nil {
					t.Fatalf("got ok=%v err=%v, want not handled", ok, err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("got ok=%v err=%v", ok, err)
			}
			if diff := cmp.Diff(tc.want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceAccountTokenClaims(t *testing.T) {
	s, _ := GenerateTokenSigner()
	tok := mustToken(t, s, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod(), Node: testNode()})
	parts := strings.Split(tok, ".")
	var hdr map[string]any
	raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if err := json.Unmarshal(raw, &hdr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"alg": "ES256", "kid": s.KeyID()}, hdr); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	var claims map[string]any
	raw, _ = base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	now := float64(testNow.Unix())
	want := map[string]any{
		"iss": testIssuer, "sub": "system:serviceaccount:ns1:builder", "aud": []any{testIssuer},
		"exp": now + 3600, "iat": now, "nbf": now, "jti": "jti-1",
		"kubernetes.io": map[string]any{
			"namespace":      "ns1",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web", "uid": "pod-uid"},
			"node":           map[string]any{"name": "node-a", "uid": "node-uid"},
		},
	}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if _, err := NewServiceAccountClaims(testIssuer, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod(), Secret: testBoundSecret()}, nil, testNow, time.Hour, ""); err == nil {
		t.Error("claims bound to a pod and a secret: no error")
	}
}

func TestAudienceAcceptsStringOrList(t *testing.T) {
	for in, want := range map[string]Audience{`"a"`: {"a"}, `["a","b"]`: {"a", "b"}} {
		var a Audience
		if err := json.Unmarshal([]byte(in), &a); err != nil || !cmp.Equal(a, want) {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	var a Audience
	if err := json.Unmarshal([]byte(`3`), &a); err == nil {
		t.Error("aud 3: no error")
	}
}

func TestSplitServiceAccountUsername(t *testing.T) {
	for _, tc := range []struct {
		in       string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:ns:sa", "ns", "sa", true},
		{"system:serviceaccount:ns", "", "", false},
		{"system:serviceaccount::sa", "", "", false},
		{"system:serviceaccount:ns:sa:x", "", "", false},
		{"alice", "", "", false},
	} {
		ns, name, ok := SplitServiceAccountUsername(tc.in)
		if ns != tc.ns || name != tc.name || ok != tc.ok {
			t.Errorf("%q: %q %q %v", tc.in, ns, name, ok)
		}
	}
}

func writePEM(t testing.TB, blocks ...*pem.Block) string {
	t.Helper()
	var b []byte
	for _, bl := range blocks {
		b = append(b, pem.EncodeToMemory(bl)...)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKeys(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(testRSAKey(t))
	pubDER, _ := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)

	s, err := LoadTokenSigner(writePEM(t, &pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}))
	if err != nil || s.Algorithm() != AlgES256 {
		t.Fatalf("EC signing key: %v %v", s, err)
	}
	s, err = LoadTokenSigner(writePEM(t, &pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}))
	if err != nil || s.Algorithm() != AlgRS256 {
		t.Fatalf("RSA signing key: %v %v", s, err)
	}
	if _, err := LoadTokenSigner(writePEM(t, &pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})); err == nil {
		t.Error("signing key file with only a public key: no error")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := NewTokenSigner(p384); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Errorf("P-384 key: %v", err)
	}

	keys, err := LoadPublicKeys(writePEM(t,
		&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER},
		&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER},
		&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}))
	if err != nil || len(keys) != 3 {
		t.Fatalf("public keys: %d %v", len(keys), err)
	}
	if _, err := LoadPublicKeys(writePEM(t, &pem.Block{Type: "NOTHING", Bytes: []byte("x")})); err == nil {
		t.Error("file without keys: no error")
	}
}

func TestPublicJWK(t *testing.T) {
	s, _ := GenerateTokenSigner()
	j, err := PublicJWK(s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if j.Kty != "EC" || j.Crv != "P-256" || j.Alg != "ES256" || j.Use != "sig" || j.Kid != s.KeyID() || len(j.X) != 43 || len(j.Y) != 43 {
		t.Errorf("EC JWK %+v", j)
	}
	j, err = PublicJWK(testRSAKey(t).Public())
	if err != nil {
		t.Fatal(err)
	}
	if j.Kty != "RSA" || j.Alg != "RS256" || j.E != "AQAB" || j.N == "" {
		t.Errorf("RSA JWK %+v", j)
	}
}

func FuzzServiceAccountToken(f *testing.F) {
	s, _ := GenerateTokenSigner()
	f.Add(mustToken(f, s, TokenBinding{ServiceAccount: testSA()}))
	f.Add("a.b.c")
	f.Add("..")
	v, err := NewServiceAccountTokens(ServiceAccountTokensConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{s.PublicKey()},
		Getter: newFakeObjects(testSA()), Clock: testclock.NewFakePassiveClock(testNow)})
	if err != nil {
		f.Fatal(err)
	}
	valid := mustToken(f, s, TokenBinding{ServiceAccount: testSA()})
	f.Fuzz(func(t *testing.T, tok string) {
		u, ok, err := v.AuthenticateToken(context.Background(), tok)
		if ok && (err != nil || u == nil) {
			t.Fatalf("ok with err %v", err)
		}
		if ok && tok != valid {
			// Only the genuine token (or one with an equivalent encoding) may pass.
			if u.Name != "system:serviceaccount:ns1:builder" {
				t.Fatalf("forged token accepted as %q", u.Name)
			}
		}
	})
}

func TestServiceAccountTokensCheckLiveObjectsOnEveryUse(t *testing.T) {
	s, _ := GenerateTokenSigner()
	clk := testclock.NewFakePassiveClock(testNow)
	objs := newFakeObjects(testSA(), testBoundPod())
	v, err := NewServiceAccountTokens(ServiceAccountTokensConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{s.PublicKey()}, Getter: objs, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, s, TokenBinding{ServiceAccount: testSA(), Pod: testBoundPod()})
	for range 2 {
		if _, ok, err := v.AuthenticateToken(context.Background(), tok); !ok || err != nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
	if len(v.signed.entries) != 1 {
		t.Fatalf("%d verified tokens remembered, want 1", len(v.signed.entries))
	}
	objs.remove(testBoundPod())
	if _, _, err := v.AuthenticateToken(context.Background(), tok); err == nil {
		t.Fatal("a remembered token still works after its pod is gone")
	}
	objs.put(testBoundPod())
	clk.SetTime(testNow.Add(time.Hour + 2*time.Minute))
	if _, _, err := v.AuthenticateToken(context.Background(), tok); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a remembered token past its expiry: %v", err)
	}
}

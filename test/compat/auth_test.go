package compat

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// authServer is a kplane API server with authentication and RBAC on, as
// kplane's command line sets them up: client certificates of its own
// client CA, the static tokens of a token file and ServiceAccount tokens
// it issues itself, served over HTTPS on loopback.
type authServer struct {
	url      string
	serverCA []byte // PEM of the serving certificate, which clients trust
	clientCA *x509.Certificate
	caKey    *ecdsa.PrivateKey
}

// startAuthServer starts an authServer whose token file holds tokenFile
// (CSV: token,user,uid,"group1,group2"); it is stopped when t ends.
func startAuthServer(t testing.TB, tokenFile string) *authServer {
	t.Helper()
	s := &authServer{}
	var err error
	if s.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "compat-client-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &s.caKey.PublicKey, s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.clientCA, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.clientCA)
	x, err := authentication.NewX509(authentication.X509Config{ClientCA: pool})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := authentication.ParseTokenFile(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := authentication.GenerateTokenSigner()
	if err != nil {
		t.Fatal(err)
	}
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{
		Backend:              backend,
		Authenticator:        authentication.Union(x, authentication.Bearer(tokens)),
		AuthorizationMode:    apiserver.AuthorizationModeRBAC,
		ServiceAccountIssuer: apiserver.ServiceAccountIssuerConfig{Issuer: "https://kubernetes.default.svc.cluster.local", Signer: signer},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	// The listener only asks for a certificate; the X509 authenticator
	// verifies it against the client CA.
	hs.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	hs.StartTLS()
	s.url = hs.URL
	s.serverCA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	ctx, cancel := context.WithCancel(context.Background())
	var ctrlWG sync.WaitGroup
	ctrlWG.Go(func() { _ = srv.RunControllers(ctx) })
	t.Cleanup(func() {
		cancel()
		ctrlWG.Wait()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return s
}

// certConfig is a client-go configuration that authenticates with a
// client certificate of the server's client CA naming user (CN) in groups
// (O).
func (s *authServer) certConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.clientCA, &key.PublicKey, s.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.baseConfig()
	cfg.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return cfg
}

// tokenConfig is a client-go configuration that authenticates with the
// bearer token tok.
func (s *authServer) tokenConfig(tok string) *rest.Config {
	cfg := s.baseConfig()
	cfg.BearerToken = tok
	return cfg
}

// baseConfig trusts the server and carries no credentials.
func (s *authServer) baseConfig() *rest.Config {
	return &rest.Config{Host: s.url, QPS: -1, UserAgent: "kplane-compat-auth",
		TLSClientConfig: rest.TLSClientConfig{CAData: s.serverCA}}
}

// admin is a clientset in group system:masters.
func (s *authServer) admin(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	return newClientset(t, s.certConfig(t, "compat-admin", "system:masters"))
}

func newClientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// whoami asks the server who cs is.
func whoami(ctx context.Context, cs kubernetes.Interface) (authenticationv1.UserInfo, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// wantUser fails t unless cs is user in exactly groups (in any order).
func wantUser(ctx context.Context, t testing.TB, cs kubernetes.Interface, user string, groups ...string) {
	t.Helper()
	got, err := whoami(ctx, cs)
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	g, w := slices.Sorted(slices.Values(got.Groups)), slices.Sorted(slices.Values(groups))
	if got.Username != user || !slices.Equal(g, w) {
		t.Errorf("whoami = %q %v, want %q %v", got.Username, got.Groups, user, groups)
	}
}

func createNamespaces(ctx context.Context, t testing.TB, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// pollFor polls cond every 50ms for up to 30s and fails t with what when
// it never holds.
func pollFor(ctx context.Context, t testing.TB, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestAuthClientCertificate authenticates client-go with a client
// certificate and checks what RBAC lets the user do.
func TestAuthClientCertificate(t *testing.T) {
	s := startAuthServer(t, "")
	ctx := t.Context()
	admin := s.admin(t)
	createNamespaces(ctx, t, admin, "team-a", "team-b")
	alice := newClientset(t, s.certConfig(t, "alice", "developers", "team-a-members"))

	wantUser(ctx, t, alice, "alice", "developers", "team-a-members", "system:authenticated")

	// A certificate of another server's client CA is refused, not taken
	// as anonymous.
	foreign := startAuthServer(t, "").certConfig(t, "compat-admin", "system:masters")
	foreign.Host, foreign.CAData = s.url, s.serverCA
	if _, err := whoami(ctx, newClientset(t, foreign)); !apierrors.IsUnauthorized(err) {
		t.Errorf("whoami with a certificate of a foreign CA: %v, want Unauthorized", err)
	}

	if _, err := alice.CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list before any binding: %v, want Forbidden", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: "team-a"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := admin.RbacV1().Roles("team-a").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: "team-a"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}
	if _, err := admin.RbacV1().RoleBindings("team-a").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer's cache of RBAC objects catches up with the binding.
	pollFor(ctx, t, "alice never got to list configmaps in team-a", func(ctx context.Context) (bool, error) {
		l, err := alice.CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(l.Items, func(c corev1.ConfigMap) bool { return c.Name == "settings" }), nil
	})
	if _, err := alice.CoreV1().ConfigMaps("team-a").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("get in team-a: %v", err)
	}
	if _, err := alice.CoreV1().ConfigMaps("team-b").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list in team-b: %v, want Forbidden", err)
	}
	_, err := alice.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create in team-a: %v, want Forbidden", err)
	}

	for _, c := range []struct {
		ns, verb string
		want     bool
	}{
		{"team-a", "list", true},
		{"team-a", "get", true},
		{"team-a", "create", false},
		{"team-a", "delete", false},
		{"team-b", "list", false},
	} {
		r, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: c.ns, Verb: c.verb, Resource: "configmaps",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("access review %s in %s: %v", c.verb, c.ns, err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("access review %s configmaps in %s: allowed %v, want %v (%s)", c.verb, c.ns, r.Status.Allowed, c.want, r.Status.Reason)
		}
	}

	rr, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-a"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("rules review: %v", err)
	}
	if !slices.ContainsFunc(rr.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool {
		return slices.Equal(r.Resources, []string{"configmaps"}) && slices.Equal(slices.Sorted(slices.Values(r.Verbs)), []string{"get", "list"})
	}) {
		t.Errorf("rules review in team-a lacks get,list on configmaps: %+v", rr.Status.ResourceRules)
	}
	rb, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-b"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("rules review: %v", err)
	}
	if slices.ContainsFunc(rb.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool { return slices.Contains(r.Resources, "configmaps") }) {
		t.Errorf("rules review in team-b names configmaps: %+v", rb.Status.ResourceRules)
	}
}

// tamper changes the last character of a JWS to another base64url one
// that differs in a bit which always carries data.
func tamper(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[i^0x20])
}

// TestAuthBearerTokens authenticates client-go with a static token and
// with ServiceAccount tokens from TokenRequest, bound ones included.
func TestAuthBearerTokens(t *testing.T) {
	s := startAuthServer(t, `static-token-for-bob,bob,uid-bob,"ops,oncall"`+"\n")
	ctx := t.Context()
	admin := s.admin(t)

	wantUser(ctx, t, newClientset(t, s.tokenConfig("static-token-for-bob")), "bob", "ops", "oncall", "system:authenticated")
	if _, err := whoami(ctx, newClientset(t, s.tokenConfig("static-token-for-eve"))); !apierrors.IsUnauthorized(err) {
		t.Errorf("unknown static token: %v, want Unauthorized", err)
	}

	const ns, sa = "robots", "builder"
	createNamespaces(ctx, t, admin, ns)
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	if tr.Status.Token == "" || tr.Status.ExpirationTimestamp.IsZero() {
		t.Fatalf("TokenRequest status: %+v", tr.Status)
	}
	saUser := "system:serviceaccount:" + ns + ":" + sa
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	wantUser(ctx, t, newClientset(t, s.tokenConfig(tr.Status.Token)), saUser, saGroups...)
	if _, err := whoami(ctx, newClientset(t, s.tokenConfig(tamper(tr.Status.Token)))); !apierrors.IsUnauthorized(err) {
		t.Errorf("token with a tampered signature: %v, want Unauthorized", err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			Containers:         []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
	pod, err = admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bound TokenRequest: %v", err)
	}
	boundCS := newClientset(t, s.tokenConfig(bound.Status.Token))
	wantUser(ctx, t, boundCS, saUser, saGroups...)
	if err := admin.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	pollFor(ctx, t, "the pod-bound token still authenticates after the pod was deleted", func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx, boundCS)
		if apierrors.IsUnauthorized(err) {
			return true, nil
		}
		return false, err
	})
	// The unbound token is unaffected.
	wantUser(ctx, t, newClientset(t, s.tokenConfig(tr.Status.Token)), saUser, saGroups...)
}

// TestAuthImpersonation impersonates through client-go's
// ImpersonationConfig.
func TestAuthImpersonation(t *testing.T) {
	s := startAuthServer(t, "")
	ctx := t.Context()

	asCarol := s.certConfig(t, "compat-admin", "system:masters")
	asCarol.Impersonate = rest.ImpersonationConfig{UserName: "carol", Groups: []string{"auditors"}}
	got, err := whoami(ctx, newClientset(t, asCarol))
	if err != nil {
		t.Fatalf("whoami impersonating: %v", err)
	}
	if got.Username != "carol" || !slices.Contains(got.Groups, "auditors") || slices.Contains(got.Groups, "system:masters") {
		t.Errorf("impersonated whoami = %q %v, want carol in auditors (not system:masters)", got.Username, got.Groups)
	}
	// carol has no rights of her own.
	if _, err := newClientset(t, asCarol).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as carol: %v, want Forbidden", err)
	}

	dave := s.certConfig(t, "dave", "developers")
	dave.Impersonate = rest.ImpersonationConfig{UserName: "compat-admin", Groups: []string{"system:masters"}}
	if _, err := whoami(ctx, newClientset(t, dave)); !apierrors.IsForbidden(err) {
		t.Errorf("whoami impersonating without the impersonate verb: %v, want Forbidden", err)
	}
}

// TestAuthControllerRuntimeLimitedRole runs a controller-runtime manager as
// a user bound only to get/list/watch/update on configmaps: its cache
// syncs, its reconciler labels ConfigMaps, and reading a Secret is
// Forbidden.
func TestAuthControllerRuntimeLimitedRole(t *testing.T) {
	s := startAuthServer(t, "")
	ctx := t.Context()
	admin := s.admin(t)
	const ns = "labelled"
	createNamespaces(ctx, t, admin, ns, "elsewhere")
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-labeler"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "update"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-labeler"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cm-labeler"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cm-labeler"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := s.certConfig(t, "cm-labeler")
	// Wait for the authorizer to know the binding before the manager
	// starts, so that the cache's first list is allowed.
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Resource: "configmaps"},
	}}
	labeler := newClientset(t, cfg)
	pollFor(ctx, t, "the binding never took effect", func(ctx context.Context) (bool, error) {
		r, err := labeler.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	})

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		t.Fatal(err)
	}
	secretErrs := make(chan error, 1)
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		Named("compat-cm-labeler").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(reconcilerFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			if req.Namespace != ns {
				return ctrl.Result{}, nil
			}
			var cm corev1.ConfigMap
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
				return ctrl.Result{}, crclient.IgnoreNotFound(err)
			}
			if cm.Labels["compat/labelled"] != "true" {
				if cm.Labels == nil {
					cm.Labels = map[string]string{}
				}
				cm.Labels["compat/labelled"] = "true"
				if err := mgr.GetClient().Update(ctx, &cm); err != nil {
					return ctrl.Result{}, err
				}
			}
			// Beyond the role: a direct read (not through the cache,
			// which would start a Secret informer).
			var sec corev1.Secret
			err := mgr.GetAPIReader().Get(ctx, crclient.ObjectKey{Namespace: ns, Name: "creds"}, &sec)
			select {
			case secretErrs <- err:
			default:
			}
			return ctrl.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the manager's cache never synced under the limited role")
	}

	for _, n := range []string{ns, "elsewhere"} {
		if _, err := admin.CoreV1().ConfigMaps(n).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pollFor(ctx, t, "the controller never labelled the configmap", func(ctx context.Context) (bool, error) {
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cm.Labels["compat/labelled"] == "true", nil
	})
	select {
	case err := <-secretErrs:
		if !apierrors.IsForbidden(err) {
			t.Errorf("reading a secret under the limited role: %v, want Forbidden", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reconciler never tried to read the secret")
	}
	cm, err := admin.CoreV1().ConfigMaps("elsewhere").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Labels["compat/labelled"]; ok {
		t.Errorf("configmap outside %s was labelled: %v", ns, cm.Labels)
	}
}

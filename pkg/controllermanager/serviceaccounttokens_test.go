package controllermanager

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization/rbac/bootstrap"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// auditLog is an audit Sink keeping the ResponseComplete events.
type auditLog struct {
	mu     sync.Mutex
	events []audit.Event
}

func (l *auditLog) Write(p []byte) (int, error) {
	var ev audit.Event
	if err := json.Unmarshal(p, &ev); err != nil {
		return 0, err
	}
	if ev.Stage == audit.StageResponseComplete {
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.mu.Unlock()
	}
	return len(p), nil
}

// matching returns the events of verb on group/resource (no subresource).
func (l *auditLog) matching(verb, group, resource string) []audit.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []audit.Event
	for _, ev := range l.events {
		if r := ev.ObjectRef; ev.Verb == verb && r != nil && r.APIGroup == group && r.Resource == resource && r.Subresource == "" {
			out = append(out, ev)
		}
	}
	return out
}

// logFailures logs the requests that failed, to explain a stuck rollout
// (a controller refused what its role lacks).
func (l *auditLog) logFailures(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.events {
		if st := ev.ResponseStatus; st != nil && st.Code >= 300 {
			t.Logf("%s: %s %s: %d %s", ev.User.Username, ev.Verb, ev.RequestURI, st.Code, st.Message)
		}
	}
}

// usersOf returns the distinct users of evs, sorted.
func usersOf(evs []audit.Event) []string {
	var out []string
	for _, ev := range evs {
		if !slices.Contains(out, ev.User.Username) {
			out = append(out, ev.User.Username)
		}
	}
	slices.Sort(out)
	return out
}

// rbacEnv is a kplane API server with RBAC on, issuing ServiceAccount
// tokens and auditing every request, with clients for an administrator,
// the controller manager's user and the simulated nodes.
type rbacEnv struct {
	admin, node *client.Client
	// manager and managerConfig are the controller manager's user,
	// authenticated by a bearer token.
	manager       *client.Client
	managerConfig client.Config
	audit         *auditLog
	// tokenRequests counts the TokenRequests the server received.
	tokenRequests atomic.Int64
}

func startRBACServer(t *testing.T) *rbacEnv {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := authentication.GenerateTokenSigner()
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]*authentication.User{
		"admin-token":   {Name: "test-admin", Groups: []string{authentication.SystemPrivilegedGroup}},
		"manager-token": {Name: bootstrap.KubeControllerManager},
		"node-token":    {Name: bootstrap.NodeSimulator, Groups: []string{authentication.NodesGroup}},
	}
	policy, err := audit.ParsePolicy([]byte(`{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	env := &rbacEnv{audit: &auditLog{}}
	auditor, err := audit.New(audit.Config{Policy: policy, Sink: env.audit})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{
		Backend: backend, Logger: slog.New(slog.DiscardHandler), Auditor: auditor,
		AuthorizationMode: apiserver.AuthorizationModeRBAC,
		Authenticator: authentication.Bearer(authentication.TokenAuthenticatorFunc(func(_ context.Context, tok string) (*authentication.User, bool, error) {
			u, ok := users[tok]
			if !ok {
				return nil, false, nil
			}
			return authentication.WithAuthenticatedGroup(&authentication.User{Name: u.Name, Groups: slices.Clone(u.Groups)}), true, nil
		})),
		ServiceAccountIssuer: apiserver.ServiceAccountIssuerConfig{Issuer: "kplane-test", Signer: signer},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/token") {
			env.tokenRequests.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	ctrlDone := make(chan struct{})
	go func() {
		defer close(ctrlDone)
		_ = srv.RunControllers(ctx)
	}()
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		cancel()
		<-ctrlDone
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	newClient := func(cfg client.Config) *client.Client {
		t.Helper()
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}}
	env.managerConfig = base
	env.managerConfig.BearerToken = "manager-token"
	env.managerConfig.UserAgent = "kplane-controller-manager"
	env.manager = newClient(env.managerConfig)
	admin, node := base, base
	admin.BearerToken, node.BearerToken = "admin-token", "node-token"
	env.admin, env.node = newClient(admin), newClient(node)
	return env
}

// allowed asks the server (as the administrator) whether user in groups
// may verb group/resource in namespace default.
func (e *rbacEnv) allowed(t *testing.T, user string, groups []string, verb, group, resource string) bool {
	t.Helper()
	body, err := json.Marshal(&authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: verb, Group: group, Resource: resource},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.admin.Do(context.Background(), client.Request{Method: http.MethodPost, Path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	var sar authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(resp.Body, &sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestServiceAccountCredentials runs the manager as kplane runs it, with
// RBAC on and UseServiceAccountCredentials: a Deployment rolls out with
// every write done by the controller's own ServiceAccount, none refused,
// while the manager's user itself may not write pods; a deleted
// ServiceAccount is created again and the controller goes on.
func TestServiceAccountCredentials(t *testing.T) {
	env := startRBACServer(t)
	saGroups := authentication.ServiceAccountGroups(metav1.NamespaceSystem)
	if env.allowed(t, bootstrap.KubeControllerManager, []string{authentication.AllAuthenticated}, "create", "", "pods") {
		t.Error("the manager's user may create pods; it should need the controllers' ServiceAccounts for that")
	}
	if !env.allowed(t, bootstrap.ControllerServiceAccount("replicaset-controller"), saGroups, "create", "", "pods") {
		t.Error("replicaset-controller may not create pods")
	}
	le := fastElection
	le.ReleaseOnCancel = true
	m, err := New(Config{
		Client: env.manager, ClientConfig: env.managerConfig, UseServiceAccountCredentials: true, NodeClient: env.node,
		Controllers: []string{"*", NodeSimulator}, Nodes: 2, Workers: 2,
		LeaderElection: le, Identity: "cm-sa", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	deployments := client.NewResource(env.admin, client.Deployments).Namespace("default")
	if _, err := deployments.Create(ctx, deploymentOf("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rolledOut := func(n int32) func(d *appsv1.Deployment) bool {
		return func(d *appsv1.Deployment) bool {
			return d.Status.ReadyReplicas == n && d.Status.UpdatedReplicas == n && d.Status.ObservedGeneration == d.Generation
		}
	}
	if _, err := testenv.Wait(ctx, env.admin, client.Deployments, "default/web", rolledOut(3)); err != nil {
		env.audit.logFailures(t)
		t.Fatal(err)
	}

	for _, tc := range []struct{ verb, group, resource, want string }{
		{"create", "apps", "replicasets", "deployment-controller"},
		{"create", "", "pods", "replicaset-controller"},
	} {
		evs := env.audit.matching(tc.verb, tc.group, tc.resource)
		if got, want := usersOf(evs), []string{bootstrap.ControllerServiceAccount(tc.want)}; !slices.Equal(got, want) {
			t.Errorf("%s %s made by %v, want %v", tc.verb, tc.resource, got, want)
		}
	}
	sa, err := client.NewResource(env.admin, client.ServiceAccounts).Namespace(metav1.NamespaceSystem).Get(ctx, "deployment-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the manager did not create the controller's ServiceAccount: %v", err)
	}
	// The Lease stays the manager's.
	if got := usersOf(env.audit.matching("update", "coordination.k8s.io", "leases")); !slices.Equal(got, []string{bootstrap.KubeControllerManager}) {
		t.Errorf("leases updated by %v, want only the manager's user", got)
	}

	// A deleted ServiceAccount invalidates its tokens (401); the
	// controller's client renews its token, which creates the
	// ServiceAccount again.
	if err := client.NewResource(env.admin, client.ServiceAccounts).Namespace(metav1.NamespaceSystem).Delete(ctx, "deployment-controller", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Labels["rev"] = "2"
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Wait(ctx, env.admin, client.Deployments, "default/web", rolledOut(3)); err != nil {
		t.Fatal(err)
	}
	again, err := client.NewResource(env.admin, client.ServiceAccounts).Namespace(metav1.NamespaceSystem).Get(ctx, "deployment-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ServiceAccount was not created again: %v", err)
	}
	if again.UID == sa.UID {
		t.Error("the ServiceAccount was never deleted")
	}
	if got := usersOf(env.audit.matching("create", "apps", "replicasets")); !slices.Equal(got, []string{bootstrap.ControllerServiceAccount("deployment-controller")}) {
		t.Errorf("replicasets created by %v after the ServiceAccount came back", got)
	}

	// Deleting the Deployment leaves its ReplicaSets and pods to the
	// garbage collector, which deletes them as its own ServiceAccount.
	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rss, err := client.NewResource(env.admin, client.ReplicaSets).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range rss.Items {
		if err := testenv.WaitDeleted(ctx, env.admin, client.ReplicaSets, "default/"+rs.Name); err != nil {
			t.Fatal(err)
		}
	}
	if got := usersOf(env.audit.matching("delete", "apps", "replicasets")); !slices.Contains(got, bootstrap.ControllerServiceAccount("generic-garbage-collector")) {
		t.Errorf("replicasets deleted by %v, want the garbage collector's ServiceAccount", got)
	}

	// No controller was refused anything: each role covers what its
	// controller does.
	env.audit.mu.Lock()
	defer env.audit.mu.Unlock()
	for _, ev := range env.audit.events {
		if strings.HasPrefix(ev.User.Username, "system:serviceaccount:kube-system:") && ev.ResponseStatus != nil && ev.ResponseStatus.Code == http.StatusForbidden {
			t.Errorf("%s was refused %s %s", ev.User.Username, ev.Verb, ev.RequestURI)
		}
	}
}

// TestServiceAccountTokenRenewal checks the token cache on a fake clock:
// one TokenRequest per token, a new one once 80% of the hour has passed,
// and one when the token in use is reported refused.
func TestServiceAccountTokenRenewal(t *testing.T) {
	env := startRBACServer(t)
	clk := testclock.NewFakeClock(time.Now())
	src := &serviceAccountTokens{manager: env.manager, namespace: metav1.NamespaceSystem, name: "job-controller", clock: clk, logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	token := func(wantRequests int64) string {
		t.Helper()
		tok, err := src.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := env.tokenRequests.Load(); got != wantRequests {
			t.Fatalf("%d TokenRequests, want %d", got, wantRequests)
		}
		return tok
	}
	first := token(1)
	if _, err := client.NewResource(env.admin, client.ServiceAccounts).Namespace(metav1.NamespaceSystem).Get(ctx, "job-controller", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ServiceAccount was not created: %v", err)
	}
	if got := token(1); got != first {
		t.Error("a cached token was replaced")
	}
	clk.Step(47 * time.Minute) // before 80% of an hour (48m)
	token(1)
	clk.Step(2 * time.Minute)
	second := token(2)
	token(2)
	src.InvalidateToken(first) // an old token's 401 does not drop the new one
	token(2)
	src.InvalidateToken(second)
	third := token(3)

	// The token authenticates as the ServiceAccount.
	cfg := env.managerConfig.WithoutCredentials()
	cfg.BearerToken = third
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.NewResource(c, client.Jobs).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the job controller's token can not list jobs: %v", err)
	}
	if _, err := client.NewResource(c, client.Secrets).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the job controller's token lists secrets: it is not the ServiceAccount's")
	}
}

// TestServiceAccountControllers checks that every controller but the node
// simulator has a ServiceAccount, bound by the bootstrap policy to its
// controller role.
func TestServiceAccountControllers(t *testing.T) {
	bound := map[string]bool{}
	for _, b := range bootstrap.ControllerRoleBindings() {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == metav1.NamespaceSystem && b.RoleRef.Name == bootstrap.ControllerRolePrefix+s.Name {
				bound[s.Name] = true
			}
		}
	}
	for _, d := range knownControllers() {
		switch {
		case d.name == NodeSimulator && d.serviceAccount != "":
			t.Errorf("the node simulator runs as ServiceAccount %s; it has its own NodeClient", d.serviceAccount)
		case d.name != NodeSimulator && !bound[d.serviceAccount]:
			t.Errorf("controller %s runs as ServiceAccount %q, which no bootstrap binding grants its role", d.name, d.serviceAccount)
		}
	}
}

func TestNewRequiresClientConfigForServiceAccounts(t *testing.T) {
	c, err := client.New(client.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Client: c, UseServiceAccountCredentials: true}); err == nil || !strings.Contains(err.Error(), "ClientConfig") {
		t.Fatalf("New: %v, want ClientConfig required", err)
	}
}

// TestServiceAccountTokenRenewalFails checks that a failed renewal keeps
// the current token until it expires, asking again only every
// serviceAccountTokenRetry, and fails once the token has expired.
func TestServiceAccountTokenRenewalFails(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	var requests atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet:
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"job-controller","namespace":"kube-system"}}`))
		case requests.Add(1) == 1:
			w.WriteHeader(http.StatusCreated)
			exp := metav1.NewTime(clk.Now().Add(time.Hour)).Format(time.RFC3339)
			_, _ = w.Write([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","status":{"token":"tok-1","expirationTimestamp":"` + exp + `"}}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Status","status":"Failure","code":503,"reason":"ServiceUnavailable","message":"down"}`))
		}
	}))
	t.Cleanup(hs.Close)
	manager, err := client.New(client.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(manager.CloseIdleConnections)
	src := &serviceAccountTokens{manager: manager, namespace: metav1.NamespaceSystem, name: "job-controller", clock: clk, logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	check := func(wantToken string, wantRequests int64) {
		t.Helper()
		tok, err := src.Token(ctx)
		switch {
		case wantToken == "" && err == nil:
			t.Fatalf("Token = %q, want an error", tok)
		case wantToken != "" && (err != nil || tok != wantToken):
			t.Fatalf("Token = %q, %v; want %q", tok, err, wantToken)
		}
		if got := requests.Load(); got != wantRequests {
			t.Fatalf("%d TokenRequests, want %d", got, wantRequests)
		}
	}
	check("tok-1", 1)
	clk.Step(49 * time.Minute) // due: the renewal fails, tok-1 is still good
	check("tok-1", 2)
	clk.Step(serviceAccountTokenRetry - time.Second)
	check("tok-1", 2)
	clk.Step(time.Second)
	check("tok-1", 3)
	clk.Step(11 * time.Minute) // past the expiry
	check("", 4)
}

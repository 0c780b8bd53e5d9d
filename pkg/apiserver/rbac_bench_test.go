package apiserver

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// BenchmarkRBACNew measures New in RBAC mode: the bootstrap policy is
// created on an empty backend.
func BenchmarkRBACNew(b *testing.B) {
	for b.Loop() {
		backend, err := memory.New(memory.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := New(Config{Backend: backend, AuthorizationMode: AuthorizationModeRBAC}); err != nil {
			b.Fatal(err)
		}
		_ = backend.Close()
	}
}

// BenchmarkRBACAuthorize measures a decision of the server's authorizer
// over its cache: the bootstrap policy plus 100 RoleBindings in one
// namespace, the user bound by the last.
func BenchmarkRBACAuthorize(b *testing.B) {
	e := newTestEnv(b, func(c *Config) { c.AuthorizationMode = AuthorizationModeRBAC })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.server.RunControllers(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	e.do("POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]string{"name": "team"}}).expect(b, 201, "")
	for i := range 100 {
		e.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rb%03d", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:aggregate-to-view"},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user%03d", i)}},
		}).expect(b, 201, "")
	}
	e.waitPolicy(func(c *rbacCache) bool { return len(c.RoleBindings("team")) == 100 })
	authz := e.server.Authorizer()
	for _, c := range []struct {
		name string
		user string
		want authorization.Decision
	}{{"allowed", "user099", authorization.DecisionAllow}, {"denied", "nobody", authorization.DecisionNoOpinion}} {
		attrs := authorization.Attributes{User: &authentication.User{Name: c.user, Groups: []string{authentication.AllAuthenticated}},
			Verb: "list", ResourceRequest: true, APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "team"}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := authz.Authorize(ctx, attrs); d != c.want {
					b.Fatal(d)
				}
			}
		})
	}
}

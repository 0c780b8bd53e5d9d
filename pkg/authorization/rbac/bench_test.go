package rbac

import (
	"context"
	"fmt"
	"testing"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// BenchmarkAuthorize measures one decision over a policy of 100
// ClusterRoleBindings and 100 RoleBindings, the user bound by the last.
func BenchmarkAuthorize(b *testing.B) {
	p := newPolicy()
	for i := range 100 {
		p.clusterRole(fmt.Sprintf("role%d", i), rule(l("get", "list", "watch"), l("", "apps"), l("pods", "deployments", "configmaps")),
			rule(l("create"), l("batch"), l("jobs")))
		p.clusterRoleBinding(fmt.Sprintf("crb%d", i), clusterRoleRef(fmt.Sprintf("role%d", i)), user(fmt.Sprintf("user%d", i)), group(fmt.Sprintf("group%d", i)))
		p.roleBinding("ns", fmt.Sprintf("rb%d", i), clusterRoleRef(fmt.Sprintf("role%d", i)), serviceAccount("ns", fmt.Sprintf("sa%d", i)))
	}
	a := newAuthorizer(b, p)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		attrs authorization.Attributes
		want  authorization.Decision
	}{
		{"allowed-last-clusterrolebinding", res(&authentication.User{Name: "user99", Groups: []string{"system:authenticated"}}, "list", "apps", "deployments", "", "ns", ""), authorization.DecisionAllow},
		{"allowed-last-rolebinding", res(&authentication.User{Name: "system:serviceaccount:ns:sa99"}, "get", "", "pods", "", "ns", "p"), authorization.DecisionAllow},
		{"denied", res(&authentication.User{Name: "nobody", Groups: []string{"system:authenticated"}}, "get", "", "secrets", "", "ns", "s"), authorization.DecisionNoOpinion},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, _, _ := a.Authorize(ctx, c.attrs)
				if d != c.want {
					b.Fatal(d)
				}
			}
		})
	}
}

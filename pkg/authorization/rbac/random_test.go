package rbac

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// naiveAllows is the reference: RBAC's rules written as plainly as
// possible, building every string.
func naiveAllows(p *policy, at authorization.Attributes) bool {
	if at.User == nil {
		return false
	}
	if slices.Contains(at.User.Groups, "system:masters") {
		return true
	}
	subjectOK := func(s rbacv1.Subject, bindingNS string) bool {
		switch s.Kind {
		case "User":
			return s.Name == at.User.Name
		case "Group":
			return slices.Contains(at.User.Groups, s.Name)
		case "ServiceAccount":
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			return ns != "" && at.User.Name == "system:serviceaccount:"+ns+":"+s.Name
		}
		return false
	}
	ruleOK := func(r rbacv1.PolicyRule) bool {
		in := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
		if !in(r.Verbs, at.Verb) {
			return false
		}
		if !at.ResourceRequest {
			for _, u := range r.NonResourceURLs {
				if u == at.Path || u == "*" || (strings.HasSuffix(u, "*") && strings.HasPrefix(at.Path, strings.TrimSuffix(u, "*"))) {
					return true
				}
			}
			return false
		}
		if !in(r.APIGroups, at.APIGroup) {
			return false
		}
		combined := at.Resource
		if at.Subresource != "" {
			combined += "/" + at.Subresource
		}
		resOK := slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, combined) ||
			(at.Subresource != "" && slices.Contains(r.Resources, "*/"+at.Subresource))
		return resOK && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, at.Name))
	}
	rulesOf := func(ref rbacv1.RoleRef, ns string) []rbacv1.PolicyRule {
		if ref.Kind == "ClusterRole" {
			if r, ok := p.clusterRoles[ref.Name]; ok {
				return r.Rules
			}
			return nil
		}
		if r, ok := p.roles[ns+"/"+ref.Name]; ok {
			return r.Rules
		}
		return nil
	}
	for _, b := range p.crbs {
		if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return subjectOK(s, "") }) &&
			slices.ContainsFunc(rulesOf(b.RoleRef, ""), ruleOK) {
			return true
		}
	}
	for _, b := range p.roleBindings[at.Namespace] {
		if at.Namespace != "" && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return subjectOK(s, b.Namespace) }) &&
			slices.ContainsFunc(rulesOf(b.RoleRef, b.Namespace), ruleOK) {
			return true
		}
	}
	return false
}

// randomPolicy draws a policy and requests from small vocabularies, so
// that matches and near misses are frequent.
type vocab struct{ r *rand.Rand }

func (v vocab) pick(s ...string) string { return s[v.r.IntN(len(s))] }
func (v vocab) some(s ...string) []string {
	n := 1 + v.r.IntN(2)
	out := make([]string, n)
	for i := range out {
		out[i] = v.pick(s...)
	}
	return out
}

var (
	verbs      = []string{"get", "list", "create", "delete", "bind", "*"}
	groups     = []string{"", "apps", "*"}
	resources  = []string{"pods", "pods/log", "deployments", "deployments/scale", "*/scale", "*", "secrets"}
	names      = []string{"a", "b"}
	urls       = []string{"/healthz", "/apis/*", "/api", "*", "/version*"}
	namespaces = []string{"ns1", "ns2"}
	users      = []string{"alice", "bob", "system:serviceaccount:ns1:sa", "system:serviceaccount:ns2:sa"}
	userGroups = []string{"g1", "g2", "system:masters"}
)

func (v vocab) rule() rbacv1.PolicyRule {
	if v.r.IntN(5) == 0 {
		return urlRule(v.some(verbs...), v.some(urls...)...)
	}
	r := rule(v.some(verbs...), v.some(groups...), v.some(resources...))
	if v.r.IntN(3) == 0 {
		r.ResourceNames = v.some(names...)
	}
	return r
}

func (v vocab) subject() rbacv1.Subject {
	switch v.r.IntN(4) {
	case 0:
		return group(v.pick(userGroups[:2]...))
	case 1:
		ns := ""
		if v.r.IntN(2) == 0 {
			ns = v.pick(namespaces...)
		}
		return rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: "sa"}
	}
	return user(v.pick(users...))
}

func (v vocab) policy() *policy {
	p := newPolicy()
	for i := range 4 {
		p.clusterRole(fmt.Sprintf("cr%d", i), v.rule(), v.rule())
		p.role(v.pick(namespaces...), fmt.Sprintf("r%d", i), v.rule())
	}
	for i := range 5 {
		p.clusterRoleBinding(fmt.Sprintf("crb%d", i), clusterRoleRef(fmt.Sprintf("cr%d", v.r.IntN(5))), v.subject())
		ref := roleRef(fmt.Sprintf("r%d", v.r.IntN(4)))
		if v.r.IntN(2) == 0 {
			ref = clusterRoleRef(fmt.Sprintf("cr%d", v.r.IntN(4)))
		}
		p.roleBinding(v.pick(namespaces...), fmt.Sprintf("rb%d", i), ref, v.subject(), v.subject())
	}
	return p
}

func (v vocab) attrs() authorization.Attributes {
	u := &authentication.User{Name: v.pick(users...)}
	if v.r.IntN(8) != 0 {
		u.Groups = []string{v.pick(userGroups[:2]...)}
	} else {
		u.Groups = []string{v.pick(userGroups...)}
	}
	if v.r.IntN(5) == 0 {
		return nonRes(u, v.pick("get", "post"), v.pick("/healthz", "/healthz/x", "/apis", "/apis/apps", "/api", "/version/x"))
	}
	resource, sub, _ := strings.Cut(v.pick("pods", "pods/log", "deployments", "deployments/scale", "secrets", "pods/scale"), "/")
	name := ""
	if v.r.IntN(2) == 0 {
		name = v.pick(names...)
	}
	return res(u, v.pick(verbs[:5]...), v.pick("", "apps"), resource, sub, v.pick("ns1", "ns2", ""), name)
}

func TestAuthorizerAgreesWithReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	v := vocab{rand.New(rand.NewPCG(seed, 0))}
	ctx := context.Background()
	allowed := 0
	for range 300 {
		p := v.policy()
		a := newAuthorizer(t, p)
		for range 50 {
			at := v.attrs()
			d, reason, err := a.Authorize(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveAllows(p, at)
			if (d == authorization.DecisionAllow) != want {
				t.Fatalf("seed %d: %+v user %+v: got %v %q, reference says allowed=%v", seed, at, *at.User, d, reason, want)
			}
			if want {
				allowed++
			}
		}
	}
	if allowed == 0 || allowed == 300*50 {
		t.Fatalf("degenerate draw: %d of %d allowed", allowed, 300*50)
	}
}

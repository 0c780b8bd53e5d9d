package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// fullAuthority is what setting an aggregationRule needs: it can gather
// any rule.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// ConfirmNoEscalation returns an error, worded as Kubernetes words it,
// unless u holds every rule of rules in namespace (its cluster-wide rules
// and, when namespace is not empty, its rules there).
func (a *Authorizer) ConfirmNoEscalation(u *authentication.User, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return errors.New("no user on request")
	}
	owner, errs := a.PolicyRulesFor(u, namespace)
	ok, missing := Covers(owner, rules)
	if ok {
		return nil
	}
	var lines []string
	for _, r := range compactRules(missing) {
		lines = append(lines, CompactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if len(errs) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", errs)
	}
	return errors.New(msg)
}

// RoleWrite is a create or update of a Role or ClusterRole to check.
type RoleWrite struct {
	// Resource is "roles" or "clusterroles"; Namespace is "" for the latter.
	Resource, Namespace, Name string
	// Rules are the rules the object will hold.
	Rules []rbacv1.PolicyRule
	// SetsAggregation is set when the write adds or changes an
	// aggregationRule, which needs every permission (it may gather any).
	SetsAggregation bool
}

// BindingWrite is a create or update of a RoleBinding or
// ClusterRoleBinding to check.
type BindingWrite struct {
	// Resource is "rolebindings" or "clusterrolebindings"; Namespace is ""
	// for the latter.
	Resource, Namespace, Name string
	RoleRef                   rbacv1.RoleRef
}

var rbacGroup = rbacv1.SchemeGroupVersion.Group

// CheckRoleWrite returns nil when u may store w: u is in system:masters,
// may "escalate" the role, or already holds every rule it grants.
// Otherwise it returns a Forbidden StatusError with Kubernetes' message.
// authz decides the escalate verb (nil: a itself).
func (a *Authorizer) CheckRoleWrite(ctx context.Context, authz authorization.Authorizer, u *authentication.User, w RoleWrite) error {
	if IsPrivileged(u) {
		return nil
	}
	if authz == nil {
		authz = a
	}
	gr := schema.GroupResource{Group: rbacGroup, Resource: w.Resource}
	if allowed(ctx, authz, u, "escalate", w.Resource, w.Namespace, w.Name) {
		return nil
	}
	if err := a.ConfirmNoEscalation(u, w.Namespace, w.Rules); err != nil {
		return apierrors.NewForbidden(gr, w.Name, err)
	}
	if w.SetsAggregation {
		if err := a.ConfirmNoEscalation(u, w.Namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, w.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// CheckBindingWrite returns nil when u may store w: u is in
// system:masters, may "bind" the role it refers to (in the binding's
// namespace), or holds every rule of that role. Otherwise it returns a
// Forbidden StatusError with Kubernetes' message. authz decides the bind
// verb (nil: a itself).
func (a *Authorizer) CheckBindingWrite(ctx context.Context, authz authorization.Authorizer, u *authentication.User, w BindingWrite) error {
	if IsPrivileged(u) {
		return nil
	}
	if authz == nil {
		authz = a
	}
	gr := schema.GroupResource{Group: rbacGroup, Resource: w.Resource}
	var roleResource string
	switch w.RoleRef.Kind {
	case "ClusterRole":
		roleResource = "clusterroles"
	case "Role":
		roleResource = "roles"
	}
	if roleResource != "" && w.RoleRef.APIGroup == rbacGroup && allowed(ctx, authz, u, "bind", roleResource, w.Namespace, w.RoleRef.Name) {
		return nil
	}
	rules, err := a.roleRefRules(w.RoleRef, w.Namespace)
	if err != nil {
		return apierrors.NewForbidden(gr, w.Name, err)
	}
	if err := a.ConfirmNoEscalation(u, w.Namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, w.Name, err)
	}
	return nil
}

// allowed asks authz whether u may verb the RBAC resource name in
// namespace, as Kubernetes asks about escalate and bind.
func allowed(ctx context.Context, authz authorization.Authorizer, u *authentication.User, verb, resource, namespace, name string) bool {
	d, _, err := authz.Authorize(ctx, authorization.Attributes{
		User: u, Verb: verb, ResourceRequest: true, APIGroup: rbacGroup, APIVersion: "*",
		Resource: resource, Namespace: namespace, Name: name,
	})
	return err == nil && d == authorization.DecisionAllow
}

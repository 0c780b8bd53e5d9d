package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// Lister reads the RBAC policy. The objects it returns are shared: callers
// never change them. Implementations are safe for concurrent use and
// should not allocate: Authorize calls them on every request.
type Lister interface {
	// Role returns the Role name in namespace, or false.
	Role(namespace, name string) (*rbacv1.Role, bool)
	// RoleBindings returns the RoleBindings of namespace.
	RoleBindings(namespace string) []*rbacv1.RoleBinding
	// ClusterRole returns the ClusterRole name, or false.
	ClusterRole(name string) (*rbacv1.ClusterRole, bool)
	// ClusterRoleBindings returns every ClusterRoleBinding.
	ClusterRoleBindings() []*rbacv1.ClusterRoleBinding
}

// Config configures an Authorizer.
type Config struct {
	// Lister reads the policy. Required.
	Lister Lister
}

// Authorizer is the RBAC authorizer and rule resolver. It is safe for
// concurrent use when its Lister is.
type Authorizer struct {
	lister Lister
}

var (
	_ authorization.Authorizer   = (*Authorizer)(nil)
	_ authorization.RuleResolver = (*Authorizer)(nil)
)

// New returns an Authorizer over cfg.Lister.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Lister == nil {
		return nil, errors.New("rbac: Lister is required")
	}
	return &Authorizer{lister: cfg.Lister}, nil
}

// IsPrivileged reports whether u is in system:masters, the group
// kube-apiserver allows everything before any policy is read.
func IsPrivileged(u *authentication.User) bool {
	if u == nil {
		return false
	}
	for _, g := range u.Groups {
		if g == authentication.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// Authorize allows a when a rule bound to its user permits it, with the
// reason naming the binding, as Kubernetes words it; otherwise it has no
// opinion, and the reason lists the bindings whose roles could not be
// read. ClusterRoleBindings are looked at first, then the RoleBindings of
// a's namespace. It never returns an error.
func (a *Authorizer) Authorize(_ context.Context, attrs authorization.Attributes) (authorization.Decision, string, error) {
	u := attrs.User
	if u == nil {
		return authorization.DecisionNoOpinion, "", nil
	}
	if IsPrivileged(u) {
		return authorization.DecisionAllow, "", nil
	}
	var errs []error
	for _, b := range a.lister.ClusterRoleBindings() {
		s := appliesTo(u, b.Subjects, "")
		if s == nil {
			continue
		}
		rules, err := a.roleRefRules(b.RoleRef, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range rules {
			if RuleAllows(&attrs, &rules[i]) {
				return authorization.DecisionAllow, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of %s %q to %s",
					b.Name, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(s, "")), nil
			}
		}
	}
	if attrs.Namespace != "" {
		for _, b := range a.lister.RoleBindings(attrs.Namespace) {
			s := appliesTo(u, b.Subjects, b.Namespace)
			if s == nil {
				continue
			}
			rules, err := a.roleRefRules(b.RoleRef, b.Namespace)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for i := range rules {
				if RuleAllows(&attrs, &rules[i]) {
					return authorization.DecisionAllow, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s",
						b.Name+"/"+b.Namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(s, b.Namespace)), nil
				}
			}
		}
	}
	if len(errs) > 0 {
		return authorization.DecisionNoOpinion, "RBAC: " + utilerrors.NewAggregate(errs).Error(), nil
	}
	return authorization.DecisionNoOpinion, "", nil
}

// PolicyRulesFor returns the rules bound to u cluster-wide and, when
// namespace is not empty, in namespace, with one error per binding whose
// role could not be read. The rules are shared with the Lister's roles:
// the caller must not change them.
func (a *Authorizer) PolicyRulesFor(u *authentication.User, namespace string) ([]rbacv1.PolicyRule, []error) {
	if u == nil {
		return nil, nil
	}
	var rules []rbacv1.PolicyRule
	var errs []error
	for _, b := range a.lister.ClusterRoleBindings() {
		if appliesTo(u, b.Subjects, "") == nil {
			continue
		}
		r, err := a.roleRefRules(b.RoleRef, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r...)
	}
	if namespace != "" {
		for _, b := range a.lister.RoleBindings(namespace) {
			if appliesTo(u, b.Subjects, b.Namespace) == nil {
				continue
			}
			r, err := a.roleRefRules(b.RoleRef, b.Namespace)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rules = append(rules, r...)
		}
	}
	return rules, errs
}

// RulesFor lists what u may do in namespace, for SelfSubjectRulesReview:
// the rules of every role bound to it there and cluster-wide. incomplete
// is set, and err says why, when a binding names a missing role.
func (a *Authorizer) RulesFor(_ context.Context, u *authentication.User, namespace string) ([]authorization.ResourceRule, []authorization.NonResourceRule, bool, error) {
	rules, errs := a.PolicyRulesFor(u, namespace)
	if IsPrivileged(u) {
		// As everything is allowed, say so even without a binding.
		rules = append([]rbacv1.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}, rules...)
	}
	res, nonRes := ConvertRules(rules)
	if len(errs) > 0 {
		return res, nonRes, true, utilerrors.NewAggregate(errs)
	}
	return res, nonRes, false, nil
}

// ConvertRules splits policy rules into the resource and non-resource
// rules a SelfSubjectRulesReview reports, copying their lists.
func ConvertRules(rules []rbacv1.PolicyRule) ([]authorization.ResourceRule, []authorization.NonResourceRule) {
	var res []authorization.ResourceRule
	var nonRes []authorization.NonResourceRule
	for _, r := range rules {
		if len(r.Resources) > 0 || len(r.APIGroups) > 0 {
			res = append(res, authorization.ResourceRule{
				Verbs: clone(r.Verbs), APIGroups: clone(r.APIGroups), Resources: clone(r.Resources), ResourceNames: clone(r.ResourceNames),
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonRes = append(nonRes, authorization.NonResourceRule{Verbs: clone(r.Verbs), NonResourceURLs: clone(r.NonResourceURLs)})
		}
	}
	return res, nonRes
}

func clone(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

// RoleRefRules returns the rules of the role ref names, read in
// bindingNamespace for a Role ("" for a ClusterRoleBinding), or the error
// Kubernetes gives when it is missing.
func (a *Authorizer) RoleRefRules(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	return a.roleRefRules(ref, bindingNamespace)
}

func (a *Authorizer) roleRefRules(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		r, ok := a.lister.ClusterRole(ref.Name)
		if !ok {
			return nil, notFoundError{kind: "clusterrole", name: ref.Name}
		}
		return r.Rules, nil
	case "Role":
		if ns == "" {
			return nil, fmt.Errorf("rbac: role %q has no namespace", ref.Name)
		}
		r, ok := a.lister.Role(ns, ref.Name)
		if !ok {
			return nil, notFoundError{kind: "role", name: ref.Name}
		}
		return r.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// notFoundError is a missing role, worded as Kubernetes' listers word it.
type notFoundError struct{ kind, name string }

func (e notFoundError) Error() string {
	return fmt.Sprintf("%s.rbac.authorization.k8s.io %q not found", e.kind, e.name)
}

// appliesTo returns the first subject that names u, or nil. A
// ServiceAccount subject without a namespace means one in bindingNamespace
// (never matching in a ClusterRoleBinding).
func appliesTo(u *authentication.User, subjects []rbacv1.Subject, bindingNamespace string) *rbacv1.Subject {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], bindingNamespace) {
			return &subjects[i]
		}
	}
	return nil
}

func subjectMatches(u *authentication.User, s *rbacv1.Subject, bindingNamespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		for _, g := range u.Groups {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return false
		}
		return isServiceAccount(u.Name, ns, s.Name)
	}
	return false
}

// isServiceAccount reports whether user is
// "system:serviceaccount:<namespace>:<name>", without building it.
func isServiceAccount(user, namespace, name string) bool {
	p := authentication.ServiceAccountPrefix
	if len(user) != len(p)+len(namespace)+1+len(name) || !strings.HasPrefix(user, p) {
		return false
	}
	rest := user[len(p):]
	return strings.HasPrefix(rest, namespace) && rest[len(namespace)] == ':' && rest[len(namespace)+1:] == name
}

// describeSubject names s in reasons, as Kubernetes does: ServiceAccounts
// as "name/namespace".
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

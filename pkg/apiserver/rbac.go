package apiserver

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/authorization/rbac"
	"github.com/kplane/kplane/pkg/authorization/rbac/bootstrap"
	"github.com/kplane/kplane/pkg/storage"
)

// The values of Config.AuthorizationMode.
const (
	// AuthorizationModeAlwaysAllow authorizes nothing: every access review
	// is allowed and RBAC objects are stored as they come. It is insecure
	// and meant for tests. The default.
	AuthorizationModeAlwaysAllow = "AlwaysAllow"
	// AuthorizationModeRBAC decides with Kubernetes' RBAC over the server's
	// own Roles, RoleBindings, ClusterRoles and ClusterRoleBindings.
	AuthorizationModeRBAC = "RBAC"
)

// rbacState is what the server keeps in RBAC mode.
type rbacState struct {
	cache *rbacCache
	authz *rbac.Authorizer
}

// setupRBAC, in RBAC mode, builds the policy cache and the authorizer over
// it and reconciles the bootstrap policy into the stores.
func (s *Server) setupRBAC(ctx context.Context) error {
	switch s.cfg.AuthorizationMode {
	case "", AuthorizationModeAlwaysAllow:
		return nil
	case AuthorizationModeRBAC:
	default:
		return fmt.Errorf("apiserver: unknown AuthorizationMode %q (want %s or %s)", s.cfg.AuthorizationMode, AuthorizationModeAlwaysAllow, AuthorizationModeRBAC)
	}
	cache, err := newRBACCache(s)
	if err != nil {
		return err
	}
	authz, err := rbac.New(rbac.Config{Lister: cache})
	if err != nil {
		return err
	}
	s.rbac = &rbacState{cache: cache, authz: authz}
	return s.reconcileBootstrapPolicy(ctx)
}

// Authorizer returns the authorizer every request passes: Config.Authorizer
// when set, else the one the AuthorizationMode selects, nil (everything
// allowed) for AlwaysAllow. In RBAC mode its decisions wait until the
// policy cache, which RunControllers (and so Run) keeps, has synced.
// It is safe for concurrent use.
func (s *Server) Authorizer() authorization.Authorizer { return s.authz }

// chooseAuthorizer sets s.authz (see Authorizer) once setupRBAC ran.
func (s *Server) chooseAuthorizer() {
	switch {
	case s.cfg.Authorizer != nil:
		s.authz = s.cfg.Authorizer
	case s.rbac != nil:
		s.authz = (*syncedRBAC)(s.rbac)
	}
}

// ruleResolver returns the rule resolver of the server's authorizer: the
// Config.Authorizer when it is one, else RBAC's; nil when there is none.
func (s *Server) ruleResolver() authorization.RuleResolver {
	if s.cfg.Authorizer != nil {
		rr, _ := s.cfg.Authorizer.(authorization.RuleResolver)
		return rr
	}
	if s.rbac == nil {
		return nil
	}
	return (*syncedRBAC)(s.rbac)
}

// syncedRBAC is the RBAC authorizer once the policy cache has synced.
type syncedRBAC rbacState

var (
	_ authorization.Authorizer   = (*syncedRBAC)(nil)
	_ authorization.RuleResolver = (*syncedRBAC)(nil)
)

// Authorize waits for the policy cache, then decides; system:masters,
// allowed everything, need not wait.
func (a *syncedRBAC) Authorize(ctx context.Context, attrs authorization.Attributes) (authorization.Decision, string, error) {
	if attrs.User != nil && rbac.IsPrivileged(attrs.User) {
		return a.authz.Authorize(ctx, attrs)
	}
	if err := a.cache.waitSynced(ctx); err != nil {
		return authorization.DecisionNoOpinion, "", err
	}
	return a.authz.Authorize(ctx, attrs)
}

// RulesFor waits for the policy cache, then lists u's rules.
func (a *syncedRBAC) RulesFor(ctx context.Context, u *authentication.User, namespace string) ([]authorization.ResourceRule, []authorization.NonResourceRule, bool, error) {
	if err := a.cache.waitSynced(ctx); err != nil {
		return nil, nil, true, err
	}
	return a.authz.RulesFor(ctx, u, namespace)
}

// checkRBACWrite refuses, in RBAC mode, a create (old nil) or update of a
// Role, ClusterRole, RoleBinding or ClusterRoleBinding that would grant
// permissions its requester does not hold, as kube-apiserver's RBAC
// storage does. Writes without a user on ctx are the server's own.
func (s *Server) checkRBACWrite(ctx context.Context, res *resource, obj, old runtime.Object) error {
	if s.rbac == nil || res.info.GVK.Group != rbacv1.GroupName {
		return nil
	}
	u := authentication.UserFrom(ctx)
	if u == nil || rbac.IsPrivileged(u) {
		return nil
	}
	if old != nil && onlyGCFieldsChanged(obj, old) {
		return nil
	}
	if err := s.rbac.cache.waitSynced(ctx); err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	authz := (*syncedRBAC)(s.rbac)
	switch o := obj.(type) {
	case *rbacv1.Role:
		return s.rbac.authz.CheckRoleWrite(ctx, authz, u, rbac.RoleWrite{Resource: "roles", Namespace: o.Namespace, Name: o.Name, Rules: o.Rules})
	case *rbacv1.ClusterRole:
		w := rbac.RoleWrite{Resource: "clusterroles", Name: o.Name, Rules: o.Rules}
		if o.AggregationRule != nil {
			prev, _ := old.(*rbacv1.ClusterRole)
			w.SetsAggregation = prev == nil || !apiequality.Semantic.DeepEqual(prev.AggregationRule, o.AggregationRule)
		}
		return s.rbac.authz.CheckRoleWrite(ctx, authz, u, w)
	case *rbacv1.RoleBinding:
		return s.rbac.authz.CheckBindingWrite(ctx, authz, u, rbac.BindingWrite{Resource: "rolebindings", Namespace: o.Namespace, Name: o.Name, RoleRef: o.RoleRef})
	case *rbacv1.ClusterRoleBinding:
		return s.rbac.authz.CheckBindingWrite(ctx, authz, u, rbac.BindingWrite{Resource: "clusterrolebindings", Name: o.Name, RoleRef: o.RoleRef})
	}
	return nil
}

// onlyGCFieldsChanged reports whether obj differs from old only in what
// the garbage collector and finalizers change (owner references,
// finalizers), which Kubernetes lets through without an escalation check.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	c := obj.DeepCopyObject()
	cm, om := accessor(c), accessor(old)
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetManagedFields(om.GetManagedFields())
	cm.SetResourceVersion(om.GetResourceVersion())
	cm.SetGeneration(om.GetGeneration())
	cm.SetSelfLink(om.GetSelfLink())
	return apiequality.Semantic.DeepEqual(c, old)
}

// reconcileBootstrapPolicy creates the bootstrap ClusterRoles and
// ClusterRoleBindings that are missing and adds to the existing ones what
// they lack (bootstrap.ReconcileClusterRole), as kube-apiserver does at
// start. Objects annotated autoupdate=false are left alone.
func (s *Server) reconcileBootstrapPolicy(ctx context.Context) error {
	roles := s.lookup(rbacv1.SchemeGroupVersion.WithResource("clusterroles"))
	bindings := s.lookup(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
	for _, want := range append(bootstrap.ClusterRoles(), bootstrap.ControllerRoles()...) {
		err := s.reconcileObject(ctx, roles, &want, func(cur runtime.Object) (runtime.Object, bool) {
			out, changed := bootstrap.ReconcileClusterRole(cur.(*rbacv1.ClusterRole), &want)
			return out, changed
		})
		if err != nil {
			return fmt.Errorf("apiserver: reconcile clusterrole %s: %w", want.Name, err)
		}
	}
	for _, want := range append(bootstrap.ClusterRoleBindings(), bootstrap.ControllerRoleBindings()...) {
		var recreate *rbacv1.ClusterRoleBinding
		err := s.reconcileObject(ctx, bindings, &want, func(cur runtime.Object) (runtime.Object, bool) {
			out, changed, again := bootstrap.ReconcileClusterRoleBinding(cur.(*rbacv1.ClusterRoleBinding), &want)
			if again {
				recreate = out
				return nil, false
			}
			return out, changed
		})
		if err == nil && recreate != nil {
			err = s.recreate(ctx, bindings, recreate)
		}
		if err != nil {
			return fmt.Errorf("apiserver: reconcile clusterrolebinding %s: %w", want.Name, err)
		}
	}
	return nil
}

// reconcileObject creates want in res when missing, or stores what
// reconcile makes of the current object when it reports a change.
func (s *Server) reconcileObject(ctx context.Context, res *resource, want runtime.Object, reconcile func(cur runtime.Object) (runtime.Object, bool)) error {
	name := accessor(want).GetName()
	for {
		_, err := s.createObject(ctx, res, "", want.DeepCopyObject(), false)
		if err == nil || !apierrors.IsAlreadyExists(err) {
			return err
		}
		q := &request{verb: "update", res: res, name: name}
		_, _, err = s.write(ctx, q, false, func(cur runtime.Object) (runtime.Object, error) {
			if accessor(cur).GetResourceVersion() == "" {
				return nil, errGoneMeanwhile
			}
			out, changed := reconcile(cur)
			if !changed {
				return nil, errNoChange
			}
			return out, nil
		})
		switch {
		case errors.Is(err, errGoneMeanwhile) || apierrors.IsNotFound(err):
			continue // deleted meanwhile: create it
		case errors.Is(err, errNoChange):
			return nil
		}
		return err
	}
}

var (
	errNoChange      = errors.New("no change")
	errGoneMeanwhile = errors.New("deleted meanwhile")
)

// recreate replaces a binding whose roleRef must change, which no update
// may do: it deletes the stored one (if it still has the old uid) and
// creates obj.
func (s *Server) recreate(ctx context.Context, res *resource, obj *rbacv1.ClusterRoleBinding) error {
	cur := res.strategy.New()
	key := res.key("", obj.Name)
	if err := res.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
		return err
	}
	uid := accessor(cur).GetUID()
	if err := res.store.Delete(ctx, key, res.strategy.New(), &storage.Preconditions{UID: &uid}, nil); err != nil && !storage.IsNotFound(err) {
		return err
	}
	_, err := s.createObject(ctx, res, "", obj, false)
	return err
}

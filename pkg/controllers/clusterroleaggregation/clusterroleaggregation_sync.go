package clusterroleaggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/controller"
)

// roleLister reads ClusterRoles from the cache; *cache.Lister is one. The
// objects it returns are shared and must not be mutated.
type roleLister interface {
	Get(name string) (*rbacv1.ClusterRole, error)
	List(selector labels.Selector) ([]*rbacv1.ClusterRole, error)
}

// updater writes a ClusterRole.
type updater interface {
	Update(ctx context.Context, r *rbacv1.ClusterRole) error
}

// updaterFunc adapts a function to updater.
type updaterFunc func(ctx context.Context, r *rbacv1.ClusterRole) error

// Update implements updater.
func (f updaterFunc) Update(ctx context.Context, r *rbacv1.ClusterRole) error { return f(ctx, r) }

// syncer aggregates one ClusterRole per sync; it keeps no per-sync state
// and is safe for concurrent use by the workers.
type syncer struct {
	roles  roleLister
	writer updater
}

// sync sets the rules of the ClusterRole named key to the union of the
// rules of the roles its aggregationRule selects, if they differ.
func (s *syncer) sync(ctx context.Context, key string) error {
	role, err := s.roles.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := s.aggregate(role)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	out := role.DeepCopy()
	out.Rules = rules
	if err := s.writer.Update(ctx, out); err != nil {
		return fmt.Errorf("update clusterrole %s: %w", key, err)
	}
	return nil
}

// aggregate returns the union of the rules of the roles role's selectors
// match, role itself excluded: selector by selector, the matched roles by
// name, first occurrences kept.
func (s *syncer) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			// Validation refuses such selectors; one that slipped through
			// cannot be acted on, and retrying would not help.
			return nil, controller.Terminal(fmt.Errorf("clusterrole %s: selector %d: %w", role.Name, i, err))
		}
		matched, err := s.roles.List(sel)
		if err != nil {
			return nil, err
		}
		matched = slices.Clone(matched)
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return apiequality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, *r.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}

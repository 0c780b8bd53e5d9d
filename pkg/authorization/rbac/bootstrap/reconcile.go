package bootstrap

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authorization/rbac"
)

// Protected reports whether an object's annotations stop reconciliation:
// rbac.authorization.kubernetes.io/autoupdate=false, as in Kubernetes.
func Protected(annotations map[string]string) bool {
	return annotations[AutoUpdateAnnotation] == "false"
}

// ReconcileClusterRole returns existing with what expected has and it
// lacks: the labels and annotations, the rules not covered by its own
// (appended, split into atomic rules as Kubernetes does), and the
// aggregation selectors. It reports false, and returns nil, when nothing
// is missing or existing is protected. existing is not changed.
func ReconcileClusterRole(existing, expected *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
	if Protected(existing.Annotations) {
		return nil, false
	}
	out := existing.DeepCopy()
	changed := mergeMap(&out.Labels, expected.Labels)
	changed = mergeMap(&out.Annotations, expected.Annotations) || changed
	if expected.AggregationRule != nil {
		if out.AggregationRule == nil {
			out.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, sel := range expected.AggregationRule.ClusterRoleSelectors {
			if !slices.ContainsFunc(out.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool {
				return apiequality.Semantic.DeepEqual(s, sel)
			}) {
				out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, *sel.DeepCopy())
				changed = true
			}
		}
	}
	if _, missing := rbac.Covers(out.Rules, expected.Rules); len(missing) > 0 {
		out.Rules = append(out.Rules, missing...)
		changed = true
	}
	if !changed {
		return nil, false
	}
	return out, true
}

// ReconcileClusterRoleBinding returns existing with the labels,
// annotations and subjects of expected it lacks. When its roleRef differs
// (roleRef cannot be changed) it returns expected's roleRef on a copy
// and recreate, meaning: delete existing and create the result. It
// reports false, and returns nil, when nothing is missing or existing is
// protected. existing is not changed.
func ReconcileClusterRoleBinding(existing, expected *rbacv1.ClusterRoleBinding) (out *rbacv1.ClusterRoleBinding, changed, recreate bool) {
	if Protected(existing.Annotations) {
		return nil, false, false
	}
	out = existing.DeepCopy()
	changed = mergeMap(&out.Labels, expected.Labels)
	changed = mergeMap(&out.Annotations, expected.Annotations) || changed
	for _, s := range expected.Subjects {
		if !slices.Contains(out.Subjects, s) {
			out.Subjects = append(out.Subjects, s)
			changed = true
		}
	}
	if out.RoleRef != expected.RoleRef {
		out.RoleRef = expected.RoleRef
		out.ResourceVersion, out.UID = "", ""
		return out, true, true
	}
	if !changed {
		return nil, false, false
	}
	return out, true, false
}

// mergeMap adds to *dst the keys of src it lacks and reports whether it did.
func mergeMap(dst *map[string]string, src map[string]string) bool {
	changed := false
	for k, val := range src {
		if _, ok := (*dst)[k]; ok {
			continue
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		(*dst)[k] = val
		changed = true
	}
	return changed
}

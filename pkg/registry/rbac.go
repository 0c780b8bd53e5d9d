package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacName validates the names of RBAC objects and of the roles a binding
// refers to: any string that can be one segment of a URL path, as in
// Kubernetes, so that names like "system:node" are valid.
var rbacName apivalidation.ValidateNameFunc = pathSegmentName

// Roles is rbac.authorization.k8s.io/v1 roles: rules over namespaced
// resources, never over non-resource URLs. Like every RBAC object, a role
// may be created by an update, as in Kubernetes, so that clients reconcile
// roles and bindings with PUT alone.
func Roles() Strategy {
	return &Resource[*rbacv1.Role]{
		Meta: Info{
			GVK:      rbacv1.SchemeGroupVersion.WithKind("Role"),
			Resource: "roles", Singular: "role",
			Namespaced: true, AllowCreateOnUpdate: true,
		},
		NewFunc:     func() *rbacv1.Role { return &rbacv1.Role{} },
		NewListFunc: func() runtime.Object { return &rbacv1.RoleList{} },
		NameFunc:    rbacName,
		ValidateFunc: func(r *rbacv1.Role) field.ErrorList {
			var errs field.ErrorList
			for i, rule := range r.Rules {
				errs = append(errs, validatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
			}
			return errs
		},
	}
}

// ClusterRoles is rbac.authorization.k8s.io/v1 clusterroles: rules over
// resources or non-resource URLs, or an aggregation rule whose rules the
// clusterrole-aggregation controller fills in.
func ClusterRoles() Strategy {
	return &Resource[*rbacv1.ClusterRole]{
		Meta: Info{
			GVK:      rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
			Resource: "clusterroles", Singular: "clusterrole",
			AllowCreateOnUpdate: true,
		},
		NewFunc:      func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} },
		NewListFunc:  func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		NameFunc:     rbacName,
		ValidateFunc: validateClusterRole,
	}
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if r.AggregationRule != nil {
		sels := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(sels, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i],
				metav1validation.LabelSelectorValidationOptions{}, sels.Index(i))...)
		}
	}
	return errs
}

// validatePolicyRule checks one rule: verbs are required; a rule names
// either non-resource URLs (cluster roles only) or API groups and
// resources, never both.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fld.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fld.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fld.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// RoleBindings is rbac.authorization.k8s.io/v1 rolebindings: subjects
// bound to a Role or ClusterRole; the roleRef cannot change.
func RoleBindings() Strategy {
	return &Resource[*rbacv1.RoleBinding]{
		Meta: Info{
			GVK:      rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
			Resource: "rolebindings", Singular: "rolebinding",
			Namespaced: true, AllowCreateOnUpdate: true,
		},
		NewFunc:     func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} },
		NewListFunc: func() runtime.Object { return &rbacv1.RoleBindingList{} },
		NameFunc:    rbacName,
		Defaults: func(b *rbacv1.RoleBinding) {
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		ValidateFunc: func(b *rbacv1.RoleBinding) field.ErrorList {
			return validateBinding(b.RoleRef, b.Subjects, []string{"Role", "ClusterRole"}, true)
		},
		ValidateUpdateFunc: func(b, old *rbacv1.RoleBinding) field.ErrorList {
			return validateRoleRefUnchanged(b.RoleRef, old.RoleRef)
		},
	}
}

// ClusterRoleBindings is rbac.authorization.k8s.io/v1 clusterrolebindings:
// subjects bound to a ClusterRole across the cluster; the roleRef cannot
// change.
func ClusterRoleBindings() Strategy {
	return &Resource[*rbacv1.ClusterRoleBinding]{
		Meta: Info{
			GVK:      rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
			Resource: "clusterrolebindings", Singular: "clusterrolebinding",
			AllowCreateOnUpdate: true,
		},
		NewFunc:     func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} },
		NewListFunc: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		NameFunc:    rbacName,
		Defaults: func(b *rbacv1.ClusterRoleBinding) {
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		ValidateFunc: func(b *rbacv1.ClusterRoleBinding) field.ErrorList {
			return validateBinding(b.RoleRef, b.Subjects, []string{"ClusterRole"}, false)
		},
		ValidateUpdateFunc: func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			return validateRoleRefUnchanged(b.RoleRef, old.RoleRef)
		},
	}
}

// defaultBinding fills in the API group of the role reference and of user
// and group subjects; service accounts are in the core group.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, kinds []string, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// validateSubject checks one subject of a binding. A service account of a
// RoleBinding may leave its namespace to the binding's; one of a
// ClusterRoleBinding must name it.
func validateSubject(s rbacv1.Subject, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(fld.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fld.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(ref, old) {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

// pathSegmentName validates a name that must be usable as one URL path
// segment (RBAC objects, references to resources), or, with prefix, the
// start of one.
func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

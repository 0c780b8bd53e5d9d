package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kplane/kplane/pkg/authorization"
)

// RuleAllows reports whether rule permits the request a describes, by
// Kubernetes' matching: verbs and API groups exactly or "*"; the resource
// as "resource" or "resource/subresource" exactly, "*", or "*/subresource";
// resourceNames, when the rule has any, must contain the request's name;
// non-resource paths exactly, by "*", or by a prefix ending in "*".
func RuleAllows(a *authorization.Attributes, rule *rbacv1.PolicyRule) bool {
	if !hasOrAll(rule.Verbs, a.Verb, rbacv1.VerbAll) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule.NonResourceURLs, a.Path)
	}
	return hasOrAll(rule.APIGroups, a.APIGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		resourceNameMatches(rule.ResourceNames, a.Name)
}

// hasOrAll reports whether list holds want or the wildcard all.
func hasOrAll(list []string, want, all string) bool {
	for _, s := range list {
		if s == want || s == all {
			return true
		}
	}
	return false
}

// resourceMatches matches resource (and subresource, when not empty)
// against a rule's resources without building "resource/subresource".
func resourceMatches(ruleResources []string, resource, subresource string) bool {
	for _, r := range ruleResources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		// r is "resource/subresource" or "*/subresource".
		if len(r) == len(resource)+1+len(subresource) && strings.HasPrefix(r, resource) &&
			r[len(resource)] == '/' && strings.HasSuffix(r, subresource) {
			return true
		}
		if len(r) == 2+len(subresource) && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// resourceNameMatches: no names match every request; otherwise the
// request must name one of them (a list or create names none).
func resourceNameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches path against a rule's URLs: "*", exact, or
// a prefix ending in "*".
func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		if nonResourceURLCovers(u, path) {
			return true
		}
	}
	return false
}

// nonResourceURLCovers reports whether the rule URL owner covers sub, which
// may itself be a pattern (for escalation checks): equal, or owner ends in
// "*" and sub starts with what precedes it.
func nonResourceURLCovers(owner, sub string) bool {
	if owner == sub || owner == rbacv1.NonResourceAll {
		return true
	}
	return strings.HasSuffix(owner, "*") && strings.HasPrefix(sub, strings.TrimRight(owner, "*"))
}

package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Covers reports whether the owner rules grant everything the servant
// rules do, and returns what they miss, one atomic rule (one group,
// resource, verb and resource name; or one URL and verb) each. It decides
// atomic rule by atomic rule, so a servant rule held only by the union of
// several owner rules is covered.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, r := range servant {
		for _, sub := range BreakdownRule(r) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(&o, &sub) }) {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// BreakdownRule splits rule into atomic rules, each with at most one API
// group, resource, verb and resource name, or one non-resource URL and verb.
func BreakdownRule(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				if len(rule.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}})
					continue
				}
				for _, n := range rule.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range rule.NonResourceURLs {
		for _, v := range rule.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

// ruleCovers reports whether owner grants everything the atomic rule sub
// does.
func ruleCovers(owner, sub *rbacv1.PolicyRule) bool {
	if !coversAll(owner.Verbs, sub.Verbs, rbacv1.VerbAll) || !coversAll(owner.APIGroups, sub.APIGroups, rbacv1.APIGroupAll) {
		return false
	}
	if !resourcesCover(owner.Resources, sub.Resources) {
		return false
	}
	for _, u := range sub.NonResourceURLs {
		if !slices.ContainsFunc(owner.NonResourceURLs, func(o string) bool { return nonResourceURLCovers(o, u) }) {
			return false
		}
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	// An owner restricted to names covers only rules restricted to them.
	return len(sub.ResourceNames) > 0 && coversAll(owner.ResourceNames, sub.ResourceNames, "")
}

// coversAll reports whether set holds every element of want, or all (when
// not empty).
func coversAll(set, want []string, all string) bool {
	if all != "" && slices.Contains(set, all) {
		return true
	}
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// resourcesCover: "*" covers all; otherwise each resource must be listed,
// or be a subresource whose "*/sub" is listed.
func resourcesCover(set, want []string) bool {
	if slices.Contains(set, rbacv1.ResourceAll) {
		return true
	}
	for _, w := range want {
		if slices.Contains(set, w) {
			continue
		}
		_, sub, ok := strings.Cut(w, "/")
		if !ok || !slices.Contains(set, "*/"+sub) {
			return false
		}
	}
	return true
}

// CompactString formats rule as Kubernetes does in escalation messages:
// {APIGroups:[""], Resources:["secrets"], Verbs:["get"]}, listing only the
// fields that are set.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// compactRules merges the atomic rules over one group and resource (and at
// most one resource name) into one rule with all their verbs, to shorten
// escalation messages.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct{ group, resource, name string }
	var out []rbacv1.PolicyRule
	merged := map[key]int{}
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		k := key{r.APIGroups[0], r.Resources[0], ""}
		if len(r.ResourceNames) == 1 {
			k.name = "\x00" + r.ResourceNames[0]
		}
		if i, ok := merged[k]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[k] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

package nodefit

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MatchesNodeSelector reports whether node satisfies both the pod's
// spec.nodeSelector and its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution), as the scheduler's
// NodeAffinity filter checks them. A pod with neither matches every node.
func MatchesNodeSelector(spec *corev1.PodSpec, node *corev1.Node) bool {
	if len(spec.NodeSelector) > 0 && !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	return MatchesNodeSelectorTerms(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, node)
}

// MatchesNodeSelectorTerms reports whether node matches any of terms. A
// term matches when all its matchExpressions (against labels) and all its
// matchFields (against metadata.name) hold; a term with neither matches
// nothing, and so does an empty list of terms.
func MatchesNodeSelectorTerms(terms []corev1.NodeSelectorTerm, node *corev1.Node) bool {
	for i := range terms {
		if matchesTerm(&terms[i], node) {
			return true
		}
	}
	return false
}

func matchesTerm(t *corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		r := &t.MatchExpressions[i]
		v, ok := node.Labels[r.Key]
		if !matchesRequirement(r, v, ok) {
			return false
		}
	}
	for i := range t.MatchFields {
		r := &t.MatchFields[i]
		if r.Key != metav1.ObjectNameField {
			// The API server admits no other field; an unknown one can not hold.
			return false
		}
		if !matchesRequirement(r, node.Name, true) {
			return false
		}
	}
	return true
}

// matchesRequirement checks one requirement against value, present or not.
func matchesRequirement(r *corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		want, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

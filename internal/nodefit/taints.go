package nodefit

import corev1 "k8s.io/api/core/v1"

// Tolerates reports whether toleration t tolerates taint: the effects
// match (an empty effect matches all), the keys match (an empty key matches
// all; the API server admits it only with operator Exists), and for operator Equal (the default) the
// values are equal.
func Tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return t.Value == taint.Value
	}
	return false
}

// TaintTolerated reports whether any of tolerations tolerates taint.
func TaintTolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if Tolerates(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

// UntoleratedTaint returns the first of taints that keep selects and no
// toleration tolerates, or nil. A nil keep selects every taint.
func UntoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration, keep func(*corev1.Taint) bool) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if keep != nil && !keep(t) {
			continue
		}
		if !TaintTolerated(tolerations, t) {
			return t
		}
	}
	return nil
}

// ScheduleBlocking selects the taints that keep new pods off a node:
// NoSchedule and NoExecute.
func ScheduleBlocking(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// Evicting selects the NoExecute taints, which also remove running pods.
func Evicting(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }

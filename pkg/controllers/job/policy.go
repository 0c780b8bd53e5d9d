package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// matchFailurePolicy returns the action of the first rule of policy that a
// Failed pod matches, with the message Kubernetes gives the match, or nil.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) (*batchv1.PodFailurePolicyAction, string) {
	if policy == nil || p.Status.Phase != corev1.PodFailed {
		return nil, ""
	}
	for i, rule := range policy.Rules {
		if r := rule.OnExitCodes; r != nil {
			for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
				term := cs.State.Terminated
				if term == nil || term.ExitCode == 0 || r.ContainerName != nil && *r.ContainerName != cs.Name {
					continue
				}
				in := slices.Contains(r.Values, term.ExitCode)
				if in == (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) {
					return &rule.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
						cs.Name, p.Namespace, p.Name, term.ExitCode, rule.Action, i)
				}
			}
		}
		for _, pattern := range rule.OnPodConditions {
			want := pattern.Status
			if want == "" {
				want = corev1.ConditionTrue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == pattern.Type && c.Status == want {
					return &rule.Action, fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d",
						p.Namespace, p.Name, c.Type, rule.Action, i)
				}
			}
		}
	}
	return nil, ""
}

// matchSuccessPolicy returns the index of the first rule of policy the
// succeeded indexes meet.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, succeeded indexSet, completions int) (int, bool) {
	if policy == nil {
		return 0, false
	}
	for i, rule := range policy.Rules {
		if rule.SucceededIndexes == nil {
			if rule.SucceededCount != nil && len(succeeded) >= int(*rule.SucceededCount) {
				return i, true
			}
			continue
		}
		want := parseIndexes(*rule.SucceededIndexes, completions)
		got := 0
		for idx := range want {
			if succeeded.has(idx) {
				got++
			}
		}
		if rule.SucceededCount != nil {
			if got >= int(*rule.SucceededCount) {
				return i, true
			}
		} else if len(want) > 0 && got == len(want) {
			return i, true
		}
	}
	return 0, false
}

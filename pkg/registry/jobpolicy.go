package registry

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of a job's pod failure policy, as in Kubernetes.
const (
	maxPodFailurePolicyRules      = 20
	maxPodFailurePolicyExitCodes  = 255
	maxPodFailurePolicyConditions = 20
)

var (
	podFailureActions = sets.New(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore)
	exitCodeOperators = sets.New(batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	conditionStatuses = sets.New(corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown)
)

// validatePodFailurePolicy checks the rules that decide what a failed pod
// of a job means.
func validatePodFailurePolicy(s *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := fld.Child("rules")
	if n := len(s.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rules, n, maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range s.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range s.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range s.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailureRule(s, &s.PodFailurePolicy.Rules[i], rules.Index(i), containers)...)
	}
	return errs
}

func validatePodFailureRule(s *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, fld *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	action := fld.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(action, fmt.Sprintf("valid values: %q", sets.List(podFailureActions))))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(action, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !podFailureActions.Has(rule.Action):
		errs = append(errs, field.NotSupported(action, rule.Action, sets.List(podFailureActions)))
	}
	if ec := rule.OnExitCodes; ec != nil {
		p := fld.Child("onExitCodes")
		op := p.Child("operator")
		switch {
		case ec.Operator == "":
			errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", sets.List(exitCodeOperators))))
		case !exitCodeOperators.Has(ec.Operator):
			errs = append(errs, field.NotSupported(op, ec.Operator, sets.List(exitCodeOperators)))
		}
		if ec.ContainerName != nil && !containers.Has(*ec.ContainerName) {
			errs = append(errs, field.Invalid(p.Child("containerName"), *ec.ContainerName, "must be one of the container or initContainer names in the pod template"))
		}
		values := p.Child("values")
		switch n := len(ec.Values); {
		case n == 0:
			errs = append(errs, field.Invalid(values, ec.Values, "at least one value is required"))
		case n > maxPodFailurePolicyExitCodes:
			errs = append(errs, field.TooMany(values, n, maxPodFailurePolicyExitCodes))
		}
		seen := sets.New[int32]()
		for j, v := range ec.Values {
			if ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
				errs = append(errs, field.Invalid(values.Index(j), v, "must not be 0 for the In operator"))
			}
			if seen.Has(v) {
				errs = append(errs, field.Duplicate(values.Index(j), v))
			}
			seen.Insert(v)
		}
		if !slices.IsSorted(ec.Values) {
			errs = append(errs, field.Invalid(values, ec.Values, "must be ordered"))
		}
	}
	if conds := rule.OnPodConditions; len(conds) > 0 {
		p := fld.Child("onPodConditions")
		if len(conds) > maxPodFailurePolicyConditions {
			errs = append(errs, field.TooMany(p, len(conds), maxPodFailurePolicyConditions))
		}
		for j, c := range conds {
			errs = append(errs, metav1validation.ValidateLabelName(string(c.Type), p.Index(j).Child("type"))...)
			status := p.Index(j).Child("status")
			switch {
			case c.Status == "":
				errs = append(errs, field.Required(status, fmt.Sprintf("valid values: %q", sets.List(conditionStatuses))))
			case !conditionStatuses.Has(c.Status):
				errs = append(errs, field.NotSupported(status, c.Status, sets.List(conditionStatuses)))
			}
		}
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(fld, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(fld, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

// validateJobStatus checks the counters of a job's status; a write through
// the main resource keeps the stored status, so only status writes can
// fail here.
func validateJobStatus(st *batchv1.JobStatus) field.ErrorList {
	fld := field.NewPath("status")
	var errs field.ErrorList
	errs = append(errs, validateNonNegative(int64(st.Active), fld.Child("active"))...)
	errs = append(errs, validateNonNegative(int64(st.Succeeded), fld.Child("succeeded"))...)
	errs = append(errs, validateNonNegative(int64(st.Failed), fld.Child("failed"))...)
	if st.Ready != nil {
		errs = append(errs, validateNonNegative(int64(*st.Ready), fld.Child("ready"))...)
	}
	if st.Terminating != nil {
		errs = append(errs, validateNonNegative(int64(*st.Terminating), fld.Child("terminating"))...)
	}
	return errs
}

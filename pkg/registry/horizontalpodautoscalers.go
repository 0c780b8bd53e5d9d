package registry

import (
	"fmt"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits kube-apiserver puts on an HPA's scaling rules.
const (
	hpaMaxPeriodSeconds              = 1800
	hpaMaxStabilizationWindowSeconds = 3600
	// hpaDefaultCPUUtilization is the target of an HPA that names no metric.
	hpaDefaultCPUUtilization = 80
)

// HorizontalPodAutoscalers is autoscaling/v2 horizontalpodautoscalers, the
// version the objects are stored in (autoscaling/v1 is served from the same
// store, see HorizontalPodAutoscalersV1): a status subresource, and in the
// "all" category as kubectl get all lists them.
func HorizontalPodAutoscalers() Strategy {
	return hpaStrategy(hpaResource(false))
}

// hpaStrategy gives an HPA Resource Kubernetes' update rules: an HPA
// already at minReplicas 0 may stay there without the HPAScaleToZero gate.
func hpaStrategy(r *Resource[*autoscalingv2.HorizontalPodAutoscaler]) Strategy {
	return updateRules[*autoscalingv2.HorizontalPodAutoscaler]{r, func(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
		return validateHPAUpdate(h, old, r.ValidateFunc)
	}}
}

// validateHPAUpdate checks an update of h: the create rules, but with
// minReplicas 0 allowed when old has it, and the status.
func validateHPAUpdate(h, old *autoscalingv2.HorizontalPodAutoscaler, create func(*autoscalingv2.HorizontalPodAutoscaler) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	if old.Spec.MinReplicas != nil && *old.Spec.MinReplicas == 0 {
		errs = validateHPA(h, 0)
	} else {
		errs = create(h)
	}
	return append(errs, validateHPAStatus(&h.Status)...)
}

// hpaResource is the v2 strategy; scaleToZero allows minReplicas 0, as the
// HPAScaleToZero feature gate does in Kubernetes (off by default).
func hpaResource(scaleToZero bool) *Resource[*autoscalingv2.HorizontalPodAutoscaler] {
	return &Resource[*autoscalingv2.HorizontalPodAutoscaler]{
		Meta: Info{
			GVK:      autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
			Resource: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler",
			ShortNames: []string{"hpa"}, Categories: []string{"all"},
			Namespaced: true, Status: true,
		},
		NewFunc:     func() *autoscalingv2.HorizontalPodAutoscaler { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewListFunc: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Spec:        func(h *autoscalingv2.HorizontalPodAutoscaler) any { return h.Spec },
		CopyStatus:  func(dst, src *autoscalingv2.HorizontalPodAutoscaler) { dst.Status = src.Status },
		ResetForStatus: func(h, old *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec = old.Spec
		},
		ResetStatus: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
		},
		Defaults: defaultHPA,
		ValidateFunc: func(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
			lower := int32(1)
			if scaleToZero {
				lower = 0
			}
			return validateHPA(h, lower)
		},
	}
}

// defaultHPA sets the defaults of an autoscaling/v2 HPA: minReplicas 1, a
// CPU utilization target of 80% when no metric is named, and, when a
// behavior is given, the default rules for what it leaves out.
func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	s := &h.Spec
	if s.MinReplicas == nil {
		s.MinReplicas = ptr[int32](1)
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](hpaDefaultCPUUtilization)},
			},
		}}
	}
	if s.Behavior != nil {
		s.Behavior.ScaleUp = defaultScalingRules(s.Behavior.ScaleUp, 0, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
		s.Behavior.ScaleDown = defaultScalingRules(s.Behavior.ScaleDown, 300, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
	}
}

// defaultScalingRules fills what rules leave unset: the stabilization
// window, selectPolicy Max and the policies.
func defaultScalingRules(rules *autoscalingv2.HPAScalingRules, window int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	if rules == nil {
		rules = &autoscalingv2.HPAScalingRules{}
	}
	if rules.StabilizationWindowSeconds == nil {
		rules.StabilizationWindowSeconds = ptr(window)
	}
	if rules.SelectPolicy == nil {
		rules.SelectPolicy = ptr(autoscalingv2.MaxChangePolicySelect)
	}
	if len(rules.Policies) == 0 {
		rules.Policies = policies
	}
	return rules
}

func validateHPA(h *autoscalingv2.HorizontalPodAutoscaler, minLower int32) field.ErrorList {
	spec := field.NewPath("spec")
	s := &h.Spec
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < minLower {
		errs = append(errs, field.Invalid(spec.Child("minReplicas"), *s.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", minLower)))
	}
	if s.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than 0"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(spec.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateCrossVersionRef(s.ScaleTargetRef, spec.Child("scaleTargetRef"))...)
	scalesToZero := false
	for i := range s.Metrics {
		m := &s.Metrics[i]
		errs = append(errs, validateMetricSpec(m, spec.Child("metrics").Index(i))...)
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			scalesToZero = true
		}
	}
	if s.MinReplicas != nil && *s.MinReplicas == 0 && !scalesToZero {
		errs = append(errs, field.Forbidden(spec.Child("metrics"), "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	if b := s.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, spec.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, spec.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateHPAStatus(st *autoscalingv2.HorizontalPodAutoscalerStatus) field.ErrorList {
	status := field.NewPath("status")
	errs := validateNonNegative(int64(st.CurrentReplicas), status.Child("currentReplicas"))
	return append(errs, validateNonNegative(int64(st.DesiredReplicas), status.Child("desiredReplicas"))...)
}

func validateCrossVersionRef(ref autoscalingv2.CrossVersionObjectReference, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(fld.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(fld.Child(f.name), f.value, msg))
		}
	}
	return errs
}

// metricSourceTypes are the metric types in the order Kubernetes lists
// them in its messages.
var metricSourceTypes = []autoscalingv2.MetricSourceType{
	autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType,
	autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType,
}

func validateMetricSpec(m *autoscalingv2.MetricSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(fld.Child("type"), "must specify a metric source type"))
	}
	if !slices.Contains(metricSourceTypes, m.Type) {
		errs = append(errs, field.NotSupported(fld.Child("type"), m.Type, metricSourceTypes))
	}
	// The sources set, in the order they are checked; only the first is
	// validated, the others are refused below.
	var present []string
	if m.Object != nil {
		if present = append(present, "object"); len(present) == 1 {
			errs = append(errs, validateObjectMetric(m.Object, fld.Child("object"))...)
		}
	}
	if m.External != nil {
		if present = append(present, "external"); len(present) == 1 {
			errs = append(errs, validateExternalMetric(m.External, fld.Child("external"))...)
		}
	}
	if m.Pods != nil {
		if present = append(present, "pods"); len(present) == 1 {
			errs = append(errs, validatePodsMetric(m.Pods, fld.Child("pods"))...)
		}
	}
	if m.Resource != nil {
		if present = append(present, "resource"); len(present) == 1 {
			errs = append(errs, validateResourceMetric(string(m.Resource.Name), "", false, m.Resource.Target, fld.Child("resource"))...)
		}
	}
	if m.ContainerResource != nil {
		if present = append(present, "containerResource"); len(present) == 1 {
			c := m.ContainerResource
			errs = append(errs, validateResourceMetric(string(c.Name), c.Container, true, c.Target, fld.Child("containerResource"))...)
		}
	}
	expected := map[autoscalingv2.MetricSourceType]string{
		autoscalingv2.ObjectMetricSourceType: "object", autoscalingv2.PodsMetricSourceType: "pods",
		autoscalingv2.ResourceMetricSourceType: "resource", autoscalingv2.ExternalMetricSourceType: "external",
		autoscalingv2.ContainerResourceMetricSourceType: "containerResource",
	}[m.Type]
	if expected != "" && !slices.Contains(present, expected) {
		errs = append(errs, field.Required(fld.Child(expected), "must populate information for the given metric source"))
	}
	if expected == "" {
		// Kubernetes reports an unknown type twice, once per check.
		errs = append(errs, field.NotSupported(fld.Child("type"), m.Type, metricSourceTypes))
	}
	if len(present) != 1 {
		others := slices.DeleteFunc(slices.Clone(present), func(s string) bool { return s == expected })
		slices.Sort(others)
		for _, o := range others {
			errs = append(errs, field.Forbidden(fld.Child(o), "must populate the given metric source only"))
		}
	}
	return errs
}

func validateObjectMetric(src *autoscalingv2.ObjectMetricSource, fld *field.Path) field.ErrorList {
	errs := validateCrossVersionRef(src.DescribedObject, fld.Child("describedObject"))
	errs = append(errs, validateMetricIdentifier(src.Metric, fld.Child("metric"))...)
	errs = append(errs, validateMetricTarget(src.Target, fld.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fld.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalMetric(src *autoscalingv2.ExternalMetricSource, fld *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, fld.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, fld.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fld.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(fld.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsMetric(src *autoscalingv2.PodsMetricSource, fld *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, fld.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, fld.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fld.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

// validateResourceMetric checks a Resource or, with isContainer, a
// ContainerResource metric source.
func validateResourceMetric(name, container string, isContainer bool, target autoscalingv2.MetricTarget, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fld.Child("name"), "must specify a resource name"))
	} else if isContainer {
		errs = append(errs, validateContainerResourceName(name, fld.Child("name"))...)
	}
	if isContainer {
		if container == "" {
			errs = append(errs, field.Required(fld.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validation.IsDNS1123Label(container) {
				errs = append(errs, field.Invalid(fld.Child("container"), container, msg))
			}
		}
	}
	errs = append(errs, validateMetricTarget(target, fld.Child("target"))...)
	if target.AverageUtilization == nil && target.AverageValue == nil {
		errs = append(errs, field.Required(fld.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		errs = append(errs, field.Forbidden(fld.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

// validateContainerResourceName checks the resource name of a container
// metric: a qualified name, and one of the standard container resources
// when it has no domain, as Kubernetes requires.
func validateContainerResourceName(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	standard := []string{"cpu", "memory", "ephemeral-storage"}
	if !slices.Contains(standard, name) && !hasDomain(name) && !isHugePages(name) {
		return field.ErrorList{field.Invalid(fld, name, "must be a standard resource for containers")}
	}
	return nil
}

func hasDomain(name string) bool { return slices.Contains([]byte(name), '/') }

func isHugePages(name string) bool { return len(name) > 10 && name[:10] == "hugepages-" }

func validateMetricTarget(t autoscalingv2.MetricTarget, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(fld.Child("type"), "must specify a metric target type"))
	}
	switch t.Type {
	case autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType:
	default:
		errs = append(errs, field.Invalid(fld.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(fld.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(fld.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(fld.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, fld *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(fld.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(fld.Child("name"), id.Name, msg))
	}
	if id.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(id.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	}
	return errs
}

func validateScalingRules(rules *autoscalingv2.HPAScalingRules, fld *field.Path) field.ErrorList {
	if rules == nil {
		return nil
	}
	var errs field.ErrorList
	if w := rules.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(fld.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > hpaMaxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(fld.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %d", hpaMaxStabilizationWindowSeconds)))
		}
	}
	selects := []autoscalingv2.ScalingPolicySelect{autoscalingv2.DisabledPolicySelect, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect}
	if p := rules.SelectPolicy; p != nil && !slices.Contains(selects, *p) {
		errs = append(errs, field.NotSupported(fld.Child("selectPolicy"), *p, selects))
	}
	policies := fld.Child("policies")
	if len(rules.Policies) == 0 {
		errs = append(errs, field.Required(policies, "must specify at least one Policy"))
	}
	types := []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PercentScalingPolicy, autoscalingv2.PodsScalingPolicy}
	for i, p := range rules.Policies {
		at := policies.Index(i)
		if !slices.Contains(types, p.Type) {
			errs = append(errs, field.NotSupported(at.Child("type"), p.Type, types))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(at.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(at.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > hpaMaxPeriodSeconds {
			errs = append(errs, field.Invalid(at.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", hpaMaxPeriodSeconds)))
		}
	}
	if t := rules.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(fld.Child("tolerance"), t.String(), "must be greater than or equal to zero"))
	}
	return errs
}

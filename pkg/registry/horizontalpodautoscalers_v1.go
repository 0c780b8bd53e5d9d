package registry

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The annotations in which autoscaling/v1 keeps what only autoscaling/v2
// can express, as Kubernetes does.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// hpaSpecAnnotations and hpaStatusAnnotations are the annotations that
// carry spec and status.
var (
	hpaSpecAnnotations   = []string{hpaMetricsAnnotation, hpaBehaviorAnnotation}
	hpaStatusAnnotations = []string{hpaCurrentMetricsAnnotation, hpaConditionsAnnotation}
)

// hpaV1 serves autoscaling/v1 horizontalpodautoscalers from the
// autoscaling/v2 store.
type hpaV1 struct {
	updateRules[*autoscalingv1.HorizontalPodAutoscaler]
}

var _ VersionConverter = hpaV1{}

// HorizontalPodAutoscalersV1 is autoscaling/v1 horizontalpodautoscalers:
// the objects of HorizontalPodAutoscalers seen through autoscaling/v1, the
// metrics other than a CPU utilization target, the behavior, the current
// metrics and the conditions kept in annotations. Validation is that of
// autoscaling/v2, with its field paths, as in Kubernetes.
func HorizontalPodAutoscalersV1() Strategy {
	v2 := hpaResource(false)
	r := &Resource[*autoscalingv1.HorizontalPodAutoscaler]{
		Meta: Info{
			GVK:      autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
			Resource: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler",
			ShortNames: []string{"hpa"}, Categories: []string{"all"},
			Namespaced: true, Status: true,
		},
		NewFunc:     func() *autoscalingv1.HorizontalPodAutoscaler { return &autoscalingv1.HorizontalPodAutoscaler{} },
		NewListFunc: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		Spec: func(h *autoscalingv1.HorizontalPodAutoscaler) any {
			v, err := hpaToV2(h)
			if err != nil {
				return h.Spec
			}
			return v.Spec
		},
		CopyStatus: func(dst, src *autoscalingv1.HorizontalPodAutoscaler) {
			dst.Status = src.Status
			dst.Annotations = copyAnnotations(dst.Annotations, src.Annotations, hpaStatusAnnotations)
		},
		ResetForStatus: func(h, old *autoscalingv1.HorizontalPodAutoscaler) {
			h.Spec = old.Spec
			h.Annotations = copyAnnotations(h.Annotations, old.Annotations, hpaSpecAnnotations)
		},
		ResetStatus: func(h *autoscalingv1.HorizontalPodAutoscaler) {
			h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
			h.Annotations = copyAnnotations(h.Annotations, nil, hpaStatusAnnotations)
		},
		Defaults: func(h *autoscalingv1.HorizontalPodAutoscaler) {
			if h.Spec.MinReplicas == nil {
				h.Spec.MinReplicas = ptr[int32](1)
			}
		},
		ValidateFunc: func(h *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
			v, err := hpaToV2(h)
			if err != nil {
				return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error())}
			}
			return v2.ValidateFunc(v)
		},
	}
	return hpaV1{updateRules[*autoscalingv1.HorizontalPodAutoscaler]{r, func(h, old *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
		n, err := hpaToV2(h)
		if err != nil {
			return r.ValidateFunc(h) // reports the annotation
		}
		o, err := hpaToV2(old)
		if err != nil {
			o = &autoscalingv2.HorizontalPodAutoscaler{}
		}
		return validateHPAUpdate(n, o, v2.ValidateFunc)
	}}}
}

// StorageGVK implements VersionConverter.
func (hpaV1) StorageGVK() schema.GroupVersionKind {
	return autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
}

// ToStorage implements VersionConverter. The result carries autoscaling/v2's
// defaults, which Kubernetes applies whenever it reads the stored object.
func (hpaV1) ToStorage(obj runtime.Object) (runtime.Object, error) {
	h, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("not an autoscaling/v1 HorizontalPodAutoscaler: %T", obj)
	}
	out, err := hpaToV2(h)
	if err != nil {
		return nil, err
	}
	defaultHPA(out)
	return out, nil
}

// FromStorage implements VersionConverter.
func (hpaV1) FromStorage(obj runtime.Object) (runtime.Object, error) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("not an autoscaling/v2 HorizontalPodAutoscaler: %T", obj)
	}
	return hpaToV1(h)
}

// copyAnnotations returns dst with the keys of src among keys (and only
// those) in place of its own; nil when nothing is left.
func copyAnnotations(dst, src map[string]string, keys []string) map[string]string {
	out := make(map[string]string, len(dst)+len(keys))
	for k, v := range dst {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
		if v, ok := src[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 && dst == nil {
		return nil
	}
	return out
}

func isCPUUtilization(m *autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
		m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// hpaToV1 converts an autoscaling/v2 HPA into autoscaling/v1; in is not changed.
func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    copyPtr(in.Spec.MinReplicas),
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	var others []autoscalingv1.MetricSpec
	for i := range in.Spec.Metrics {
		m := &in.Spec.Metrics[i]
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptr(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		others = append(others, metricSpecToV1(m))
	}
	st := &in.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: copyPtr(st.ObservedGeneration),
		LastScaleTime:      st.LastScaleTime.DeepCopy(),
		CurrentReplicas:    st.CurrentReplicas,
		DesiredReplicas:    st.DesiredReplicas,
	}
	var current []autoscalingv1.MetricStatus
	for i := range st.CurrentMetrics {
		m := &st.CurrentMetrics[i]
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptr(*m.Resource.Current.AverageUtilization)
		}
		current = append(current, metricStatusToV1(m))
	}
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	for _, c := range st.Conditions {
		conds = append(conds, autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	ann := copyAnnotations(out.Annotations, nil, append(hpaSpecAnnotations, hpaStatusAnnotations...))
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = string(b)
		return nil
	}
	if len(others) > 0 {
		if err := set(hpaMetricsAnnotation, others); err != nil {
			return nil, err
		}
	}
	if len(current) > 0 {
		if err := set(hpaCurrentMetricsAnnotation, current); err != nil {
			return nil, err
		}
	}
	if in.Spec.Behavior != nil {
		if err := set(hpaBehaviorAnnotation, behaviorForAnnotation(in.Spec.Behavior)); err != nil {
			return nil, err
		}
	}
	if len(conds) > 0 {
		if err := set(hpaConditionsAnnotation, conds); err != nil {
			return nil, err
		}
	}
	out.Annotations = ann
	return out, nil
}

// hpaToV2 converts an autoscaling/v1 HPA into autoscaling/v2, taking back
// from the annotations what v1 cannot express; in is not changed.
func hpaToV2(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    copyPtr(in.Spec.MinReplicas),
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(*t)},
			},
		}}
	}
	st := &in.Status
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: copyPtr(st.ObservedGeneration),
		LastScaleTime:      st.LastScaleTime.DeepCopy(),
		CurrentReplicas:    st.CurrentReplicas,
		DesiredReplicas:    st.DesiredReplicas,
	}
	if c := st.CurrentCPUUtilizationPercentage; c != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{
				Name:    corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(*c)},
			},
		}}
	}
	ann := in.Annotations
	decode := func(key string, into any) error {
		if err := json.Unmarshal([]byte(ann[key]), into); err != nil {
			return fmt.Errorf("annotation %s: %w", key, err)
		}
		return nil
	}
	if _, ok := ann[hpaMetricsAnnotation]; ok {
		var others []autoscalingv1.MetricSpec
		if err := decode(hpaMetricsAnnotation, &others); err != nil {
			return nil, err
		}
		for i := range others {
			out.Spec.Metrics = append(out.Spec.Metrics, metricSpecToV2(&others[i]))
		}
	}
	if _, ok := ann[hpaCurrentMetricsAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if err := decode(hpaCurrentMetricsAnnotation, &current); err != nil {
			return nil, err
		}
		// The annotation has every current metric, CPU included, with more
		// detail than the v1 field.
		out.Status.CurrentMetrics = nil
		for i := range current {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(&current[i]))
		}
	}
	if _, ok := ann[hpaBehaviorAnnotation]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if err := decode(hpaBehaviorAnnotation, &b); err != nil {
			return nil, err
		}
		out.Spec.Behavior = &b
	}
	if _, ok := ann[hpaConditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if err := decode(hpaConditionsAnnotation, &conds); err != nil {
			return nil, err
		}
		for _, c := range conds {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			})
		}
	}
	out.Annotations = copyAnnotations(out.Annotations, nil, append(hpaSpecAnnotations, hpaStatusAnnotations...))
	return out, nil
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func quantityPtr(q resource.Quantity) *resource.Quantity {
	if q.IsZero() {
		return nil
	}
	return &q
}

func quantityOf(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return q.DeepCopy()
}

// utilizationAndAverage splits a v2 target into the v1 annotation's fields.
func utilizationAndAverage(t autoscalingv2.MetricTarget) (*int32, *resource.Quantity) {
	return copyPtr(t.AverageUtilization), copyPtrQuantity(t.AverageValue)
}

func copyPtrQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

// averageOrUtilization is the v2 target of a v1 resource metric.
func averageOrUtilization(util *int32, avg *resource.Quantity) autoscalingv2.MetricTarget {
	if util != nil {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: copyPtr(util)}
	}
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: copyPtrQuantity(avg)}
}

func metricSpecToV1(m *autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference{Kind: s.DescribedObject.Kind, Name: s.DescribedObject.Name, APIVersion: s.DescribedObject.APIVersion},
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector.DeepCopy(),
			TargetValue:  quantityOf(s.Target.Value),
			AverageValue: copyPtrQuantity(s.Target.AverageValue),
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy(), TargetAverageValue: quantityOf(s.Target.AverageValue)}
	}
	if s := m.Resource; s != nil {
		u, a := utilizationAndAverage(s.Target)
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name, TargetAverageUtilization: u, TargetAverageValue: a}
	}
	if s := m.ContainerResource; s != nil {
		u, a := utilizationAndAverage(s.Target)
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, TargetAverageUtilization: u, TargetAverageValue: a}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector.DeepCopy(),
			TargetValue: copyPtrQuantity(s.Target.Value), TargetAverageValue: copyPtrQuantity(s.Target.AverageValue),
		}
	}
	return out
}

func metricSpecToV2(m *autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: quantityPtr(s.TargetValue)}
		if s.AverageValue != nil {
			t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: copyPtrQuantity(s.AverageValue)}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: s.Target.Kind, Name: s.Target.Name, APIVersion: s.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Target:          t,
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantityPtr(s.TargetAverageValue)},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: averageOrUtilization(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, Target: averageOrUtilization(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := m.External; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: copyPtrQuantity(s.TargetValue)}
		if s.TargetAverageValue != nil {
			t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: copyPtrQuantity(s.TargetAverageValue)}
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector.DeepCopy()},
			Target: t,
		}
	}
	return out
}

func metricStatusToV1(m *autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:       autoscalingv1.CrossVersionObjectReference{Kind: s.DescribedObject.Kind, Name: s.DescribedObject.Name, APIVersion: s.DescribedObject.APIVersion},
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector.DeepCopy(),
			CurrentValue: quantityOf(s.Current.Value),
			AverageValue: copyPtrQuantity(s.Current.AverageValue),
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy(), CurrentAverageValue: quantityOf(s.Current.AverageValue)}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: copyPtr(s.Current.AverageUtilization), CurrentAverageValue: quantityOf(s.Current.AverageValue)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: copyPtr(s.Current.AverageUtilization), CurrentAverageValue: quantityOf(s.Current.AverageValue)}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector.DeepCopy(),
			CurrentValue: quantityOf(s.Current.Value), CurrentAverageValue: copyPtrQuantity(s.Current.AverageValue),
		}
	}
	return out
}

func metricStatusToV2(m *autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: s.Target.Kind, Name: s.Target.Name, APIVersion: s.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Current:         autoscalingv2.MetricValueStatus{Value: quantityPtr(s.CurrentValue), AverageValue: copyPtrQuantity(s.AverageValue)},
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{AverageValue: quantityPtr(s.CurrentAverageValue)},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{AverageUtilization: copyPtr(s.CurrentAverageUtilization), AverageValue: quantityPtr(s.CurrentAverageValue)}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, Current: autoscalingv2.MetricValueStatus{AverageUtilization: copyPtr(s.CurrentAverageUtilization), AverageValue: quantityPtr(s.CurrentAverageValue)}}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{Value: quantityPtr(s.CurrentValue), AverageValue: copyPtrQuantity(s.CurrentAverageValue)},
		}
	}
	return out
}

// HPAToV2 returns h, an autoscaling/v1 HorizontalPodAutoscaler, as
// autoscaling/v2 sees it (what the annotations keep taken back), for
// readers that handle one version only, such as table printers. h is not
// changed.
func HPAToV2(h *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return hpaToV2(h)
}

// The behavior annotation has the field names of Kubernetes' internal
// types (ScaleUp, StabilizationWindowSeconds, ...), as written by
// kube-apiserver; reading it back is case-insensitive, so either form
// decodes into autoscaling/v2's types.
type (
	behaviorAnnotation struct {
		ScaleUp   *rulesAnnotation
		ScaleDown *rulesAnnotation
	}
	rulesAnnotation struct {
		StabilizationWindowSeconds *int32
		SelectPolicy               *autoscalingv2.ScalingPolicySelect
		Policies                   []policyAnnotation
		Tolerance                  *resource.Quantity `json:",omitempty"`
	}
	policyAnnotation struct {
		Type          autoscalingv2.HPAScalingPolicyType
		Value         int32
		PeriodSeconds int32
	}
)

func behaviorForAnnotation(b *autoscalingv2.HorizontalPodAutoscalerBehavior) behaviorAnnotation {
	rules := func(r *autoscalingv2.HPAScalingRules) *rulesAnnotation {
		if r == nil {
			return nil
		}
		out := &rulesAnnotation{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		for _, p := range r.Policies {
			out.Policies = append(out.Policies, policyAnnotation(p))
		}
		return out
	}
	return behaviorAnnotation{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}

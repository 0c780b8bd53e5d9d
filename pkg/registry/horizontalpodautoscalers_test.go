package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func hpa(name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MaxReplicas:    3,
		},
	}
}

// errStrings renders errors as "field: message" for exact comparison.
func TestHPADefaults(t *testing.T) {
	h := hpa("a")
	h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](10)}}
	HorizontalPodAutoscalers().Default(h)
	max := autoscalingv2.MaxChangePolicySelect
	want := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: h.Spec.ScaleTargetRef,
		MinReplicas:    ptr[int32](1),
		MaxReplicas:    3,
		Metrics: []autoscalingv2.MetricSpec{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{
			Name: "cpu", Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](80)},
		}}},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](10), SelectPolicy: &max, Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: "Pods", Value: 4, PeriodSeconds: 15}, {Type: "Percent", Value: 100, PeriodSeconds: 15},
			}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](300), SelectPolicy: &max, Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: "Percent", Value: 100, PeriodSeconds: 15},
			}},
		},
	}
	if d := cmp.Diff(want, h.Spec); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	// No behavior stays none.
	h = hpa("b")
	HorizontalPodAutoscalers().Default(h)
	if h.Spec.Behavior != nil {
		t.Errorf("behavior defaulted: %+v", h.Spec.Behavior)
	}
	// v1 defaults only minReplicas.
	h1 := &autoscalingv1.HorizontalPodAutoscaler{}
	HorizontalPodAutoscalersV1().Default(h1)
	if *h1.Spec.MinReplicas != 1 || h1.Spec.TargetCPUUtilizationPercentage != nil {
		t.Errorf("v1 defaults: %+v", h1.Spec)
	}
}

func TestHPAValidation(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   []string
	}{
		{"valid", func(*autoscalingv2.HorizontalPodAutoscaler) {}, nil},
		{"no target", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
		}, []string{
			"spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value",
		}},
		{"bad target name", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "a/b" }, []string{
			`spec.scaleTargetRef.name: Invalid value: "a/b": may not contain '/'`,
		}},
		{"min zero", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr[int32](0) }, []string{
			"spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
			"spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
		}},
		{"max below min", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr[int32](5) }, []string{
			"spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`",
		}},
		{"max zero", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 0 }, []string{
			"spec.maxReplicas: Invalid value: 0: must be greater than 0",
		}},
		{"resource without target", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu"}}}
		}, []string{
			"spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
			`spec.metrics[0].resource.target.type: Invalid value: "": must be either Utilization, Value, or AverageValue`,
			"spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
		}},
		{"resource both targets", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
				Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](0), AverageValue: q("1")}}}}
		}, []string{
			"spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
			"spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization",
		}},
		{"type without source", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Pods", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
				Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](50)}}}}
		}, []string{
			"spec.metrics[0].pods: Required value: must populate information for the given metric source",
		}},
		{"two sources", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Pods",
				Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: "AverageValue", AverageValue: q("10")}},
				Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
					Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](50)}}}}
		}, []string{
			"spec.metrics[0].resource: Forbidden: must populate the given metric source only",
		}},
		{"unknown type, reported twice as Kubernetes does", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Bogus", External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: q("3")}}}}
		}, []string{
			`spec.metrics[0].type: Unsupported value: "Bogus": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`,
			`spec.metrics[0].type: Unsupported value: "Bogus": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`,
		}},
		{"pods without average", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: q("-1")}}}}
		}, []string{
			"spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
			`spec.metrics[0].pods.target.value: Invalid value: "-1": must be positive`,
			"spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
		}},
		{"external both", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "External", External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "q"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: q("1"), AverageValue: q("1")}}}}
		}, []string{
			"spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target",
		}},
		{"object needs value", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Object", Object: &autoscalingv2.ObjectMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "q"}, Target: autoscalingv2.MetricTarget{Type: "Value"}}}}
		}, []string{
			"spec.metrics[0].object.describedObject.kind: Required value",
			"spec.metrics[0].object.describedObject.name: Required value",
			"spec.metrics[0].object.target.averageValue: Required value: must set either a target value or averageValue",
		}},
		{"container resource", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "ContainerResource", ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
				Name: "cpu", Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](50)}}}}
		}, []string{
			"spec.metrics[0].containerResource.container: Required value: must specify a container",
		}},
		{"behavior", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			bogus := autoscalingv2.ScalingPolicySelect("Most")
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](4000), SelectPolicy: &bogus},
				ScaleDown: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
					{Type: "Nodes", Value: 0, PeriodSeconds: 2000},
				}},
			}
		}, []string{
			"spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
			`spec.behavior.scaleUp.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"`,
			"spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
			`spec.behavior.scaleDown.policies[0].type: Unsupported value: "Nodes": supported values: "Percent", "Pods"`,
			"spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
			"spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hpa("a")
			tc.mutate(h)
			if d := cmp.Diff(tc.want, errStrings(HorizontalPodAutoscalers().Validate(h))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestHPAStatusUpdateValidation(t *testing.T) {
	st := HorizontalPodAutoscalers()
	old := hpa("a")
	old.ResourceVersion = "1"
	st.Default(old)
	h := old.DeepCopy()
	h.Status.CurrentReplicas = -1
	want := []string{"status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"}
	if d := cmp.Diff(want, errStrings(st.ValidateUpdate(h, old))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestHPAConversionRoundTrip(t *testing.T) {
	q := resource.MustParse("100Mi")
	v2 := hpa("a")
	v2.Annotations = map[string]string{"keep": "me"}
	v2.Spec.Metrics = []autoscalingv2.MetricSpec{
		{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](70)}}},
		{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: "AverageValue", AverageValue: &q}}},
		{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: &q}}},
	}
	v2.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](60)}}
	v2.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 2,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricStatus{
			Name: "cpu", Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr[int32](33), AverageValue: &q},
		}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: "AbleToScale", Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}},
	}
	conv := HorizontalPodAutoscalersV1().(VersionConverter)
	obj, err := conv.FromStorage(v2)
	if err != nil {
		t.Fatal(err)
	}
	v1 := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if *v1.Spec.TargetCPUUtilizationPercentage != 70 || *v1.Status.CurrentCPUUtilizationPercentage != 33 || v1.Annotations["keep"] != "me" {
		t.Fatalf("v1: %+v", v1)
	}
	for _, k := range []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation} {
		if v1.Annotations[k] == "" {
			t.Errorf("annotation %s missing", k)
		}
	}
	back, err := hpaToV2(v1)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(v2.Spec, back.Spec); d != "" {
		t.Errorf("spec round trip (-want +got):\n%s", d)
	}
	if d := cmp.Diff(v2.Status, back.Status); d != "" {
		t.Errorf("status round trip (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"keep": "me"}, back.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	// A v1 object whose annotation is not JSON is refused by validation.
	v1.Annotations[hpaMetricsAnnotation] = "{"
	if errs := HorizontalPodAutoscalersV1().Validate(v1); len(errs) != 1 || errs[0].Field != "metadata.annotations" {
		t.Errorf("bad annotation: %v", errs)
	}
}

func TestHPAV1StatusRules(t *testing.T) {
	st := HorizontalPodAutoscalersV1()
	old := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Annotations: map[string]string{hpaConditionsAnnotation: "[]", hpaMetricsAnnotation: "[]"}},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3},
		Status:     autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 2},
	}
	// A spec write keeps the stored status and its annotations.
	h := old.DeepCopy()
	h.Annotations = nil
	h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
	st.PrepareForUpdate(h, old)
	if h.Status.CurrentReplicas != 2 || h.Annotations[hpaConditionsAnnotation] != "[]" || h.Annotations[hpaMetricsAnnotation] != "" {
		t.Errorf("spec write: %+v %v", h.Status, h.Annotations)
	}
	// A status write keeps the stored spec and its annotations.
	h = old.DeepCopy()
	h.Spec.MaxReplicas = 9
	delete(h.Annotations, hpaMetricsAnnotation)
	out := st.PrepareForStatusUpdate(h, old).(*autoscalingv1.HorizontalPodAutoscaler)
	if out.Spec.MaxReplicas != 3 || out.Annotations[hpaMetricsAnnotation] != "[]" {
		t.Errorf("status write: %+v %v", out.Spec, out.Annotations)
	}
}

func TestHPAUpdateKeepsScaleToZero(t *testing.T) {
	for name, st := range map[string]Strategy{"v2": HorizontalPodAutoscalers(), "v1": HorizontalPodAutoscalersV1()} {
		t.Run(name, func(t *testing.T) {
			var old, upd, fresh runtime.Object
			if name == "v2" {
				o := hpa("a")
				o.ResourceVersion = "1"
				o.Spec.MinReplicas = ptr[int32](0)
				o.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "External", External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: resource.NewQuantity(5, resource.DecimalSI)},
				}}}
				u := o.DeepCopy()
				u.Spec.MaxReplicas = 9
				f := hpa("a")
				f.ResourceVersion = "1"
				old, upd, fresh = o, u, f
			} else {
				o, err := hpaToV1(func() *autoscalingv2.HorizontalPodAutoscaler {
					h := hpa("a")
					h.ResourceVersion = "1"
					h.Spec.MinReplicas = ptr[int32](0)
					h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "External", External: &autoscalingv2.ExternalMetricSource{
						Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: resource.NewQuantity(5, resource.DecimalSI)},
					}}}
					return h
				}())
				if err != nil {
					t.Fatal(err)
				}
				u := o.DeepCopy()
				u.Spec.MaxReplicas = 9
				f := o.DeepCopy()
				f.Spec.MinReplicas = ptr[int32](1)
				old, upd, fresh = o, u, f
			}
			if errs := st.ValidateUpdate(upd, old); len(errs) != 0 {
				t.Errorf("update of an HPA at 0: %v", errs)
			}
			// Going to 0 from 1 is refused.
			if errs := st.ValidateUpdate(old, fresh); len(errs) != 1 || errs[0].Field != "spec.minReplicas" {
				t.Errorf("update to 0: %v", errs)
			}
		})
	}
}

func TestHPABehaviorAnnotationForm(t *testing.T) {
	h := hpa("a")
	h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	defaultHPA(h)
	v1, err := hpaToV1(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}]},` +
		`"ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}`
	if got := v1.Annotations[hpaBehaviorAnnotation]; got != want {
		t.Errorf("behavior annotation\n got %s\nwant %s", got, want)
	}
	back, err := hpaToV2(v1)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h.Spec.Behavior, back.Spec.Behavior); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

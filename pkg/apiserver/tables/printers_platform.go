package tables

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/registry"
)

// platformPrinters returns the printers of storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io, HorizontalPodAutoscalers.
func platformPrinters() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	for _, p := range []func() (reflect.Type, *printer){
		func() (reflect.Type, *printer) { return printerOf(hpaColumns, hpaRow) },
		func() (reflect.Type, *printer) { return printerOf(hpaColumns, hpaV1Row) },
	} {
		t, pr := p()
		out[t] = pr
	}
	return out
}

func hpaColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
		{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
		{Name: "MaxPods", Type: "integer", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
		{Name: "Replicas", Type: "integer", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		ageColumn(),
	}
}

func hpaRow(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
	ref := h.Spec.ScaleTargetRef
	var minPods any = "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = int64(*h.Spec.MinReplicas)
	}
	return []any{
		h.Name,
		ref.Kind + "/" + ref.Name,
		hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
		minPods,
		int64(h.Spec.MaxReplicas),
		int64(h.Status.CurrentReplicas),
		since(h.CreationTimestamp.Time, now),
	}, nil
}

// hpaV1Row prints an autoscaling/v1 HPA as its autoscaling/v2 form, as
// kubectl shows both versions alike.
func hpaV1Row(h *autoscalingv1.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
	v2, err := registry.HPAToV2(h)
	if err != nil {
		// Unreadable annotations: what v1 itself says.
		v2, _ = registry.HPAToV2(&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: h.ObjectMeta, Spec: h.Spec, Status: h.Status})
		if v2 == nil {
			v2 = &autoscalingv2.HorizontalPodAutoscaler{}
		}
	}
	return hpaRow(v2, now)
}

// hpaMaxTargets is how many metrics the Targets column shows.
const hpaMaxTargets = 2

// hpaTargets renders an HPA's metrics as "current/target" pairs, in the
// order of the spec, each paired with the status entry at the same index,
// as kubectl does.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	q := func(v *resource.Quantity) string {
		if v == nil {
			return "<unknown>"
		}
		return v.String()
	}
	pct := func(v *int32) string {
		if v == nil {
			return "<unknown>"
		}
		return fmt.Sprintf("%d%%", *v)
	}
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		current := "<unknown>"
		switch {
		case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
			t := spec.External.Target
			if t.AverageValue != nil {
				if st != nil && st.External != nil {
					current = q(st.External.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String()))
			} else {
				if st != nil && st.External != nil {
					current = q(st.External.Current.Value)
				}
				list = append(list, fmt.Sprintf("%s/%s", current, q(t.Value)))
			}
		case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
			if st != nil && st.Pods != nil {
				current = q(st.Pods.Current.AverageValue)
			}
			list = append(list, fmt.Sprintf("%s/%s", current, q(spec.Pods.Target.AverageValue)))
		case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
			t := spec.Object.Target
			if t.AverageValue != nil {
				if st != nil && st.Object != nil {
					current = q(st.Object.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String()))
			} else {
				if st != nil && st.Object != nil {
					current = q(st.Object.Current.Value)
				}
				list = append(list, fmt.Sprintf("%s/%s", current, q(t.Value)))
			}
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
			t := spec.Resource.Target
			if t.AverageValue != nil {
				if st != nil && st.Resource != nil {
					current = q(st.Resource.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, t.AverageValue.String()))
			} else {
				if st != nil && st.Resource != nil {
					current = pct(st.Resource.Current.AverageUtilization)
				}
				target := "<auto>"
				if t.AverageUtilization != nil {
					target = pct(t.AverageUtilization)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, target))
			}
		case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
			t := spec.ContainerResource.Target
			if t.AverageValue != nil {
				if st != nil && st.ContainerResource != nil {
					current = q(st.ContainerResource.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, t.AverageValue.String()))
			} else {
				if st != nil && st.ContainerResource != nil {
					current = pct(st.ContainerResource.Current.AverageUtilization)
				}
				target := "<auto>"
				if t.AverageUtilization != nil {
					target = pct(t.AverageUtilization)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, target))
			}
		default:
			list = append(list, "<unknown type>")
		}
	}
	if len(list) > hpaMaxTargets {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:hpaMaxTargets], ", "), len(list)-hpaMaxTargets)
	}
	return strings.Join(list, ", ")
}

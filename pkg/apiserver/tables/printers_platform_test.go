package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// platformCase is one object and the row its printer must give.
type platformCase struct {
	name      string
	obj       runtime.Object
	wantCols  []string
	wantCells []any
}

func runPlatformCases(t *testing.T, tests []platformCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := Convert(tc.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantCols, columnNames(table.ColumnDefinitions)); d != "" {
				t.Errorf("columns (-want +got):\n%s", d)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("%d rows", len(table.Rows))
			}
			if d := cmp.Diff(tc.wantCells, table.Rows[0].Cells); d != "" {
				t.Errorf("cells (-want +got):\n%s", d)
			}
		})
	}
}

func TestHPAPrinters(t *testing.T) {
	cols := []string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"}
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	cpu80 := autoscalingv2.MetricSpec{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: ptr.To[int32](80)},
	}}
	mem := resource.MustParse("512Mi")
	qps := resource.MustParse("10")
	runPlatformCases(t, []platformCase{
		{
			name: "v2 unknown current",
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objectMeta("web", 3*time.Minute),
				Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](1), MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{cpu80}},
			},
			wantCols:  cols,
			wantCells: []any{"web", "Deployment/web", "cpu: <unknown>/80%", int64(1), int64(10), int64(0), "3m"},
		},
		{
			name: "v2 more than two metrics",
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objectMeta("web", time.Hour),
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{
					cpu80,
					{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "memory", Target: autoscalingv2.MetricTarget{Type: "AverageValue", AverageValue: &mem}}},
					{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: "AverageValue", AverageValue: &qps}}},
				}},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{
					{Type: "Resource", Resource: &autoscalingv2.ResourceMetricStatus{Name: "cpu", Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](12)}}},
				}},
			},
			wantCols:  cols,
			wantCells: []any{"web", "Deployment/web", "cpu: 12%/80%, memory: <unknown>/512Mi + 1 more...", "<unset>", int64(4), int64(2), "60m"},
		},
		{
			name: "v2 external average and object value",
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objectMeta("q", time.Hour),
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](2), MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{
					{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: "AverageValue", AverageValue: &qps}}},
					{Type: "Object", Object: &autoscalingv2.ObjectMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: autoscalingv2.MetricTarget{Type: "Value", Value: &qps}}},
				}},
			},
			wantCols:  cols,
			wantCells: []any{"q", "Deployment/web", "<unknown>/10 (avg), <unknown>/10", int64(2), int64(4), int64(0), "60m"},
		},
		{
			name: "v1 with annotation metrics",
			obj: &autoscalingv1.HorizontalPodAutoscaler{
				ObjectMeta: func() (m metav1.ObjectMeta) {
					m = objectMeta("web", 2*time.Second)
					m.Annotations = map[string]string{"autoscaling.alpha.kubernetes.io/metrics": `[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"512Mi"}}]`}
					return m
				}(),
				Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
					MinReplicas:    ptr.To[int32](1), MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](50),
				},
				Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, CurrentCPUUtilizationPercentage: ptr.To[int32](20)},
			},
			wantCols:  cols,
			wantCells: []any{"web", "Deployment/web", "cpu: 20%/50%, memory: <unknown>/512Mi", int64(1), int64(3), int64(1), "2s"},
		},
	})
}

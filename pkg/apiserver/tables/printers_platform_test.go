package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
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

func TestStoragePrinters(t *testing.T) {
	pv := "pv-1"
	capacity := resource.MustParse("10Gi")
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	runPlatformCases(t, []platformCase{
		{
			name: "default storageclass",
			obj: &storagev1.StorageClass{
				ObjectMeta: func() metav1.ObjectMeta {
					m := objectMeta("standard", time.Hour)
					m.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
					return m
				}(),
				Provisioner: "rancher.io/local-path", VolumeBindingMode: &wait,
			},
			wantCols:  []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"},
			wantCells: []any{"standard (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", false, "60m"},
		},
		{
			name: "csidriver",
			obj: &storagev1.CSIDriver{
				ObjectMeta: objectMeta("csi.example.com", time.Minute),
				Spec: storagev1.CSIDriverSpec{
					AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
					TokenRequests:        []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "gcp"}},
					VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Persistent", "Ephemeral"},
				},
			},
			wantCols:  []string{"Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests", "RequiresRepublish", "Modes", "Age"},
			wantCells: []any{"csi.example.com", false, true, false, "vault,gcp", false, "Persistent,Ephemeral", "60s"},
		},
		{
			name:      "csidriver unset",
			obj:       &storagev1.CSIDriver{ObjectMeta: objectMeta("d", time.Minute)},
			wantCols:  []string{"Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests", "RequiresRepublish", "Modes", "Age"},
			wantCells: []any{"d", true, false, false, "<unset>", false, "<none>", "60s"},
		},
		{
			name:      "csinode",
			obj:       &storagev1.CSINode{ObjectMeta: objectMeta("node-1", time.Minute), Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a"}, {Name: "b"}}}},
			wantCols:  []string{"Name", "Drivers", "Age"},
			wantCells: []any{"node-1", int64(2), "60s"},
		},
		{
			name: "volumeattachment",
			obj: &storagev1.VolumeAttachment{
				ObjectMeta: objectMeta("csi-123", time.Minute),
				Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
				Status:     storagev1.VolumeAttachmentStatus{Attached: true},
			},
			wantCols:  []string{"Name", "Attacher", "PV", "Node", "Attached", "Age"},
			wantCells: []any{"csi-123", "csi.example.com", "pv-1", "node-1", true, "60s"},
		},
		{
			name:      "csistoragecapacity",
			obj:       &storagev1.CSIStorageCapacity{ObjectMeta: objectMeta("c", time.Minute), StorageClassName: "fast", Capacity: &capacity},
			wantCols:  []string{"Name", "StorageClassName", "Capacity", "Age"},
			wantCells: []any{"c", "fast", "10Gi", "60s"},
		},
		{
			name:      "volumeattributesclass",
			obj:       &storagev1.VolumeAttributesClass{ObjectMeta: objectMeta("gold", time.Minute), DriverName: "csi.example.com"},
			wantCols:  []string{"Name", "DriverName", "Age"},
			wantCells: []any{"gold", "csi.example.com", "60s"},
		},
	})
}

func TestWebhookConfigurationPrinters(t *testing.T) {
	cols := []string{"Name", "Webhooks", "Age"}
	runPlatformCases(t, []platformCase{
		{
			name:      "validating",
			obj:       &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: objectMeta("v", time.Minute), Webhooks: make([]admissionregistrationv1.ValidatingWebhook, 2)},
			wantCols:  cols,
			wantCells: []any{"v", int64(2), "60s"},
		},
		{
			name:      "mutating",
			obj:       &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: objectMeta("m", time.Minute)},
			wantCols:  cols,
			wantCells: []any{"m", int64(0), "60s"},
		},
	})
}

func TestAdmissionPolicyPrinters(t *testing.T) {
	runPlatformCases(t, []platformCase{
		{
			name: "validating policy",
			obj: &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: objectMeta("max", time.Minute),
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
					ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
					Validations: make([]admissionregistrationv1.Validation, 3),
				},
			},
			wantCols:  []string{"Name", "Validations", "ParamKind", "Age"},
			wantCells: []any{"max", int64(3), "v1/ConfigMap", "60s"},
		},
		{
			name:      "validating policy without params",
			obj:       &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: objectMeta("p", time.Minute)},
			wantCols:  []string{"Name", "Validations", "ParamKind", "Age"},
			wantCells: []any{"p", int64(0), "<unset>", "60s"},
		},
		{
			name: "binding with a namespaced param",
			obj: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: objectMeta("b", time.Minute),
				Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "max", ParamRef: &admissionregistrationv1.ParamRef{Name: "cfg", Namespace: "ns"}},
			},
			wantCols:  []string{"Name", "PolicyName", "ParamRef", "Age"},
			wantCells: []any{"b", "max", "ns/cfg", "60s"},
		},
		{
			name: "mutating binding with a param of any namespace",
			obj: &admissionregistrationv1.MutatingAdmissionPolicyBinding{
				ObjectMeta: objectMeta("b", time.Minute),
				Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "m", ParamRef: &admissionregistrationv1.ParamRef{Name: "cfg"}},
			},
			wantCols:  []string{"Name", "PolicyName", "ParamRef", "Age"},
			wantCells: []any{"b", "m", "*/cfg", "60s"},
		},
		{
			name:      "mutating policy",
			obj:       &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: objectMeta("m", time.Minute), Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: make([]admissionregistrationv1.Mutation, 1)}},
			wantCols:  []string{"Name", "Mutations", "ParamKind", "Age"},
			wantCells: []any{"m", int64(1), "<unset>", "60s"},
		},
	})
}

func TestResourcePrinters(t *testing.T) {
	node := "node-1"
	deleted := ago(time.Second)
	runPlatformCases(t, []platformCase{
		{
			name:      "deviceclass",
			obj:       &resourcev1.DeviceClass{ObjectMeta: objectMeta("gpu.example.com", time.Minute)},
			wantCols:  []string{"Name", "Age"},
			wantCells: []any{"gpu.example.com", "60s"},
		},
		{
			name:      "pending claim",
			obj:       &resourcev1.ResourceClaim{ObjectMeta: objectMeta("c", time.Minute)},
			wantCols:  []string{"Name", "State", "Age"},
			wantCells: []any{"c", "pending", "60s"},
		},
		{
			name: "reserved claim being deleted",
			obj: &resourcev1.ResourceClaim{
				ObjectMeta: func() metav1.ObjectMeta { m := objectMeta("c", time.Minute); m.DeletionTimestamp = &deleted; return m }(),
				Status: resourcev1.ResourceClaimStatus{
					Allocation:  &resourcev1.AllocationResult{},
					ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "u"}},
				},
			},
			wantCols:  []string{"Name", "State", "Age"},
			wantCells: []any{"c", "deleted,allocated,reserved", "60s"},
		},
		{
			name:      "claim template",
			obj:       &resourcev1.ResourceClaimTemplate{ObjectMeta: objectMeta("t", time.Minute)},
			wantCols:  []string{"Name", "Age"},
			wantCells: []any{"t", "60s"},
		},
		{
			name: "slice",
			obj: &resourcev1.ResourceSlice{
				ObjectMeta: objectMeta("s", time.Minute),
				Spec:       resourcev1.ResourceSliceSpec{NodeName: &node, Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1"}},
			},
			wantCols:  []string{"Name", "Node", "Driver", "Pool", "Age"},
			wantCells: []any{"s", "node-1", "gpu.example.com", "node-1", "60s"},
		},
	})
}

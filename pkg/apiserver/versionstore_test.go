package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage/memory"
)

const (
	hpaV1Path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
	hpaV2Path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
)

func TestHPAServedInTwoVersionsFromOneStore(t *testing.T) {
	e := newTestEnv(t)

	// Created through v1 without a CPU target: v2 readers see the v2 defaults.
	v1 := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5,
		},
	}
	var created autoscalingv1.HorizontalPodAutoscaler
	e.mustCreate(hpaV1Path, v1, &created)
	if created.APIVersion != "autoscaling/v1" || *created.Spec.MinReplicas != 1 {
		t.Fatalf("created %+v", created)
	}
	var got2 autoscalingv2.HorizontalPodAutoscaler
	r := e.do("GET", hpaV2Path+"/web", nil)
	r.expect(t, 200, "")
	r.decode(t, &got2)
	if got2.APIVersion != "autoscaling/v2" || len(got2.Spec.Metrics) != 1 || *got2.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Fatalf("v2 view: %s", r.body)
	}
	if got2.ResourceVersion != created.ResourceVersion || got2.UID != created.UID {
		t.Fatalf("not the same object: %s vs %s", got2.ResourceVersion, created.ResourceVersion)
	}

	// A v2-only metric and a behavior are kept in v1's annotations, and
	// survive an update through v1.
	got2.Spec.Metrics = append(got2.Spec.Metrics, autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{
			Type: autoscalingv2.AverageValueMetricType, AverageValue: apiresource.NewQuantity(1<<30, apiresource.BinarySI),
		}},
	})
	got2.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	r = e.do("PUT", hpaV2Path+"/web", &got2)
	r.expect(t, 200, "")
	r.decode(t, &got2)
	if got2.Generation != 2 || got2.Spec.Behavior.ScaleDown == nil || *got2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 300 {
		t.Fatalf("v2 update: %s", r.body)
	}

	var got1 autoscalingv1.HorizontalPodAutoscaler
	r = e.do("GET", hpaV1Path+"/web", nil)
	r.decode(t, &got1)
	if *got1.Spec.TargetCPUUtilizationPercentage != 80 || !strings.Contains(got1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], `"memory"`) ||
		got1.Annotations["autoscaling.alpha.kubernetes.io/behavior"] == "" {
		t.Fatalf("v1 view: %s", r.body)
	}
	got1.Spec.MaxReplicas = 7
	got1.Spec.TargetCPUUtilizationPercentage = ptrTo[int32](60)
	r = e.do("PUT", hpaV1Path+"/web", &got1)
	r.expect(t, 200, "")
	r = e.do("GET", hpaV2Path+"/web", nil)
	r.decode(t, &got2)
	if got2.Spec.MaxReplicas != 7 || len(got2.Spec.Metrics) != 2 || *got2.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 ||
		got2.Spec.Metrics[1].Resource.Name != corev1.ResourceMemory || got2.Spec.Behavior == nil || len(got2.Annotations) != 0 {
		t.Fatalf("after v1 update: %s", r.body)
	}

	// Status written through v2 shows in v1; a v1 spec write keeps it.
	w := e.watch(hpaV1Path + "?watch=true&resourceVersion=" + got2.ResourceVersion)
	got2.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 3, DesiredReplicas: 4,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptrTo[int32](42)},
		}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}},
	}
	r = e.do("PUT", hpaV2Path+"/web/status", &got2)
	r.expect(t, 200, "")
	ev := w.next(t)
	var evObj autoscalingv1.HorizontalPodAutoscaler
	if err := json.Unmarshal(ev.Object, &evObj); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "MODIFIED" || evObj.APIVersion != "autoscaling/v1" || evObj.Status.CurrentCPUUtilizationPercentage == nil ||
		*evObj.Status.CurrentCPUUtilizationPercentage != 42 || evObj.Annotations["autoscaling.alpha.kubernetes.io/conditions"] == "" {
		t.Fatalf("v1 watch event %s: %s", ev.Type, ev.Object)
	}

	// Patches through v1, merge and strategic.
	r = e.do("PATCH", hpaV1Path+"/web", `{"spec":{"maxReplicas":9}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, 200, "")
	r = e.do("PATCH", hpaV1Path+"/web", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", "application/strategic-merge-patch+json")
	r.expect(t, 200, "")
	r = e.do("GET", hpaV2Path+"/web", nil)
	r.decode(t, &got2)
	if got2.Spec.MaxReplicas != 9 || got2.Labels["a"] != "b" || got2.Status.DesiredReplicas != 4 || len(got2.Status.Conditions) != 1 ||
		len(got2.Spec.Metrics) != 2 || *got2.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 42 {
		t.Fatalf("after patches: %s", r.body)
	}
	for range 2 {
		if ev = w.next(t); ev.Type != "MODIFIED" {
			t.Fatalf("event %s", ev.Type)
		}
	}

	// Lists, field selectors and tables in v1.
	var l1 autoscalingv1.HorizontalPodAutoscalerList
	r = e.do("GET", hpaV1Path+"?fieldSelector=metadata.name%3Dweb", nil)
	r.expect(t, 200, "")
	r.decode(t, &l1)
	if len(l1.Items) != 1 || l1.Kind != "HorizontalPodAutoscalerList" || l1.APIVersion != "autoscaling/v1" || l1.ResourceVersion == "" || l1.Items[0].Spec.MaxReplicas != 9 {
		t.Fatalf("v1 list: %s", r.body)
	}
	r = e.do("GET", hpaV1Path+"?fieldSelector=metadata.name%3Dother", nil)
	r.decode(t, &l1)
	if len(l1.Items) != 0 {
		t.Fatalf("field selector: %s", r.body)
	}
	r = e.do("GET", hpaV1Path, nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	r.expect(t, 200, "")
	var table metav1.Table
	r.decode(t, &table)
	if len(table.Rows) != 1 || table.Rows[0].Cells[2] != "cpu: 42%/60%, memory: <unknown>/1Gi" {
		t.Fatalf("v1 table: %s", r.body)
	}

	// Validation of a v1 write is v2's, with its paths.
	bad := v1.DeepCopy()
	bad.Name = "bad"
	bad.Spec.TargetCPUUtilizationPercentage = ptrTo[int32](0)
	r = e.do("POST", hpaV1Path, bad)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if st := r.status(t); len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.metrics[0].resource.target.averageUtilization" {
		t.Fatalf("v1 validation: %s", r.body)
	}

	// A delete through v1 is seen by v2.
	r = e.do("DELETE", hpaV1Path+"/web", nil)
	r.expect(t, 200, "")
	e.do("GET", hpaV2Path+"/web", nil).expect(t, 404, metav1.StatusReasonNotFound)
	if ev = w.next(t); ev.Type != "DELETED" {
		t.Fatalf("event %s", ev.Type)
	}
}

func TestHPADiscovery(t *testing.T) {
	e := newTestEnv(t)
	var group metav1.APIGroup
	e.do("GET", "/apis/autoscaling", nil).decode(t, &group)
	var versions []string
	for _, v := range group.Versions {
		versions = append(versions, v.GroupVersion)
	}
	if group.PreferredVersion.GroupVersion != "autoscaling/v2" || strings.Join(versions, ",") != "autoscaling/v2,autoscaling/v1" {
		t.Fatalf("group %+v", group)
	}
	for _, v := range versions {
		var l metav1.APIResourceList
		e.do("GET", "/apis/"+v, nil).decode(t, &l)
		found := map[string]metav1.APIResource{}
		for _, r := range l.APIResources {
			found[r.Name] = r
		}
		h, ok := found["horizontalpodautoscalers"]
		if !ok || strings.Join(h.ShortNames, ",") != "hpa" || strings.Join(h.Categories, ",") != "all" || !h.Namespaced {
			t.Errorf("%s: %+v", v, h)
		}
		if _, ok := found["horizontalpodautoscalers/status"]; !ok {
			t.Errorf("%s: no status subresource in %+v", v, l.APIResources)
		}
	}
}

func TestHPAOpenAPI(t *testing.T) {
	e := newTestEnv(t)
	for _, gv := range []string{"autoscaling/v1", "autoscaling/v2"} {
		r := e.do("GET", "/openapi/v3/apis/"+gv, nil)
		r.expect(t, 200, "")
		want := "io.k8s.api." + strings.ReplaceAll(gv, "/", ".") + ".HorizontalPodAutoscaler"
		if !strings.Contains(string(r.body), want) {
			t.Errorf("%s: no %s", gv, want)
		}
	}
	r := e.do("GET", "/openapi/v2", nil)
	r.expect(t, 200, "")
	for _, want := range []string{"io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", "io.k8s.api.storage.v1.StorageClass", "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("openapi v2: no %s", want)
		}
	}
}

func TestVersionConverterNeedsItsStorageVersion(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	_, err = New(Config{Backend: backend, Resources: []registry.Strategy{registry.Namespaces(), registry.HorizontalPodAutoscalersV1()}})
	if err == nil || !strings.Contains(err.Error(), "autoscaling/v2, Kind=HorizontalPodAutoscaler, which is not served") {
		t.Fatalf("got %v", err)
	}
}

func TestHPAV1ListPages(t *testing.T) {
	e := newTestEnv(t)
	for _, name := range []string{"a", "b", "c"} {
		h := &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: name}, MaxReplicas: 2,
			},
		}
		e.mustCreate(hpaV2Path, h, nil)
	}
	var names []string
	cont := ""
	for range 3 {
		var l autoscalingv1.HorizontalPodAutoscalerList
		e.do("GET", hpaV1Path+"?limit=2&continue="+cont, nil).decode(t, &l)
		for _, it := range l.Items {
			if it.APIVersion != "autoscaling/v1" && it.APIVersion != "" {
				t.Errorf("item %s in %s", it.Name, it.APIVersion)
			}
			names = append(names, it.Name)
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	if strings.Join(names, ",") != "a,b,c" {
		t.Fatalf("pages gave %v", names)
	}
}

package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestResourceQuota(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("-1")}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"pods": resource.MustParse("3")}},
	}
	want := []string{`spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`}
	if diff := cmp.Diff(want, errStrings(createObj(t, ResourceQuotas(), q))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if len(q.Status.Used) != 0 {
		t.Errorf("create kept the status %+v", q.Status)
	}
	tests := []struct {
		name string
		spec corev1.ResourceQuotaSpec
		want []string
	}{
		{"valid", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("2"), "count/deployments.apps": resource.MustParse("4")}}, nil},
		{"unknown name", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"widgets": resource.MustParse("1")}}, []string{
			`spec.hard[widgets]: Invalid value: "widgets": must be a standard resource type or fully qualified`,
			`spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota`,
		}},
		{"fraction of pods", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("1500m")}},
			[]string{`spec.hard[pods]: Invalid value: "1500m": must be an integer`}},
		{"scope not for the resource", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"services": resource.MustParse("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
			[]string{`spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`}},
		{"conflicting scopes", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}},
			[]string{`spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, ResourceQuotas(), q))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimitRangeDefaults(t *testing.T) {
	l := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Min:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}},
	}
	if errs := createObj(t, LimitRanges(), l); len(errs) > 0 {
		t.Fatal(errs)
	}
	item := l.Spec.Limits[0]
	cpu, defReq, mem := item.Default[corev1.ResourceCPU], item.DefaultRequest[corev1.ResourceCPU], item.DefaultRequest[corev1.ResourceMemory]
	if cpu.String() != "2" || defReq.String() != "2" || mem.String() != "64Mi" {
		t.Errorf("defaults %+v", item)
	}
	l.Spec.Limits[0].Type = "Node"
	want := []string{`spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified`}
	if diff := cmp.Diff(want, errStrings(LimitRanges().Validate(l))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	bad := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			{Type: corev1.LimitTypePersistentVolumeClaim},
			{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"pods": resource.MustParse("1")}},
		}},
	}
	want = []string{
		"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
		`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`,
		"spec.limits[1].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
		`spec.limits[2].max[pods]: Invalid value: "pods": must be a standard resource for containers`,
		// Defaulted from the max.
		`spec.limits[2].default[pods]: Invalid value: "pods": must be a standard resource for containers`,
		`spec.limits[2].defaultRequest[pods]: Invalid value: "pods": must be a standard resource for containers`,
	}
	if diff := cmp.Diff(want, errStrings(createObj(t, LimitRanges(), bad))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestCoreLeftovers(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "Builder", Namespace: "default"}}
	if errs := createObj(t, ServiceAccounts(), sa); len(errs) != 1 || errs[0].Field != "metadata.name" {
		t.Errorf("service account errors %v", errs)
	}
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"}, Template: corev1.PodTemplateSpec{Spec: podSpec()}}
	pt.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if errs := createObj(t, PodTemplates(), pt); len(errs) > 0 {
		t.Errorf("pod template of any restart policy refused: %v", errs)
	}
	if pt.Template.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("pod template not defaulted")
	}
	pt.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	want := []string{"template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"}
	if diff := cmp.Diff(want, errStrings(PodTemplates().Validate(pt))); diff != "" {
		t.Errorf("pod template errors (-want +got):\n%s", diff)
	}

	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", ResourceVersion: "1"}, Revision: 1}
	if diff := cmp.Diff([]string{"data: Required value: data is mandatory"}, errStrings(ControllerRevisions().Validate(cr))); diff != "" {
		t.Errorf("revision errors (-want +got):\n%s", diff)
	}
	cr.Data = runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}
	next := cr.DeepCopy()
	next.Revision = 2
	if errs := ControllerRevisions().ValidateUpdate(next, cr); len(errs) > 0 {
		t.Errorf("revision change refused: %v", errs)
	}
	next.Data = runtime.RawExtension{Raw: []byte(`{ "spec" : { } }`)}
	if errs := ControllerRevisions().ValidateUpdate(next, cr); len(errs) > 0 {
		t.Errorf("the same data spaced differently refused: %v", errs)
	}
	next.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"x":1}}`)}
	if errs := ControllerRevisions().ValidateUpdate(next, cr); len(errs) != 1 || errs[0].Field != "data" || errs[0].Detail != "field is immutable" {
		t.Errorf("data change: %v", errs)
	}
}

func TestWorkloadInfo(t *testing.T) {
	for _, tt := range []struct {
		st            Strategy
		short         string
		all           bool
		status, scale bool
	}{
		{Jobs(), "", true, true, false},
		{CronJobs(), "cj", true, true, false},
		{StatefulSets(), "sts", true, true, true},
		{DaemonSets(), "ds", true, true, false},
		{ControllerRevisions(), "", false, false, false},
		{ReplicationControllers(), "rc", true, true, true},
		{ServiceAccounts(), "sa", false, false, false},
		{PersistentVolumeClaims(), "pvc", false, true, false},
		{PersistentVolumes(), "pv", false, true, false},
		{ResourceQuotas(), "quota", false, true, false},
		{LimitRanges(), "limits", false, false, false},
		{PodTemplates(), "", false, false, false},
	} {
		info := tt.st.Info()
		short := ""
		if len(info.ShortNames) > 0 {
			short = info.ShortNames[0]
		}
		if short != tt.short || (len(info.Categories) > 0) != tt.all || info.Status != tt.status || info.Scale != tt.scale {
			t.Errorf("%s: %+v", info.Resource, info)
		}
	}
}

// TestWorkloadGenerations checks which resources track metadata.generation,
// as in Kubernetes: the ones with a spec that controllers act on.
func TestWorkloadGenerations(t *testing.T) {
	for _, tt := range []struct {
		st   Strategy
		want int64
	}{
		{Jobs(), 1}, {CronJobs(), 1}, {StatefulSets(), 1}, {DaemonSets(), 1}, {ReplicationControllers(), 1}, {PodTemplates(), 1},
		{PersistentVolumeClaims(), 0}, {PersistentVolumes(), 0}, {ServiceAccounts(), 0}, {ResourceQuotas(), 0}, {LimitRanges(), 0},
		{ControllerRevisions(), 0},
	} {
		obj := tt.st.New()
		tt.st.PrepareForCreate(obj)
		if got := obj.(Object).GetGeneration(); got != tt.want {
			t.Errorf("%s: generation %d, want %d", tt.st.Info().Resource, got, tt.want)
		}
	}
}

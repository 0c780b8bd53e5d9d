package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestServiceAccountsPodTemplatesRevisions(t *testing.T) {
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

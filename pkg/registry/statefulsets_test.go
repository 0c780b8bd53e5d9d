package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func statefulSet(name string) *appsv1.StatefulSet {
	l := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Selector:    &metav1.LabelSelector{MatchLabels: l},
			ServiceName: name,
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

func TestStatefulSetDefaults(t *testing.T) {
	s := statefulSet("db")
	if errs := createObj(t, StatefulSets(), s); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := appsv1.StatefulSetSpec{
		Replicas:            ptr[int32](1),
		PodManagementPolicy: appsv1.OrderedReadyPodManagement,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](0), MaxUnavailable: ptr(intstr.FromInt32(1))},
		},
		RevisionHistoryLimit: ptr[int32](10),
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		},
	}
	got := s.Spec.DeepCopy()
	got.Selector, got.ServiceName, got.Template, got.VolumeClaimTemplates = nil, "", corev1.PodTemplateSpec{}, nil
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if c := s.Spec.VolumeClaimTemplates[0]; c.Spec.VolumeMode == nil || *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		c.APIVersion != "v1" || c.Kind != "PersistentVolumeClaim" || c.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim template %+v", c)
	}
	sc, err := StatefulSets().Scale(s)
	if err != nil || sc.Spec.Replicas != 1 || sc.Status.Selector != "app=db" {
		t.Errorf("scale %+v %v", sc, err)
	}
}

func TestStatefulSetValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *appsv1.StatefulSet)
		want   []string
	}{
		{"empty selector", func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for statefulset"}},
		{"selector mismatch", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "x"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"}},
		{"restart policy", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`}},
		{"pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Eager" },
			[]string{`spec.podManagementPolicy: Invalid value: "Eager": must be 'OrderedReady' or 'Parallel'`}},
		{"negative partition", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](-1)}}
		}, []string{"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"}},
		{"name not a DNS label", func(s *appsv1.StatefulSet) { s.Name = "db.primary" },
			[]string{`metadata.name: Invalid value: "db.primary": must not contain dots`}},
		{"claim template without storage", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil },
			[]string{"spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"}},
		{"retention policy", func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "Retain"}
		}, []string{`spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: "Retain", "Delete"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := statefulSet("db")
			tt.change(s)
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, StatefulSets(), s))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatefulSetUpdate(t *testing.T) {
	old := statefulSet("db")
	if errs := createObj(t, StatefulSets(), old); len(errs) > 0 {
		t.Fatal(errs)
	}
	old.ResourceVersion = "4"
	forbidden := []string{"spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"}
	tests := []struct {
		name   string
		change func(s *appsv1.StatefulSet)
		want   []string
	}{
		{"replicas", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr[int32](3) }, nil},
		{"template image", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:2" }, nil},
		{"min ready seconds", func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 5 }, nil},
		{"revision history limit", func(s *appsv1.StatefulSet) { s.Spec.RevisionHistoryLimit = ptr[int32](3) }, nil},
		{"service name", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }, forbidden},
		{"claim templates", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates = nil }, forbidden},
		{"pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }, forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := old.DeepCopy()
			tt.change(s)
			if diff := cmp.Diff(tt.want, errStrings(updateObj(t, StatefulSets(), s, old))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	// Status writes keep the spec; main writes keep the status.
	s := old.DeepCopy()
	s.Status.ReadyReplicas = 1
	s.Spec.Replicas = ptr[int32](7)
	out := StatefulSets().PrepareForStatusUpdate(s, old).(*appsv1.StatefulSet)
	if out.Status.ReadyReplicas != 1 || *out.Spec.Replicas != 1 {
		t.Errorf("status write stored %+v / replicas %d", out.Status, *out.Spec.Replicas)
	}
}

func TestWorkloadStatusWritesValidated(t *testing.T) {
	sts := statefulSet("db")
	createObj(t, StatefulSets(), sts)
	sts.ResourceVersion = "3"
	s := sts.DeepCopy()
	s.Status = appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 2, AvailableReplicas: 1}
	want := []string{"status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"}
	if diff := cmp.Diff(want, errStrings(StatefulSets().ValidateUpdate(StatefulSets().PrepareForStatusUpdate(s, sts), sts))); diff != "" {
		t.Errorf("statefulset status errors (-want +got):\n%s", diff)
	}

	ds := daemonSet("agent")
	createObj(t, DaemonSets(), ds)
	ds.ResourceVersion = "3"
	ds.Status.CollisionCount = ptr[int32](2)
	d := ds.DeepCopy()
	d.Status.CollisionCount = ptr[int32](1)
	want = []string{"status.collisionCount: Invalid value: 1: cannot be decremented"}
	if diff := cmp.Diff(want, errStrings(DaemonSets().ValidateUpdate(DaemonSets().PrepareForStatusUpdate(d, ds), ds))); diff != "" {
		t.Errorf("daemonset status errors (-want +got):\n%s", diff)
	}

	rc := replicationController("web")
	createObj(t, ReplicationControllers(), rc)
	rc.ResourceVersion = "3"
	r := rc.DeepCopy()
	r.Status = corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2}
	want = []string{"status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"}
	if diff := cmp.Diff(want, errStrings(ReplicationControllers().ValidateUpdate(ReplicationControllers().PrepareForStatusUpdate(r, rc), rc))); diff != "" {
		t.Errorf("replication controller status errors (-want +got):\n%s", diff)
	}
}

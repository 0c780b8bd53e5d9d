package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestWorkloadTables(t *testing.T) {
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "app", Image: "nginx:1"}, {Name: "sidecar", Image: "envoy:1"}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		},
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cond := func(ty batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: ty, Status: corev1.ConditionTrue}}
	}
	jobCols := []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"}
	storage := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
	}
	deleting := objectMeta("old", time.Hour)
	deleting.DeletionTimestamp = ptr.To(ago(time.Minute))
	deleting.Namespace = ""

	tests := []struct {
		name      string
		obj       runtime.Object
		wantCols  []string
		wantCells []any
	}{
		{
			name: "running job",
			obj: &batchv1.Job{ObjectMeta: objectMeta("pi", 3*time.Minute),
				Spec:   batchv1.JobSpec{Completions: ptr.To[int32](3), Selector: sel, Template: tpl},
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: ptr.To(ago(2 * time.Minute))}},
			wantCols:  jobCols,
			wantCells: []any{"pi", "Running", "1/3", "2m", "3m", "app,sidecar", "nginx:1,envoy:1", "app=web"},
		},
		{
			name: "complete job",
			obj: &batchv1.Job{ObjectMeta: objectMeta("pi", time.Hour),
				Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Template: tpl},
				Status: batchv1.JobStatus{Succeeded: 1, Conditions: cond(batchv1.JobComplete),
					StartTime: ptr.To(ago(50 * time.Minute)), CompletionTime: ptr.To(ago(50*time.Minute - 17*time.Second))}},
			wantCols:  jobCols,
			wantCells: []any{"pi", "Complete", "1/1", "17s", "60m", "app,sidecar", "nginx:1,envoy:1", "<none>"},
		},
		{
			name: "suspended work queue job",
			obj: &batchv1.Job{ObjectMeta: objectMeta("q", time.Minute),
				Spec:   batchv1.JobSpec{Parallelism: ptr.To[int32](4), Template: tpl},
				Status: batchv1.JobStatus{Conditions: cond(batchv1.JobSuspended)}},
			wantCols:  jobCols,
			wantCells: []any{"q", "Suspended", "0/1 of 4", "", "60s", "app,sidecar", "nginx:1,envoy:1", "<none>"},
		},
		{
			name: "failed job",
			obj: &batchv1.Job{ObjectMeta: objectMeta("f", time.Minute), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](1)},
				Status: batchv1.JobStatus{Conditions: append(cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)...)}},
			wantCols:  jobCols,
			wantCells: []any{"f", "Failed", "0/1", "", "60s", "", "", "<none>"},
		},
		{
			name: "cron job",
			obj: &batchv1.CronJob{ObjectMeta: objectMeta("nightly", 48*time.Hour),
				Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", TimeZone: ptr.To("Europe/Paris"), Suspend: ptr.To(false),
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}}},
				Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-1"}}, LastScheduleTime: ptr.To(ago(5 * time.Hour))}},
			wantCols:  []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"nightly", "0 3 * * *", "Europe/Paris", "False", int64(1), "5h", "2d", "app,sidecar", "nginx:1,envoy:1", "<none>"},
		},
		{
			name:      "cron job never run",
			obj:       &batchv1.CronJob{ObjectMeta: objectMeta("c", time.Minute), Spec: batchv1.CronJobSpec{Schedule: "@hourly"}},
			wantCols:  []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"c", "@hourly", "<none>", "<unset>", int64(0), "<none>", "60s", "", "", "<none>"},
		},
		{
			name: "stateful set",
			obj: &appsv1.StatefulSet{ObjectMeta: objectMeta("db", 26*time.Hour),
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: tpl}, Status: appsv1.StatefulSetStatus{ReadyReplicas: 2}},
			wantCols:  []string{"Name", "Ready", "Age", "Containers*", "Images*"},
			wantCells: []any{"db", "2/3", "26h", "app,sidecar", "nginx:1,envoy:1"},
		},
		{
			name: "daemon set",
			obj: &appsv1.DaemonSet{ObjectMeta: objectMeta("agent", 10*24*time.Hour), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tpl},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2}},
			wantCols:  []string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"agent", int64(3), int64(3), int64(2), int64(3), int64(2), "kubernetes.io/os=linux", "10d", "app,sidecar", "nginx:1,envoy:1", "app=web"},
		},
		{
			name: "controller revision",
			obj: &appsv1.ControllerRevision{ObjectMeta: func() metav1.ObjectMeta {
				m := objectMeta("db-5d8f", time.Hour)
				m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: ptr.To(true)}}
				return m
			}(), Revision: 2},
			wantCols:  []string{"Name", "Controller", "Revision", "Age"},
			wantCells: []any{"db-5d8f", "statefulset.apps/db", int64(2), "60m"},
		},
		{
			name:      "orphan controller revision",
			obj:       &appsv1.ControllerRevision{ObjectMeta: objectMeta("x", time.Hour), Revision: 1},
			wantCols:  []string{"Name", "Controller", "Revision", "Age"},
			wantCells: []any{"x", "<none>", int64(1), "60m"},
		},
		{
			name: "replication controller",
			obj: &corev1.ReplicationController{ObjectMeta: objectMeta("rc", time.Hour),
				Spec:   corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "web"}, Template: &tpl},
				Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}},
			wantCols:  []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"rc", int64(2), int64(2), int64(1), "60m", "app,sidecar", "nginx:1,envoy:1", "app=web"},
		},
		{
			name:      "service account",
			obj:       &corev1.ServiceAccount{ObjectMeta: objectMeta("default", time.Hour), Secrets: []corev1.ObjectReference{{Name: "t"}}},
			wantCols:  []string{"Name", "Secrets", "Age"},
			wantCells: []any{"default", int64(1), "60m"},
		},
		{
			name: "bound claim",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: objectMeta("data", time.Hour),
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr.To("standard"), VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
					Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: storage("2Gi"),
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}}},
			wantCols:  []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode*"},
			wantCells: []any{"data", "Bound", "pv-1", "2Gi", "RWO,RWX", "standard", "<unset>", "60m", "Filesystem"},
		},
		{
			name: "pending claim",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: objectMeta("data", time.Minute),
				Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
			wantCols:  []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode*"},
			wantCells: []any{"data", "Pending", "", "", "", "", "<unset>", "60s", "<unset>"},
		},
		{
			name: "volume",
			obj: &corev1.PersistentVolume{ObjectMeta: deleting,
				Spec: corev1.PersistentVolumeSpec{Capacity: storage("10Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "standard",
					ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock)},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			wantCols:  []string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode*"},
			wantCells: []any{"old", "10Gi", "RWOP", "Retain", "Terminating", "default/data", "standard", "<unset>", "", "60m", "Block"},
		},
		{
			name: "resource quota",
			obj: &corev1.ResourceQuota{ObjectMeta: objectMeta("compute", time.Hour),
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("4"), "limits.memory": resource.MustParse("8Gi"), "pods": resource.MustParse("10")}},
				Status: corev1.ResourceQuotaStatus{
					Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("4"), "limits.memory": resource.MustParse("8Gi"), "pods": resource.MustParse("10")},
					Used: corev1.ResourceList{"requests.cpu": resource.MustParse("500m"), "pods": resource.MustParse("2")},
				}},
			wantCols:  []string{"Name", "Age", "Request", "Limit"},
			wantCells: []any{"compute", "60m", "pods: 2/10, requests.cpu: 500m/4", "limits.memory: 0/8Gi"},
		},
		{
			name:      "pod template",
			obj:       &corev1.PodTemplate{ObjectMeta: objectMeta("t", time.Hour), Template: tpl},
			wantCols:  []string{"Name", "Containers", "Images", "Pod Labels"},
			wantCells: []any{"t", "app,sidecar", "nginx:1,envoy:1", "app=web"},
		},
		{
			name:      "limit range has no printer",
			obj:       &corev1.LimitRange{ObjectMeta: objectMeta("limits", 5*time.Minute)},
			wantCols:  []string{"Name", "Created At"},
			wantCells: []any{"limits", "2026-11-29T11:55:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Convert(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCols, columnNames(table.ColumnDefinitions)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if diff := cmp.Diff(tt.wantCells, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			for _, c := range table.ColumnDefinitions {
				if c.Description == "" {
					t.Errorf("column %s has no description", c.Name)
				}
			}
		})
	}
}

func TestWorkloadListTables(t *testing.T) {
	list := &batchv1.JobList{Items: []batchv1.Job{{ObjectMeta: objectMeta("a", time.Minute)}, {ObjectMeta: objectMeta("b", time.Minute)}}}
	table, err := Convert(list, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 2 || table.Rows[1].Cells[0] != "b" {
		t.Fatalf("rows %+v", table.Rows)
	}
}

package apiserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJobCreateGeneratesSelector checks that a job created through the
// server gets its selector and pod labels from the uid and the name the
// server gave it, a generated name included.
func TestJobCreateGeneratesSelector(t *testing.T) {
	e := newTestEnv(t)
	body := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"generateName":"pi-"},
		"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"pi","image":"perl:5"}]}}}}`
	var j batchv1.Job
	e.mustCreate("/apis/batch/v1/namespaces/default/jobs", body, &j)
	if j.UID == "" || !strings.HasPrefix(j.Name, "pi-") || len(j.Name) != len("pi-")+5 {
		t.Fatalf("uid %q name %q", j.UID, j.Name)
	}
	want := map[string]string{
		"batch.kubernetes.io/controller-uid": string(j.UID), "controller-uid": string(j.UID),
		"batch.kubernetes.io/job-name": j.Name, "job-name": j.Name,
	}
	if diff := cmp.Diff(want, j.Spec.Template.Labels); diff != "" {
		t.Errorf("template labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, j.Labels); diff != "" {
		t.Errorf("job labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"batch.kubernetes.io/controller-uid": string(j.UID)}, j.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if *j.Spec.BackoffLimit != 6 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion {
		t.Errorf("spec not defaulted: %+v", j.Spec)
	}

	// Field selector on status.successful.
	var list batchv1.JobList
	e.do("GET", "/apis/batch/v1/namespaces/default/jobs?fieldSelector=status.successful%3D0", nil).decode(t, &list)
	if len(list.Items) != 1 {
		t.Errorf("status.successful=0 selected %d jobs", len(list.Items))
	}
	e.do("GET", "/apis/batch/v1/namespaces/default/jobs?fieldSelector=status.successful%3D1", nil).decode(t, &list)
	if len(list.Items) != 0 {
		t.Errorf("status.successful=1 selected %d jobs", len(list.Items))
	}

	// Without restartPolicy the template defaults to Always, which jobs refuse.
	bad := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},
		"spec":{"template":{"spec":{"containers":[{"name":"pi","image":"perl:5"}]}}}}`
	r := e.do("POST", "/apis/batch/v1/namespaces/default/jobs", bad)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if st := r.status(t); !strings.Contains(st.Message, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`) {
		t.Errorf("message %q", st.Message)
	}

	// The template may not change once the job runs.
	j.Spec.Template.Spec.Containers[0].Image = "perl:6"
	r = e.do("PUT", "/apis/batch/v1/namespaces/default/jobs/"+j.Name, &j)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if st := r.status(t); !strings.Contains(st.Message, "spec.template: Invalid value") || !strings.Contains(st.Message, "field is immutable") {
		t.Errorf("message %q", st.Message)
	}
}

// TestWorkloadSubresources checks a stateful set's scale subresource and a
// replication controller's selector defaulting through the server.
func TestWorkloadSubresources(t *testing.T) {
	e := newTestEnv(t)
	sts := `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
		"spec":{"replicas":2,"selector":{"matchLabels":{"app":"db"}},
		"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres:17"}]}}}}`
	e.mustCreate("/apis/apps/v1/namespaces/default/statefulsets", sts, nil)
	var sc autoscalingv1.Scale
	e.do("GET", "/apis/apps/v1/namespaces/default/statefulsets/db/scale", nil).decode(t, &sc)
	if sc.Spec.Replicas != 2 || sc.Status.Selector != "app=db" {
		t.Fatalf("scale %+v", sc)
	}
	sc.Spec.Replicas = 5
	e.do("PUT", "/apis/apps/v1/namespaces/default/statefulsets/db/scale", &sc).expect(t, 200, "")

	rc := `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"web"},
		"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`
	var got corev1.ReplicationController
	e.mustCreate("/api/v1/namespaces/default/replicationcontrollers", rc, &got)
	if got.Spec.Selector["app"] != "web" || *got.Spec.Replicas != 1 {
		t.Errorf("rc spec %+v", got.Spec)
	}

	pv := `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},
		"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`
	var v corev1.PersistentVolume
	e.mustCreate("/api/v1/persistentvolumes", pv, &v)
	if v.Status.Phase != corev1.VolumePending || v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		v.Status.LastPhaseTransitionTime == nil || !v.Status.LastPhaseTransitionTime.Equal(&v.CreationTimestamp) {
		t.Errorf("pv %+v %+v", v.Spec, v.Status)
	}
}

// TestWorkloadDiscoveryAndTables checks what kubectl finds of the workload
// resources: short names and the "all" category in discovery, and its
// columns for a list of cron jobs.
func TestWorkloadDiscoveryAndTables(t *testing.T) {
	e := newTestEnv(t)
	var batch metav1.APIResourceList
	e.do("GET", "/apis/batch/v1", nil).decode(t, &batch)
	found := map[string]metav1.APIResource{}
	for _, r := range batch.APIResources {
		found[r.Name] = r
	}
	if cj := found["cronjobs"]; cj.Kind != "CronJob" || len(cj.ShortNames) != 1 || cj.ShortNames[0] != "cj" || len(cj.Categories) != 1 || cj.Categories[0] != "all" {
		t.Errorf("cronjobs %+v", cj)
	}
	if _, ok := found["jobs/status"]; !ok {
		t.Errorf("no jobs/status in %v", batch.APIResources)
	}
	var core metav1.APIResourceList
	e.do("GET", "/api/v1", nil).decode(t, &core)
	for _, r := range core.APIResources {
		if r.Name == "persistentvolumes" && r.Namespaced {
			t.Error("persistentvolumes listed as namespaced")
		}
		if r.Name == "replicationcontrollers/scale" && (r.Kind != "Scale" || r.Group != "autoscaling") {
			t.Errorf("rc scale %+v", r)
		}
	}

	cj := `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"nightly"},
		"spec":{"schedule":"0 3 * * *","timeZone":"Europe/Paris","jobTemplate":{"spec":{"template":{"spec":{
		"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`
	e.mustCreate("/apis/batch/v1/namespaces/default/cronjobs", cj, nil)
	var table metav1.Table
	e.do("GET", "/apis/batch/v1/namespaces/default/cronjobs", nil, "Accept", kubectlGetAccept).decode(t, &table)
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"}, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[1] != "0 3 * * *" || table.Rows[0].Cells[2] != "Europe/Paris" || table.Rows[0].Cells[3] != "False" {
		t.Errorf("rows %+v", table.Rows)
	}

	bad := strings.Replace(cj, `"0 3 * * *"`, `"TZ=UTC 0 3 * * *"`, 1)
	bad = strings.Replace(bad, `"nightly"`, `"bad"`, 1)
	r := e.do("POST", "/apis/batch/v1/namespaces/default/cronjobs", bad)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if st := r.status(t); !strings.Contains(st.Message, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead") {
		t.Errorf("message %q", st.Message)
	}
}

// TestWorkloadOpenAPI checks that the workload kinds are in the OpenAPI
// documents kubectl reads (explain, apply's schema checks).
func TestWorkloadOpenAPI(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/openapi/v3/apis/batch/v1", nil)
	r.expect(t, 200, "")
	for _, def := range []string{"io.k8s.api.batch.v1.CronJob", "io.k8s.api.batch.v1.Job"} {
		if !strings.Contains(string(r.body), def) {
			t.Errorf("/openapi/v3/apis/batch/v1 lacks %s", def)
		}
	}
	r = e.do("GET", "/openapi/v2", nil)
	r.expect(t, 200, "")
	for _, def := range []string{"io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.apps.v1.DaemonSet", "io.k8s.api.apps.v1.ControllerRevision",
		"io.k8s.api.core.v1.PersistentVolumeClaim", "io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.LimitRange"} {
		if !strings.Contains(string(r.body), def) {
			t.Errorf("/openapi/v2 lacks %s", def)
		}
	}
}

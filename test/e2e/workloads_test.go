package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kplane/kplane/internal/podendpoint"
)

// workloadWait bounds every wait on a controller in these tests; it fails
// a test, it never paces one.
const workloadWait = 60 * time.Second

// One `kplane up`, driven by kubectl as a user would: the Job, CronJob,
// StatefulSet, DaemonSet and EndpointSlice controllers each do their work
// in a namespace of their own, all at once.
func TestWorkloads(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)
	kc := p.kubeconfig
	pollUntil(t, "the three simulated nodes", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}{\" \"}{end}")
		return got == "kplane-node-0 kplane-node-1 kplane-node-2", got
	})
	t.Run("controllers", func(t *testing.T) {
		t.Run("Job", func(t *testing.T) { t.Parallel(); testJobParallelism(t, kc) })
		t.Run("FailingJob", func(t *testing.T) { t.Parallel(); testJobBackoffLimit(t, kc) })
		t.Run("IndexedJob", func(t *testing.T) { t.Parallel(); testIndexedJob(t, kc) })
		t.Run("CronJob", func(t *testing.T) { t.Parallel(); testCronJob(t, kc) })
		t.Run("StatefulSet", func(t *testing.T) { t.Parallel(); testStatefulSet(t, kc) })
		t.Run("DaemonSet", func(t *testing.T) { t.Parallel(); testDaemonSet(t, kc) })
		t.Run("EndpointSlice", func(t *testing.T) { t.Parallel(); testEndpointSlice(t, kc) })
	})
	p.stop(t)
}

// A Job of 5 completions, 2 at a time, finishes with 5 succeeded pods and
// never more than 2 running.
func testJobParallelism(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-job")
	w := watchPods(t, kc, ns)
	job := runJob(t, kc, ns, "batch", "complete", "{completions: 5, parallelism: 2}", "{}")
	if job.Status.Succeeded != 5 || job.Status.Failed != 0 || job.Status.Active != 0 {
		t.Fatalf("job status succeeded/failed/active %d/%d/%d, want 5/0/0", job.Status.Succeeded, job.Status.Failed, job.Status.Active)
	}
	if got := jobPods(t, kc, ns, "batch"); !slices.Equal(got, []string{"Succeeded", "Succeeded", "Succeeded", "Succeeded", "Succeeded"}) {
		t.Fatalf("job pods' phases %v, want five Succeeded", got)
	}
	// Replay every pod change in the order the server made them: the
	// number of unfinished pods of the Job peaks at exactly parallelism.
	unfinished := map[string]bool{}
	peak := 0
	for _, e := range w.events(t) {
		if e.Object.Labels["job-name"] != "batch" {
			continue
		}
		ph := e.Object.Status.Phase
		unfinished[e.Object.Name] = e.Type != "DELETED" && ph != corev1.PodSucceeded && ph != corev1.PodFailed
		n := 0
		for _, u := range unfinished {
			if u {
				n++
			}
		}
		peak = max(peak, n)
	}
	if peak != 2 {
		t.Fatalf("at most %d of the job's pods were unfinished at once, want parallelism 2", peak)
	}
	if len(unfinished) != 5 {
		t.Fatalf("the watch saw %d pods of the job, want 5", len(unfinished))
	}
}

// A Job whose pods fail, with backoffLimit 2, fails with
// BackoffLimitExceeded after exactly 3 failed pods.
func testJobBackoffLimit(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-failjob")
	// Failed pods are replaced after 10 s, then 20 s.
	job := runJob(t, kc, ns, "doomed", "failed", "{backoffLimit: 2}", `{nodesim.kplane.io/exit-code: "3"}`)
	c := jobCondition(job, batchv1.JobFailed)
	if c == nil || c.Reason != "BackoffLimitExceeded" {
		t.Fatalf("job Failed condition %+v, want reason BackoffLimitExceeded", c)
	}
	if job.Status.Failed != 3 || job.Status.Succeeded != 0 || job.Status.Active != 0 {
		t.Fatalf("job status failed/succeeded/active %d/%d/%d, want 3/0/0", job.Status.Failed, job.Status.Succeeded, job.Status.Active)
	}
	if got := jobPods(t, kc, ns, "doomed"); !slices.Equal(got, []string{"Failed", "Failed", "Failed"}) {
		t.Fatalf("job pods' phases %v, want three Failed", got)
	}
}

// An Indexed Job of 3 completions succeeds once per index.
func testIndexedJob(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-indexed")
	job := runJob(t, kc, ns, "shards", "complete", "{completions: 3, parallelism: 3, completionMode: Indexed}", "{}")
	if job.Status.CompletedIndexes != "0-2" || job.Status.Succeeded != 3 || job.Status.Failed != 0 {
		t.Fatalf("job completedIndexes %q succeeded %d failed %d, want \"0-2\" 3 0", job.Status.CompletedIndexes, job.Status.Succeeded, job.Status.Failed)
	}
	if got := jobPods(t, kc, ns, "shards"); !slices.Equal(got, []string{"Succeeded 0", "Succeeded 1", "Succeeded 2"}) {
		t.Fatalf("pods' phases and completion indexes %v, want one Succeeded pod for each of 0, 1, 2", got)
	}
}

// jobManifest is a Job named name with the spec fields in spec (a YAML
// flow map) whose pods, with restartPolicy Never, carry the annotations
// podAnnotations (one too).
func jobManifest(name, spec, podAnnotations string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec: %s
`, name, strings.TrimSuffix(spec, "}")+
		`, template: {metadata: {annotations: `+podAnnotations+`}, spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}`)
}

// runJob applies jobManifest in ns, waits for the Job's condition (complete
// or failed) and returns the Job.
func runJob(t *testing.T, kc, ns, name, condition, spec, podAnnotations string) batchv1.Job {
	t.Helper()
	kubectlIn(t, kc, jobManifest(name, spec, podAnnotations), "apply", "-n", ns, "-f", "-")
	kubectlWith(t, kc, "wait", "-n", ns, "--for=condition="+condition, "job/"+name, "--timeout=90s")
	var job batchv1.Job
	getJSON(t, kc, &job, "get", "-n", ns, "job", name)
	return job
}

// cronJobManifest runs every minute, one Job at a time, keeping one
// successful Job; it starts suspended, so that nothing runs before the
// test has set the scene.
const cronJobManifest = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
`

// A CronJob prunes its finished Jobs to its history limit, oldest start
// first; with concurrencyPolicy Forbid it starts nothing for a missed start
// time while a Job of its runs, and starts the most recent missed one once
// that Job has finished. Missed start times, rather than the next minute,
// keep this quick and deterministic: the test records an older
// lastScheduleTime, as a controller that was down would have left it.
func testCronJob(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-cronjob")
	t.Cleanup(func() {
		if t.Failed() {
			for _, what := range []string{"events", "cronjob", "jobs"} {
				out, _ := kubectlResult(t, kc, "", "get", "-n", ns, what, "-o", "yaml")
				t.Logf("%s:\n%s", what, out)
			}
		}
	})
	kubectlIn(t, kc, cronJobManifest, "apply", "-n", ns, "-f", "-")
	uid := kubectlWith(t, kc, "get", "-n", ns, "cronjob", "tick", "-o", "jsonpath={.metadata.uid}")

	// Jobs owned by the CronJob that another controller runs (managedBy),
	// so that their status is the test's to write. Names sort against
	// their start times: the newest start is "done-a".
	for i, name := range []string{"done-c", "done-b", "done-a"} {
		createForeignJob(t, kc, ns, name, uid)
		finishForeignJob(t, kc, ns, name, time.Date(2026, 1, 1, 10, i, 0, 0, time.UTC))
	}
	pollUntil(t, "the CronJob to prune its Jobs to successfulJobsHistoryLimit 1", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "name")
		return got == "job.batch/done-a", got
	})
	var cj batchv1.CronJob
	getJSON(t, kc, &cj, "get", "-n", ns, "cronjob", "tick")
	if cj.Status.LastScheduleTime != nil || len(cj.Status.Active) != 0 {
		t.Fatalf("suspended CronJob's lastScheduleTime %v, active %v: want neither", cj.Status.LastScheduleTime, cj.Status.Active)
	}
	if want := time.Date(2026, 1, 1, 10, 2, 5, 0, time.UTC); cj.Status.LastSuccessfulTime == nil || !cj.Status.LastSuccessfulTime.Time.Equal(want) {
		t.Fatalf("lastSuccessfulTime %v, want the newest completion %v", cj.Status.LastSuccessfulTime, want)
	}

	// An unfinished Job of the CronJob, recorded as active, with the last
	// start time five minutes ago: start times were missed, but Forbid
	// holds them back.
	blockerUID := createForeignJob(t, kc, ns, "blocker", uid)
	before := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	status, err := json.Marshal(map[string]any{"status": map[string]any{
		"lastScheduleTime": before.Format(time.RFC3339),
		"active":           []map[string]string{{"apiVersion": "batch/v1", "kind": "Job", "namespace": ns, "name": "blocker", "uid": blockerUID}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	kubectlWith(t, kc, "patch", "-n", ns, "cronjob", "tick", "--subresource=status", "--type=merge", "-p", string(status))
	kubectlWith(t, kc, "patch", "-n", ns, "cronjob", "tick", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	pollUntil(t, "a JobAlreadyActive event", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=tick,reason=JobAlreadyActive", "-o", "name")
		return got != "", got
	})
	getJSON(t, kc, &cj, "get", "-n", ns, "cronjob", "tick")
	if cj.Status.LastScheduleTime == nil || !cj.Status.LastScheduleTime.Time.Equal(before) {
		t.Fatalf("lastScheduleTime %v while a Job is active under Forbid, want it left at %v", cj.Status.LastScheduleTime, before)
	}
	if got := kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "name"); got != "job.batch/blocker\njob.batch/done-a" {
		t.Fatalf("jobs while Forbid holds back:\n%s\nwant only blocker and done-a", got)
	}

	// Once the blocker finishes, the most recent missed start time runs:
	// the minute now, or a later one if a minute begins meanwhile. The
	// CronJob is suspended again as soon as it has started a Job, so that
	// the next minutes start no more.
	lo := time.Now().UTC().Truncate(time.Minute)
	finishForeignJob(t, kc, ns, "blocker", time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC))
	pollUntil(t, "the CronJob to start a Job", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "name")
		return strings.Contains(got, "job.batch/tick-"), got
	})
	kubectlWith(t, kc, "patch", "-n", ns, "cronjob", "tick", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	hi := time.Now().UTC().Truncate(time.Minute)
	var job batchv1.Job
	pollUntil(t, "the CronJob to record its Job's success and prune the rest", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "name")
		name, ok := strings.CutPrefix(got, "job.batch/tick-")
		if !ok || strings.Contains(name, "\n") {
			return false, "jobs " + got
		}
		getJSON(t, kc, &job, "get", "-n", ns, "job", "tick-"+name)
		getJSON(t, kc, &cj, "get", "-n", ns, "cronjob", "tick")
		state := fmt.Sprintf("job %s completionTime %v; CronJob active %v, lastScheduleTime %v, lastSuccessfulTime %v",
			job.Name, job.Status.CompletionTime, cj.Status.Active, cj.Status.LastScheduleTime, cj.Status.LastSuccessfulTime)
		return job.Status.CompletionTime != nil && len(cj.Status.Active) == 0 && cj.Status.LastSuccessfulTime != nil &&
			cj.Status.LastSuccessfulTime.Time.Equal(job.Status.CompletionTime.Time), state
	})
	last := cj.Status.LastScheduleTime
	if last == nil || last.Time.Before(lo) || last.Time.After(hi) {
		t.Fatalf("lastScheduleTime %v, want a minute from %v to %v", last, lo, hi)
	}
	if want := "tick-" + strconv.FormatInt(last.Unix()/60, 10); job.Name != want {
		t.Fatalf("the CronJob's Job is %s, want %s for lastScheduleTime %v", job.Name, want, last.Time)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != last.Time.UTC().Format(time.RFC3339) {
		t.Fatalf("job's scheduled-timestamp annotation %q, want %s", got, last.Time.UTC().Format(time.RFC3339))
	}
	if job.Status.Succeeded != 1 {
		t.Fatalf("job %s succeeded %d, want 1", job.Name, job.Status.Succeeded)
	}
	// The Jobs the test made are unexpected to the controller; those it
	// started itself never are.
	unexpected := kubectlWith(t, kc, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=tick,reason=UnexpectedJob",
		"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	if strings.Contains(unexpected, "tick-") {
		t.Fatalf("UnexpectedJob events for the CronJob's own Jobs:\n%s", unexpected)
	}
}

// createForeignJob creates a Job controlled by the CronJob with uid
// cronJobUID but run by another controller, and returns its uid.
func createForeignJob(t *testing.T, kc, ns, name, cronJobUID string) string {
	t.Helper()
	kubectlIn(t, kc, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: tick, uid: %s, controller: true}]
spec:
  managedBy: example.com/elsewhere
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
`, name, cronJobUID), "create", "-n", ns, "-f", "-")
	return kubectlWith(t, kc, "get", "-n", ns, "job", name, "-o", "jsonpath={.metadata.uid}")
}

// finishForeignJob writes the status of a Job that succeeded: started at
// start, complete 5 s later.
func finishForeignJob(t *testing.T, kc, ns, name string, start time.Time) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"startTime":%q,"completionTime":%q,"succeeded":1,"conditions":[
		{"type":"SuccessCriteriaMet","status":"True","reason":"CompletionsReached"},
		{"type":"Complete","status":"True","reason":"CompletionsReached"}]}}`,
		start.Format(time.RFC3339), start.Add(5*time.Second).Format(time.RFC3339))
	kubectlWith(t, kc, "patch", "-n", ns, "job", name, "--subresource=status", "--type=merge", "-p", patch)
}

const statefulSetManifest = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.26", ports: [{containerPort: 80}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// A StatefulSet starts its pods in order, each once the one before is
// Ready, with a claim each; it rolls out by partition, rolls back with
// kubectl rollout undo and keeps the claims when scaled down.
func testStatefulSet(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-sts")
	w := watchPods(t, kc, ns)
	kubectlIn(t, kc, statefulSetManifest, "apply", "-n", ns, "-f", "-")
	kubectlWith(t, kc, "rollout", "status", "-n", ns, "sts/web", "--timeout=60s")

	// In the server's order of changes, web-i appears only after web-(i-1)
	// was seen Ready.
	created, ready := map[string]int{}, map[string]int{}
	for i, e := range w.events(t) {
		name := e.Object.Name
		if _, ok := created[name]; !ok && e.Type == "ADDED" {
			created[name] = i
		}
		if _, ok := ready[name]; !ok && e.Type != "DELETED" && podendpoint.IsPodReady(&e.Object) {
			ready[name] = i
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		if _, ok := created[name]; !ok {
			t.Fatalf("the watch never saw %s created (saw %v)", name, created)
		}
		if i == 0 {
			continue
		}
		prev := fmt.Sprintf("web-%d", i-1)
		r, ok := ready[prev]
		if !ok || created[name] < r {
			t.Fatalf("%s was created at change %d, %s Ready at %d (seen %v): want it created only after", name, created[name], prev, r, ok)
		}
	}
	wantClaims := "persistentvolumeclaim/data-web-0\npersistentvolumeclaim/data-web-1\npersistentvolumeclaim/data-web-2"
	if got := kubectlWith(t, kc, "get", "-n", ns, "pvc", "-o", "name"); got != wantClaims {
		t.Fatalf("claims:\n%s\nwant\n%s", got, wantClaims)
	}
	var sts appsv1.StatefulSet
	getJSON(t, kc, &sts, "get", "-n", ns, "sts", "web")
	first := sts.Status.CurrentRevision
	if first == "" || sts.Status.UpdateRevision != first {
		t.Fatalf("revisions current %q update %q after the first rollout", first, sts.Status.UpdateRevision)
	}

	// Partition 2: only web-2 moves to the new template.
	kubectlWith(t, kc, "patch", "-n", ns, "sts", "web", "-p",
		`{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`)
	kubectlWith(t, kc, "rollout", "status", "-n", ns, "sts/web", "--timeout=60s")
	getJSON(t, kc, &sts, "get", "-n", ns, "sts", "web")
	second := sts.Status.UpdateRevision
	if second == first || sts.Status.CurrentRevision != first {
		t.Fatalf("revisions current %q update %q during the partitioned rollout, want %q and a new one", sts.Status.CurrentRevision, second, first)
	}
	wantPods(t, kc, ns, map[string]string{"web-0": first + " nginx:1.26", "web-1": first + " nginx:1.26", "web-2": second + " nginx:1.27"})

	kubectlWith(t, kc, "patch", "-n", ns, "sts", "web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	kubectlWith(t, kc, "rollout", "status", "-n", ns, "sts/web", "--timeout=60s")
	wantPods(t, kc, ns, map[string]string{"web-0": second + " nginx:1.27", "web-1": second + " nginx:1.27", "web-2": second + " nginx:1.27"})

	// Undo goes back to the first template and its revision.
	kubectlWith(t, kc, "rollout", "undo", "-n", ns, "sts/web")
	kubectlWith(t, kc, "rollout", "status", "-n", ns, "sts/web", "--timeout=60s")
	getJSON(t, kc, &sts, "get", "-n", ns, "sts", "web")
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.26" || sts.Status.UpdateRevision != first {
		t.Fatalf("after undo: image %s, update revision %q, want nginx:1.26 and %q", got, sts.Status.UpdateRevision, first)
	}
	wantPods(t, kc, ns, map[string]string{"web-0": first + " nginx:1.26", "web-1": first + " nginx:1.26", "web-2": first + " nginx:1.26"})

	// Scaling down deletes pods from the top and keeps every claim.
	kubectlWith(t, kc, "scale", "-n", ns, "sts/web", "--replicas=1")
	pollUntil(t, "the StatefulSet to scale down to web-0", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "pods", "-l", "app=web", "-o", "name")
		return got == "pod/web-0", got
	})
	if got := kubectlWith(t, kc, "get", "-n", ns, "pvc", "-o", "name"); got != wantClaims {
		t.Fatalf("claims after scaling down:\n%s\nwant\n%s", got, wantClaims)
	}
}

// wantPods checks that exactly the named pods exist, Ready, each with its
// "<controller-revision-hash> <image>".
func wantPods(t *testing.T, kc, ns string, want map[string]string) {
	t.Helper()
	var pods corev1.PodList
	getJSON(t, kc, &pods, "get", "-n", ns, "pods", "-l", "app=web")
	got := map[string]string{}
	for _, p := range pods.Items {
		got[p.Name] = p.Labels[appsv1.ControllerRevisionHashLabelKey] + " " + p.Spec.Containers[0].Image
		if !podendpoint.IsPodReady(&p) || p.DeletionTimestamp != nil {
			got[p.Name] += " (not ready)"
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("pods %v, want %v", got, want)
	}
}

// A DaemonSet runs a pod on every node; it follows a Node object added and
// deleted with kubectl, and keeps its pod on a simulated node that
// registers again after kubectl delete node.
//
// `kplane up` cannot add simulated nodes while it runs (--nodes is fixed),
// so the added node is a bare Node object without a kubelet: the
// DaemonSet's pod for it is created, aimed at it, and stays Pending.
func testDaemonSet(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-ds")
	kubectlIn(t, kc, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: busybox}]}
`, "apply", "-n", ns, "-f", "-")
	kubectlWith(t, kc, "rollout", "status", "-n", ns, "ds/agent", "--timeout=60s")
	wantDaemonStatus(t, kc, ns, "3/3/3")
	onNodes := daemonPods(t, kc, ns)
	if want := []string{"kplane-node-0", "kplane-node-1", "kplane-node-2"}; !slices.Equal(slices.Sorted(maps.Keys(onNodes)), want) {
		t.Fatalf("daemon pods by node %v, want one on each of %v", onNodes, want)
	}

	kubectlIn(t, kc, `apiVersion: v1
kind: Node
metadata: {name: wl-extra-node, labels: {kubernetes.io/hostname: wl-extra-node}}
`, "create", "-f", "-")
	t.Cleanup(func() { _, _ = kubectlResult(t, kc, "", "delete", "node", "wl-extra-node", "--ignore-not-found") })
	// desired/current scheduled/ready: the new node's pod exists, not ready.
	wantDaemonStatus(t, kc, ns, "4/4/3")
	if got := daemonPods(t, kc, ns); got["wl-extra-node"] == "" || len(got) != 4 {
		t.Fatalf("daemon pods by node %v, want one aimed at wl-extra-node too", got)
	}

	kubectlWith(t, kc, "delete", "node", "wl-extra-node")
	wantDaemonStatus(t, kc, ns, "3/3/3")
	pollUntil(t, "the deleted node's daemon pod to go", func() (bool, string) {
		got := daemonPods(t, kc, ns)
		return maps.Equal(got, onNodes), fmt.Sprint(got)
	})

	// A simulated node deleted with kubectl registers again, as a running
	// kubelet does, and its daemon pod is the same one, counted again.
	oldUID := kubectlWith(t, kc, "get", "node", "kplane-node-2", "-o", "jsonpath={.metadata.uid}")
	kubectlWith(t, kc, "delete", "node", "kplane-node-2")
	pollUntil(t, "kplane-node-2 to register again", func() (bool, string) {
		out, ok := kubectlResult(t, kc, "", "get", "node", "kplane-node-2", "-o", "jsonpath={.metadata.uid}")
		return ok && out != oldUID, out
	})
	wantDaemonStatus(t, kc, ns, "3/3/3")
	if got := daemonPods(t, kc, ns); !maps.Equal(got, onNodes) {
		t.Fatalf("daemon pods by node %v after kplane-node-2 came back, want the same %v", got, onNodes)
	}
}

// wantDaemonStatus waits for the DaemonSet agent's
// "desiredNumberScheduled/currentNumberScheduled/numberReady".
func wantDaemonStatus(t *testing.T, kc, ns, want string) {
	t.Helper()
	pollUntil(t, "DaemonSet status "+want, func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}/{.status.currentNumberScheduled}/{.status.numberReady}")
		return got == want, got
	})
}

// daemonPods maps the node each of the namespace's pods is aimed at (by
// its node affinity, as the DaemonSet controller sets it) to the pod's
// name; a node with two pods fails the test.
func daemonPods(t *testing.T, kc, ns string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	getJSON(t, kc, &pods, "get", "-n", ns, "pods")
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := ""
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, f := range term.MatchFields {
					if f.Key == "metadata.name" && len(f.Values) == 1 {
						node = f.Values[0]
					}
				}
			}
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != node {
			t.Fatalf("daemon pod %s is bound to %s but aimed at %q", p.Name, p.Spec.NodeName, node)
		}
		if prev, dup := out[node]; dup {
			t.Fatalf("daemon pods %s and %s both on node %q", prev, p.Name, node)
		}
		out[node] = p.Name
	}
	return out
}

// A Deployment exposed as a Service: its EndpointSlice and Endpoints list
// exactly the ready pods' IPs, through scaling up and down.
func testEndpointSlice(t *testing.T, kc string) {
	ns := workloadNamespace(t, kc, "wl-eps")
	kubectlWith(t, kc, "create", "deployment", "web", "-n", ns, "--image=nginx", "--replicas=3")
	kubectlWith(t, kc, "expose", "deployment", "web", "-n", ns, "--port=80")
	for _, replicas := range []int{3, 5, 2} {
		kubectlWith(t, kc, "scale", "-n", ns, "deployment/web", "--replicas="+strconv.Itoa(replicas))
		kubectlWith(t, kc, "rollout", "status", "-n", ns, "deployment/web", "--timeout=60s")
		pollUntil(t, fmt.Sprintf("endpoints of %d ready pods", replicas), func() (bool, string) {
			return endpointsMatchPods(t, kc, ns, replicas)
		})
	}
}

// endpointsMatchPods reports whether exactly n pods of app=web exist, all
// Ready, and the Service web's one managed EndpointSlice and its Endpoints
// list exactly their IPs on port 80, all ready.
func endpointsMatchPods(t *testing.T, kc, ns string, n int) (bool, string) {
	t.Helper()
	var pods corev1.PodList
	getJSON(t, kc, &pods, "get", "-n", ns, "pods", "-l", "app=web")
	var podIPs []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podendpoint.IsPodReady(&p) && p.Status.PodIP != "" {
			podIPs = append(podIPs, p.Status.PodIP)
		}
	}
	sort.Strings(podIPs)
	var slices_ discoveryv1.EndpointSliceList
	getJSON(t, kc, &slices_, "get", "-n", ns, "endpointslices", "-l",
		"kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io")
	var sliceIPs, notReady []string
	var ports []string
	for _, s := range slices_.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				sliceIPs = append(sliceIPs, e.Addresses...)
			} else {
				notReady = append(notReady, e.Addresses...)
			}
		}
		for _, p := range s.Ports {
			if p.Port != nil {
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			}
		}
	}
	sort.Strings(sliceIPs)
	//lint:ignore SA1019 the endpoints controller still writes Endpoints, and kubectl users still read them
	var ep corev1.Endpoints
	getJSON(t, kc, &ep, "get", "-n", ns, "endpoints", "web")
	var epIPs, epNotReady []string
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			epIPs = append(epIPs, a.IP)
		}
		for _, a := range s.NotReadyAddresses {
			epNotReady = append(epNotReady, a.IP)
		}
	}
	sort.Strings(epIPs)
	state := fmt.Sprintf("%d pods, ready IPs %v; %d slices, ready %v, not ready %v, ports %v; endpoints %v, not ready %v",
		len(pods.Items), podIPs, len(slices_.Items), sliceIPs, notReady, ports, epIPs, epNotReady)
	ok := len(pods.Items) == n && len(podIPs) == n && len(slices_.Items) == 1 &&
		slices.Equal(sliceIPs, podIPs) && len(notReady) == 0 && slices.Equal(ports, []string{"80"}) &&
		slices.Equal(epIPs, podIPs) && len(epNotReady) == 0
	return ok, state
}

// A Job of 6 completions, 3 at a time, and an Indexed one alike, whose
// pods run a while, complete exactly once each although the leading
// controller manager (running the Job controller and the simulated nodes)
// is killed midway and a second one takes over.
func TestWorkloadsJobFailover(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	s := startAPIServer(t, kplaneBin, "--storage", "memory")
	kc := s.kubeconfig
	managers := []*managerProcess{
		startControllerManager(t, kc, "--controllers", "job,serviceaccount,nodesim"),
		startControllerManager(t, kc, "--controllers", "job,serviceaccount,nodesim"),
	}
	ns := workloadNamespace(t, kc, "wl-failover")
	w := watchPods(t, kc, ns)
	// Each pod runs 4 s, so that the second wave of pods is running long
	// enough for the poll below, whose kubectl calls take a second or more
	// on a loaded 2-core machine, to see it (at 1.5 s both Jobs could
	// finish between two polls).
	for _, mode := range []string{"NonIndexed", "Indexed"} {
		kubectlIn(t, kc, jobManifest(strings.ToLower(mode), "{completions: 6, parallelism: 3, completionMode: "+mode+"}",
			"{nodesim.kplane.io/complete-after: 4s}"), "apply", "-n", ns, "-f", "-")
	}
	// Kill the leader once both Jobs are midway: some pods done, some
	// running.
	pollUntil(t, "both Jobs midway", func() (bool, string) {
		got := kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "jsonpath={range .items[*]}{.status.succeeded}/{.status.active} {end}")
		for _, f := range strings.Fields(got) {
			done, active, _ := strings.Cut(f, "/")
			if done == "" || done == "0" || active == "" || active == "0" {
				return false, got
			}
		}
		return len(strings.Fields(got)) == 2, got
	})
	holder := kubectlWith(t, kc, "get", "lease", "-n", "kube-system", "kplane-controller-manager", "-o", "jsonpath={.spec.holderIdentity}")
	t.Logf("killing the leader %s with the Jobs' succeeded/active at %s", holder,
		kubectlWith(t, kc, "get", "-n", ns, "jobs", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.succeeded}/{.status.active} {end}"))
	var leader, standby *managerProcess
	for i, m := range managers {
		if m.identity == holder {
			leader, standby = m, managers[1-i]
		}
	}
	if leader == nil {
		t.Fatalf("lease holder %q is neither %q nor %q", holder, managers[0].identity, managers[1].identity)
	}
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	kubectlWith(t, kc, "wait", "--for=jsonpath={.spec.holderIdentity}="+standby.identity, "-n", "kube-system", "lease/kplane-controller-manager", "--timeout=30s")
	kubectlWith(t, kc, "wait", "-n", ns, "--for=condition=complete", "job/nonindexed", "job/indexed", "--timeout=60s")

	for _, name := range []string{"nonindexed", "indexed"} {
		var job batchv1.Job
		getJSON(t, kc, &job, "get", "-n", ns, "job", name)
		if job.Status.Succeeded != 6 {
			t.Errorf("job %s status.succeeded %d, want 6", name, job.Status.Succeeded)
		}
		// Every pod that ever succeeded, by uid, from the watch.
		succeeded := map[string]string{}
		for _, e := range w.events(t) {
			if e.Object.Labels["job-name"] == name && e.Object.Status.Phase == corev1.PodSucceeded {
				succeeded[string(e.Object.UID)] = e.Object.Annotations[batchv1.JobCompletionIndexAnnotation]
			}
		}
		if len(succeeded) != 6 {
			t.Errorf("job %s: %d pods ever succeeded, want 6: %v", name, len(succeeded), succeeded)
		}
		if name == "indexed" {
			idx := slices.Sorted(maps.Values(succeeded))
			if !slices.Equal(idx, []string{"0", "1", "2", "3", "4", "5"}) || job.Status.CompletedIndexes != "0-5" {
				t.Errorf("indexed job: succeeded pods' indexes %v, completedIndexes %q, want 0..5 once each and \"0-5\"", idx, job.Status.CompletedIndexes)
			}
		}
	}
}

// workloadNamespace creates the namespace and waits for its default
// ServiceAccount, which ServiceAccount admission wants of every pod.
func workloadNamespace(t *testing.T, kc, ns string) string {
	t.Helper()
	kubectlWith(t, kc, "create", "namespace", ns)
	kubectlWith(t, kc, "wait", "-n", ns, "--for=create", "serviceaccount/default", "--timeout=60s")
	return ns
}

// kubectlIn runs kubectl with stdin and returns its trimmed output; it
// fails the test if kubectl fails.
func kubectlIn(t *testing.T, kc, stdin string, args ...string) string {
	t.Helper()
	out, ok := kubectlResult(t, kc, stdin, args...)
	if !ok {
		t.Fatalf("kubectl %s: %s", strings.Join(args, " "), out)
	}
	return out
}

// getJSON runs kubectl with args and -o json and decodes what it prints
// on stdout into out.
func getJSON(t *testing.T, kc string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", append(args, "-o", "json")...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	// Warnings, such as the deprecation of v1 Endpoints, go to stderr.
	// Fields absent from the JSON must not keep what a reused out held.
	reflect.ValueOf(out).Elem().SetZero()
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("kubectl %s: decode: %v\n%s", strings.Join(args, " "), err, data)
	}
}

// pollUntil calls check until it reports true, failing the test with the
// last state check described if workloadWait passes first.
func pollUntil(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(workloadWait)
	for {
		ok, state := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %s after %v", what, state, workloadWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobPods lists, sorted, the phase of each pod of the Job, followed by
// its completion index if it has one.
func jobPods(t *testing.T, kc, ns, job string) []string {
	t.Helper()
	var pods corev1.PodList
	getJSON(t, kc, &pods, "get", "-n", ns, "pods", "-l", "job-name="+job)
	var out []string
	for _, p := range pods.Items {
		out = append(out, strings.TrimSpace(string(p.Status.Phase)+" "+p.Annotations[batchv1.JobCompletionIndexAnnotation]))
	}
	sort.Strings(out)
	return out
}

func jobCondition(j batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// podChange is one change `kubectl get pods --watch --output-watch-events`
// prints.
type podChange struct {
	Type   string     `json:"type"`
	Object corev1.Pod `json:"object"`
}

// podWatch records, in the server's order, every change to the pods of a
// namespace from the moment watchPods returns.
type podWatch struct {
	mu    sync.Mutex
	seen  []podChange // guarded by mu
	ended error       // guarded by mu; why the stream ended, if it did
}

// watchMarker is the pod watchPods creates to learn that its watch is
// established; the events of its pod are not recorded.
const watchMarker = "wl-watch-marker"

// watchPods starts kubectl watching the namespace's pods and returns once
// the watch sees a marker pod it creates, so that every later change is
// recorded. kubectl is stopped when the test ends.
func watchPods(t *testing.T, kc, ns string) *podWatch {
	t.Helper()
	cmd := exec.Command("kubectl", "get", "pods", "-n", ns, "--watch", "--output-watch-events", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	cmd.Stderr = &testWriter{t: t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &podWatch{}
	marked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(stdout)
		isMarked := false
		for {
			var e podChange
			if err := dec.Decode(&e); err != nil {
				w.mu.Lock()
				w.ended = err
				w.mu.Unlock()
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
			if e.Object.Name == watchMarker {
				if !isMarked {
					isMarked = true
					close(marked)
				}
				continue
			}
			w.mu.Lock()
			w.seen = append(w.seen, e)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	kubectlIn(t, kc, `apiVersion: v1
kind: Pod
metadata: {name: `+watchMarker+`}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox}]
`, "create", "-n", ns, "-f", "-")
	select {
	case <-marked:
	case <-done:
		t.Fatal("kubectl get pods --watch ended before it saw the marker pod")
	case <-time.After(workloadWait):
		t.Fatal("kubectl get pods --watch did not show the marker pod")
	}
	// The marker has no part in what the test looks at.
	kubectlWith(t, kc, "delete", "pod", "-n", ns, watchMarker, "--wait=false")
	return w
}

// events returns the changes recorded so far; it fails the test if the
// watch has ended, as changes may then be missing.
func (w *podWatch) events(t *testing.T) []podChange {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended != nil {
		t.Fatalf("kubectl get pods --watch ended early (%v): changes may be missing", w.ended)
	}
	return slices.Clone(w.seen)
}

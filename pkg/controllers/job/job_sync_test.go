package job

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

// fakeAPI records every write the sync makes.
type fakeAPI struct {
	mu       sync.Mutex
	actions  []string
	created  []*corev1.Pod
	statuses []batchv1.JobStatus
	job      *batchv1.Job
	n        int
}

func (f *fakeAPI) record(a string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
}

func (f *fakeAPI) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	out := pod.DeepCopy()
	out.Name = fmt.Sprintf("%sx%d", pod.GenerateName, f.n)
	f.created = append(f.created, out)
	f.actions = append(f.actions, "create "+pod.GenerateName)
	return out, nil
}

func (f *fakeAPI) DeletePod(_ context.Context, _, name string, _ types.UID) error {
	f.record("delete " + name)
	return nil
}

func (f *fakeAPI) Patch(_ context.Context, _, name string, _ types.PatchType, data []byte) error {
	kind := "adopt"
	if strings.Contains(string(data), TrackingFinalizer) {
		kind = "unfinalize"
	}
	f.record(kind + " " + name)
	return nil
}

func (f *fakeAPI) GetJob(context.Context, string, string) (*batchv1.Job, error) { return f.job, nil }

func (f *fakeAPI) UpdateStatus(_ context.Context, j *batchv1.Job) (*batchv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "status")
	f.statuses = append(f.statuses, *j.Status.DeepCopy())
	return j.DeepCopy(), nil
}

// count is how many actions start with prefix.
func (f *fakeAPI) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, a := range f.actions {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}

type fakeRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *fakeRecorder) Event(_ record.Object, _, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	t        testing.TB
	s        *syncer
	api      *fakeAPI
	rec      *fakeRecorder
	clock    *clocktesting.FakeClock
	requeued []time.Duration
}

func newFixture(t testing.TB, job *batchv1.Job, pods ...*corev1.Pod) *fixture {
	t.Helper()
	jobIdx, err := cache.NewIndexer(cache.IndexerConfig[*batchv1.Job]{})
	if err != nil {
		t.Fatal(err)
	}
	podIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.AddControllerUIDIndex(podIdx); err != nil {
		t.Fatal(err)
	}
	if err := controller.AddIndex(podIdx, controllerJobIndex, controllerJobIndexFunc); err != nil {
		t.Fatal(err)
	}
	if job != nil {
		if err := jobIdx.Add(job); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if err := podIdx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(t0)
	exp, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, api: &fakeAPI{job: job}, rec: &fakeRecorder{}, clock: clk}
	f.s = &syncer{
		jobLister:  cache.NewLister(jobIdx, batchv1.Resource("jobs")),
		podIndexer: podIdx,
		pods:       f.api, jobs: f.api, recorder: f.rec,
		expectations: exp, finalizers: newFinalizerExpectations(), clock: clk,
		enqueueAfter: func(_ string, d time.Duration) { f.requeued = append(f.requeued, d) },
		backoff:      DefaultPodFailureBackoff, maxBackoff: DefaultMaxPodFailureBackoff, burst: DefaultBurst,
	}
	return f
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.s.sync(f.t.Context(), "ns/j"); err != nil {
		f.t.Fatal(err)
	}
}

// status is the last status written.
func (f *fixture) status() batchv1.JobStatus {
	f.t.Helper()
	if len(f.api.statuses) == 0 {
		f.t.Fatalf("no status written; actions %v", f.api.actions)
	}
	return f.api.statuses[len(f.api.statuses)-1]
}

// newTestJob is a running Job "ns/j", started a minute before t0.
func newTestJob(completions, parallelism int32, edit ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Completions:          &completions,
			Parallelism:          &parallelism,
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid", batchv1.JobNameLabel: "j"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: t0.Add(-time.Minute)}},
	}
	for _, e := range edit {
		e(j)
	}
	return j
}

func indexed(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }

// pod states for testPod.
const (
	running    = "running"
	succeeded  = "succeeded"
	failed     = "failed"
	deleting   = "deleting"
	failedLong = "failed-long-ago"
)

// testPod is a pod of j in state, with the tracking finalizer, index idx
// (or none when negative) and, for failed pods, exit code 1.
func testPod(j *batchv1.Job, name, state string, idx int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
			Labels:            map[string]string{batchv1.ControllerUidLabel: "job-uid"},
			Annotations:       map[string]string{},
			Finalizers:        []string{TrackingFinalizer},
			CreationTimestamp: metav1.Time{Time: t0.Add(-30 * time.Second)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{NodeName: "n1"},
	}
	if idx >= 0 {
		p.Annotations[CompletionIndexKey] = fmt.Sprint(idx)
		p.Labels[CompletionIndexKey] = fmt.Sprint(idx)
	}
	end := func(code int32, ago time.Duration) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.Time{Time: t0.Add(-ago)}},
		}}}
	}
	switch state {
	case running:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	case succeeded:
		p.Status.Phase = corev1.PodSucceeded
		end(0, time.Second)
	case failed:
		p.Status.Phase = corev1.PodFailed
		end(1, time.Second)
	case failedLong:
		p.Status.Phase = corev1.PodFailed
		end(1, time.Hour)
	case deleting:
		p.Status.Phase = corev1.PodRunning
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return p
}

func condReasons(st batchv1.JobStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type)+"/"+c.Reason)
		}
	}
	return out
}

func TestSyncCreatesPods(t *testing.T) {
	tests := []struct {
		name                     string
		completions, parallelism int32
		edit                     func(*batchv1.Job)
		pods                     func(j *batchv1.Job) []*corev1.Pod
		wantCreates              int
		wantDeletes              int
	}{
		{name: "parallelism pods are started", completions: 5, parallelism: 2, wantCreates: 2},
		{name: "never more than the completions left", completions: 3, parallelism: 5, wantCreates: 3},
		{name: "succeeded pods lower the completions left", completions: 3, parallelism: 3, wantCreates: 1,
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", succeeded, -1), testPod(j, "b", running, -1)}
			}},
		{name: "surplus active pods are deleted when parallelism drops", completions: 5, parallelism: 1, wantDeletes: 2,
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", running, -1), testPod(j, "b", running, -1), testPod(j, "c", running, -1)}
			}},
		{name: "a terminating pod is replaced under TerminatingOrFailed", completions: 2, parallelism: 2, wantCreates: 1,
			pods: func(j *batchv1.Job) []*corev1.Pod {
				p := testPod(j, "b", deleting, -1)
				p.Finalizers = nil
				return []*corev1.Pod{testPod(j, "a", running, -1), p}
			}},
		{name: "a terminating pod is not replaced under podReplacementPolicy Failed", completions: 2, parallelism: 2,
			edit: func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) },
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", running, -1), testPod(j, "b", deleting, -1)}
			}},
		{name: "without completions parallelism pods run until one succeeds", completions: 0, parallelism: 3, wantCreates: 3,
			edit: func(j *batchv1.Job) { j.Spec.Completions = nil }},
		{name: "without completions no pod is added after a success", completions: 0, parallelism: 3,
			edit: func(j *batchv1.Job) { j.Spec.Completions = nil },
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", succeeded, -1), testPod(j, "b", running, -1)}
			}},
		{name: "a suspended job deletes its active pods and creates none", completions: 3, parallelism: 2, wantDeletes: 1,
			edit: func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) },
			pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{testPod(j, "a", running, -1)} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edits []func(*batchv1.Job)
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			j := newTestJob(tt.completions, tt.parallelism, edits...)
			var pods []*corev1.Pod
			if tt.pods != nil {
				pods = tt.pods(j)
			}
			f := newFixture(t, j, pods...)
			f.sync()
			if got := f.api.count("create"); got != tt.wantCreates {
				t.Errorf("creates = %d, want %d (%v)", got, tt.wantCreates, f.api.actions)
			}
			if got := f.api.count("delete"); got != tt.wantDeletes {
				t.Errorf("deletes = %d, want %d (%v)", got, tt.wantDeletes, f.api.actions)
			}
			for _, p := range f.api.created {
				if !hasTrackingFinalizer(p) || p.GenerateName != "j-" || metav1.GetControllerOf(p).UID != j.UID {
					t.Errorf("created pod %s: finalizers %v, controller %v", p.Name, p.Finalizers, p.OwnerReferences)
				}
			}
		})
	}
}

func TestSyncCountsFinishedPodsThroughUncounted(t *testing.T) {
	j := newTestJob(3, 2)
	f := newFixture(t, j, testPod(j, "a", succeeded, -1), testPod(j, "b", failed, -1), testPod(j, "c", running, -1))
	f.sync()
	// The uids go into uncountedTerminatedPods before the finalizers are
	// removed, and into the counters after.
	want := []string{"status", "unfinalize a", "unfinalize b", "status"}
	got := slices.DeleteFunc(slices.Clone(f.api.actions), func(a string) bool { return strings.HasPrefix(a, "create") })
	slices.Sort(got[1:3])
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	first := f.api.statuses[0].UncountedTerminatedPods
	if !slices.Equal(first.Succeeded, []types.UID{"a-uid"}) || !slices.Equal(first.Failed, []types.UID{"b-uid"}) {
		t.Fatalf("first status uncounted = %+v", first)
	}
	st := f.status()
	if st.Succeeded != 1 || st.Failed != 1 || len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) != 0 {
		t.Fatalf("final status = %+v", st)
	}
	if st.Active != 1 || *st.Ready != 1 {
		t.Fatalf("active %d ready %d", st.Active, *st.Ready)
	}
	// A second sync on the stale cache counts nothing twice.
	f.api.job.Status = st
	f2 := f.api.count("unfinalize")
	f.sync()
	if f.api.count("unfinalize") != f2 {
		t.Fatalf("finalizers removed again: %v", f.api.actions)
	}
}

func TestSyncConditions(t *testing.T) {
	exitCodeRule := func(action batchv1.PodFailurePolicyAction, codes ...int32) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes},
			}}}
		}
	}
	tests := []struct {
		name        string
		completions int32
		parallelism int32
		edit        []func(*batchv1.Job)
		pods        func(j *batchv1.Job) []*corev1.Pod
		want        []string
		wantDeletes int
		wantFailed  int32
	}{
		{name: "completions reached: SuccessCriteriaMet then Complete", completions: 2, parallelism: 2,
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", succeeded, -1), testPod(j, "b", succeeded, -1)}
			},
			want: []string{"SuccessCriteriaMet/CompletionsReached", "Complete/CompletionsReached"}},
		{name: "backoffLimit exceeded: FailureTarget, active pods deleted, Failed later", completions: 5, parallelism: 2,
			edit: []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, -1), testPod(j, "b", running, -1)}
			},
			want: []string{"FailureTarget/BackoffLimitExceeded"}, wantDeletes: 1, wantFailed: 1},
		{name: "backoffLimit exceeded with no pod left: Failed", completions: 5, parallelism: 1,
			edit: []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, -1), testPod(j, "b", failed, -1)}
			},
			want: []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}, wantFailed: 2},
		{name: "activeDeadlineSeconds passed: DeadlineExceeded", completions: 5, parallelism: 1,
			edit: []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }},
			pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{testPod(j, "a", running, -1)} },
			want: []string{"FailureTarget/DeadlineExceeded"}, wantDeletes: 1},
		{name: "pod failure policy FailJob on exit code", completions: 5, parallelism: 2,
			edit: []func(*batchv1.Job){exitCodeRule(batchv1.PodFailurePolicyActionFailJob, 1)},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, -1), testPod(j, "b", running, -1)}
			},
			want: []string{"FailureTarget/PodFailurePolicy"}, wantDeletes: 1, wantFailed: 1},
		{name: "pod failure policy Ignore does not count the failure", completions: 5, parallelism: 1,
			edit: []func(*batchv1.Job){exitCodeRule(batchv1.PodFailurePolicyActionIgnore, 1), func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }},
			pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{testPod(j, "a", failed, -1)} },
			want: nil},
		{name: "pod failure policy Count counts the failure", completions: 5, parallelism: 1,
			edit: []func(*batchv1.Job){exitCodeRule(batchv1.PodFailurePolicyActionCount, 1), func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }},
			pods: func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{testPod(j, "a", failed, -1)} },
			want: []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}, wantFailed: 1},
		{name: "pod failure policy on a pod condition", completions: 5, parallelism: 1,
			edit: []func(*batchv1.Job){func(j *batchv1.Job) {
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action: batchv1.PodFailurePolicyActionFailJob, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "ConfigIssue"}},
				}}}
			}},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				p := testPod(j, "a", failed, -1)
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "ConfigIssue", Status: corev1.ConditionTrue})
				return []*corev1.Pod{p}
			},
			want: []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}, wantFailed: 1},
		{name: "success policy met: SuccessCriteriaMet SuccessPolicy and the rest deleted", completions: 3, parallelism: 3,
			edit: []func(*batchv1.Job){indexed, func(j *batchv1.Job) {
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
			}},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", succeeded, 0), testPod(j, "b", running, 1), testPod(j, "c", running, 2)}
			},
			want: []string{"SuccessCriteriaMet/SuccessPolicy"}, wantDeletes: 2},
		{name: "backoffLimitPerIndex: index failed past its limit, others go on", completions: 3, parallelism: 3,
			edit: []func(*batchv1.Job){indexed, func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](0) }},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, 0), testPod(j, "b", running, 1), testPod(j, "c", running, 2)}
			},
			want: nil, wantFailed: 1},
		{name: "maxFailedIndexes exceeded", completions: 3, parallelism: 3,
			edit: []func(*batchv1.Job){indexed, func(j *batchv1.Job) {
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
				j.Spec.MaxFailedIndexes = ptr.To[int32](0)
			}},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, 0), testPod(j, "b", running, 1)}
			},
			want: []string{"FailureTarget/MaxFailedIndexesExceeded"}, wantDeletes: 1, wantFailed: 1},
		{name: "every index done with failed ones: FailedIndexes", completions: 2, parallelism: 2,
			edit: []func(*batchv1.Job){indexed, func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](0) }},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, 0), testPod(j, "b", succeeded, 1)}
			},
			want: []string{"FailureTarget/FailedIndexes", "Failed/FailedIndexes"}, wantFailed: 1},
		{name: "pod failure policy FailIndex fails the index at once", completions: 2, parallelism: 2,
			edit: []func(*batchv1.Job){indexed, exitCodeRule(batchv1.PodFailurePolicyActionFailIndex, 1), func(j *batchv1.Job) {
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](5)
			}},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{testPod(j, "a", failed, 0), testPod(j, "b", succeeded, 1)}
			},
			want: []string{"FailureTarget/FailedIndexes", "Failed/FailedIndexes"}, wantFailed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newTestJob(tt.completions, tt.parallelism, tt.edit...)
			f := newFixture(t, j, tt.pods(j)...)
			f.sync()
			st := f.status()
			if diff := cmp.Diff(tt.want, condReasons(st)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if got := f.api.count("delete"); got != tt.wantDeletes {
				t.Errorf("deletes = %d, want %d (%v)", got, tt.wantDeletes, f.api.actions)
			}
			if st.Failed != tt.wantFailed {
				t.Errorf("failed = %d, want %d", st.Failed, tt.wantFailed)
			}
		})
	}
}

func TestSyncCompleteSetsCompletionTimeAndEvent(t *testing.T) {
	j := newTestJob(1, 1)
	f := newFixture(t, j, testPod(j, "a", succeeded, -1))
	f.sync()
	st := f.status()
	if st.CompletionTime == nil || !st.CompletionTime.Equal(&metav1.Time{Time: t0}) || st.Succeeded != 1 {
		t.Fatalf("status = %+v", st)
	}
	if !slices.Contains(f.rec.reasons, ReasonCompleted) {
		t.Fatalf("events = %v", f.rec.reasons)
	}
}

func TestSyncFailedIndexesReported(t *testing.T) {
	j := newTestJob(3, 3, indexed, func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](0) })
	f := newFixture(t, j, testPod(j, "a", failed, 0), testPod(j, "b", succeeded, 2), testPod(j, "c", running, 1))
	f.sync()
	st := f.status()
	if st.FailedIndexes == nil || *st.FailedIndexes != "0" || st.CompletedIndexes != "2" {
		t.Fatalf("failedIndexes %v completedIndexes %q", st.FailedIndexes, st.CompletedIndexes)
	}
	if f.api.count("create") != 0 {
		t.Fatalf("a failed index was retried: %v", f.api.actions)
	}
}

func TestSyncPodBackoff(t *testing.T) {
	tests := []struct {
		name    string
		failed  int
		longAgo bool
		want    time.Duration // 0: create at once
	}{
		{name: "one failure waits 10s", failed: 1, want: 10*time.Second - time.Second},
		{name: "two failures wait 20s", failed: 2, want: 20*time.Second - time.Second},
		{name: "the delay is capped at 6 minutes", failed: 12, want: 6*time.Minute - time.Second},
		{name: "an old failure waits no more", failed: 1, longAgo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newTestJob(1, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](100) })
			var pods []*corev1.Pod
			for i := range tt.failed {
				state := failed
				if tt.longAgo {
					state = failedLong
				}
				p := testPod(j, fmt.Sprintf("f%d", i), state, -1)
				p.Finalizers = nil
				pods = append(pods, p)
			}
			f := newFixture(t, j, pods...)
			f.sync()
			creates := f.api.count("create")
			if tt.want == 0 {
				if creates != 1 {
					t.Fatalf("creates = %d, want 1", creates)
				}
				return
			}
			if creates != 0 || !slices.Contains(f.requeued, tt.want) {
				t.Fatalf("creates %d requeued %v, want none and %v", creates, f.requeued, tt.want)
			}
		})
	}
}

func TestSyncIndexedPods(t *testing.T) {
	j := newTestJob(4, 3, indexed)
	pods := []*corev1.Pod{testPod(j, "a", succeeded, 0), testPod(j, "b", running, 1), testPod(j, "b2", running, 1)}
	pods[2].CreationTimestamp = metav1.Time{Time: t0}
	f := newFixture(t, j, pods...)
	f.sync()
	if f.api.count("delete b2") != 1 {
		t.Fatalf("duplicate of index 1 not deleted: %v", f.api.actions)
	}
	var got []string
	for _, p := range f.api.created {
		idx := p.Annotations[CompletionIndexKey]
		got = append(got, idx)
		if p.Labels[CompletionIndexKey] != idx || p.Spec.Hostname != "j-"+idx || p.GenerateName != "j-"+idx+"-" {
			t.Errorf("pod for index %s: labels %v hostname %q generateName %q", idx, p.Labels, p.Spec.Hostname, p.GenerateName)
		}
		if env := p.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" {
			t.Errorf("env = %v", env)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"2", "3"}, got); diff != "" {
		t.Fatalf("created indexes (-want +got):\n%s", diff)
	}
	if st := f.status(); st.CompletedIndexes != "0" {
		t.Fatalf("completedIndexes = %q", st.CompletedIndexes)
	}
}

func TestSyncIndexFailureCountAnnotation(t *testing.T) {
	j := newTestJob(1, 1, indexed, func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](3) })
	prev := testPod(j, "a", failedLong, 0)
	prev.Finalizers = nil
	prev.Annotations[IndexFailureCountKey] = "1"
	f := newFixture(t, j, prev)
	f.sync()
	if len(f.api.created) != 1 || f.api.created[0].Annotations[IndexFailureCountKey] != "2" {
		t.Fatalf("created %v", f.api.created)
	}
}

func TestSyncSuspendAndResume(t *testing.T) {
	j := newTestJob(2, 2, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	f := newFixture(t, j, testPod(j, "a", running, -1))
	f.sync()
	st := f.status()
	if diff := cmp.Diff([]string{"Suspended/JobSuspended"}, condReasons(st)); diff != "" || st.StartTime != nil {
		t.Fatalf("suspended status: %s startTime %v", diff, st.StartTime)
	}
	if f.api.count("delete a") != 1 || !slices.Contains(f.rec.reasons, ReasonSuspended) {
		t.Fatalf("actions %v events %v", f.api.actions, f.rec.reasons)
	}

	resumed := newTestJob(2, 2)
	resumed.Status = st
	f = newFixture(t, resumed)
	f.clock.Step(time.Hour)
	f.sync()
	st = f.status()
	c := findCondition(&st, batchv1.JobSuspended)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonJobResumed {
		t.Fatalf("Suspended condition after resume = %+v", c)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0.Add(time.Hour)) || f.api.count("create") != 2 {
		t.Fatalf("startTime %v, actions %v", st.StartTime, f.api.actions)
	}
}

func TestSyncDeadlineRequeues(t *testing.T) {
	j := newTestJob(1, 1, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](90) })
	f := newFixture(t, j, testPod(j, "a", running, -1))
	f.sync()
	if !slices.Contains(f.requeued, 30*time.Second) {
		t.Fatalf("requeued %v, want 30s", f.requeued)
	}
}

func TestSyncFinishedJobReleasesFinalizers(t *testing.T) {
	j := newTestJob(1, 1, func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	})
	f := newFixture(t, j, testPod(j, "a", succeeded, -1))
	f.sync()
	if diff := cmp.Diff([]string{"unfinalize a"}, f.api.actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
}

func TestSyncDeletedJobReleasesOrphans(t *testing.T) {
	j := newTestJob(1, 1)
	f := newFixture(t, nil, testPod(j, "a", running, -1))
	f.sync()
	if diff := cmp.Diff([]string{"unfinalize a"}, f.api.actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
}

func TestIndexSetIntervals(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""}, {"0", "0"}, {"0,1", "0-1"}, {"3,1,2,7", "1-3,7"}, {"1-3,5-6,9", "1-3,5-6,9"}, {"x,2,4-3", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := parseIndexes(tt.in, -1).String(); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := parseIndexes("0-9", 3).String(); got != "0-2" {
		t.Fatalf("limit: got %q", got)
	}
}

func TestSyncRecreatedJobReleasesOnlyItsPredecessorsPods(t *testing.T) {
	old := newTestJob(1, 1, func(j *batchv1.Job) { j.UID = "old-uid" })
	other := newTestJob(1, 1, func(j *batchv1.Job) { j.Name, j.UID = "other", "other-uid" })
	j := newTestJob(1, 1, func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	})
	notJob := testPod(old, "rs-pod", running, -1)
	notJob.OwnerReferences[0].Kind, notJob.OwnerReferences[0].APIVersion = "ReplicaSet", "apps/v1"
	f := newFixture(t, j,
		testPod(old, "old-pod", running, -1),
		testPod(other, "other-pod", running, -1),
		notJob,
	)
	f.sync()
	// The pods of the deleted Job of the same name lose their finalizer;
	// the pods of another Job and of a ReplicaSet of that name keep theirs.
	if diff := cmp.Diff([]string{"unfinalize old-pod"}, f.api.actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
}

package cronjob

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller/record"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

type fakeAPI struct {
	mu       sync.Mutex
	actions  []string
	created  []*batchv1.Job
	statuses []batchv1.CronJobStatus
	existing map[string]*batchv1.Job // what GetJob finds
	stored   *batchv1.CronJob        // what GetCronJob finds; nil for none
}

func (f *fakeAPI) GetCronJob(_ context.Context, _, name string) (*batchv1.CronJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "get-cronjob "+name)
	if f.stored == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "cronjobs"}, name)
	}
	return f.stored.DeepCopy(), nil
}

func (f *fakeAPI) CreateJob(_ context.Context, j *batchv1.Job) (*batchv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.existing[j.Name]; ok {
		f.actions = append(f.actions, "create-exists "+j.Name)
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "batch", Resource: "jobs"}, j.Name)
	}
	f.actions = append(f.actions, "create "+j.Name)
	out := j.DeepCopy()
	out.UID = types.UID(j.Name + "-uid")
	f.created = append(f.created, out)
	return out, nil
}

func (f *fakeAPI) GetJob(_ context.Context, _, name string) (*batchv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j, ok := f.existing[name]; ok {
		return j, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, name)
}

func (f *fakeAPI) DeleteJob(_ context.Context, _, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "delete "+name)
	return nil
}

func (f *fakeAPI) UpdateStatus(_ context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "status")
	f.statuses = append(f.statuses, *cj.Status.DeepCopy())
	return cj.DeepCopy(), nil
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

func newCronJob(schedule string, edit ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cj", UID: "cj-uid", CreationTimestamp: metav1.Time{Time: t0.Add(-90 * time.Second)}},
		Spec: batchv1.CronJobSpec{
			Schedule:                   schedule,
			ConcurrencyPolicy:          batchv1.AllowConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
	for _, e := range edit {
		e(cj)
	}
	return cj
}

// childJob is a Job of cj started at start, finished as cond says ("" for
// running).
func childJob(cj *batchv1.CronJob, name string, start time.Time, cond batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: start}},
	}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		if cond == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: start.Add(time.Second)}
		}
	}
	return j
}

func activeRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID}
}

type fixture struct {
	s        *syncer
	api      *fakeAPI
	rec      *fakeRecorder
	requeued []time.Duration
}

func newFixture(t *testing.T, now time.Time, cj *batchv1.CronJob, jobs ...*batchv1.Job) *fixture {
	t.Helper()
	cjIdx, err := cache.NewIndexer(cache.IndexerConfig[*batchv1.CronJob]{})
	if err != nil {
		t.Fatal(err)
	}
	jobIdx, err := cache.NewIndexer(cache.IndexerConfig[*batchv1.Job]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cjIdx.Add(cj); err != nil {
		t.Fatal(err)
	}
	f := &fixture{api: &fakeAPI{existing: map[string]*batchv1.Job{}}, rec: &fakeRecorder{}}
	for _, j := range jobs {
		if err := jobIdx.Add(j); err != nil {
			t.Fatal(err)
		}
		f.api.existing[j.Name] = j
	}
	f.s = &syncer{
		cronJobLister: cache.NewLister(cjIdx, batchv1.Resource("cronjobs")),
		jobLister:     cache.NewLister(jobIdx, batchv1.Resource("jobs")),
		jobs:          f.api, cronJobs: f.api, recorder: f.rec, clock: clocktesting.NewFakeClock(now),
		enqueueAfter: func(_ string, d time.Duration) { f.requeued = append(f.requeued, d) },
	}
	if err := f.s.sync(t.Context(), "ns/cj"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) status(t *testing.T) batchv1.CronJobStatus {
	t.Helper()
	if len(f.api.statuses) == 0 {
		t.Fatalf("no status written: %v", f.api.actions)
	}
	return f.api.statuses[len(f.api.statuses)-1]
}

// minuteName is the job name for the start time at t.
func minuteName(t time.Time) string { return fmt.Sprintf("cj-%d", t.Unix()/60) }

func TestSyncStartsDueJob(t *testing.T) {
	f := newFixture(t, t0.Add(5*time.Second), newCronJob("* * * * *"))
	if diff := cmp.Diff([]string{"create " + minuteName(t0), "status"}, f.api.actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	j := f.api.created[0]
	if j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-01-01T10:00:00Z" || j.Labels["app"] != "x" {
		t.Fatalf("job meta: %+v", j.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != "cj-uid" || ref.Kind != "CronJob" {
		t.Fatalf("owner = %v", j.OwnerReferences)
	}
	st := f.status(t)
	if len(st.Active) != 1 || st.Active[0].Name != j.Name || !st.LastScheduleTime.Time.Equal(t0) {
		t.Fatalf("status = %+v", st)
	}
	// The next start is at 10:01, 55s away (plus the delta).
	if !slices.Contains(f.requeued, 55*time.Second+nextScheduleDelta) {
		t.Fatalf("requeued %v", f.requeued)
	}
}

func TestSyncSchedules(t *testing.T) {
	tests := []struct {
		name       string
		schedule   string
		edit       func(*batchv1.CronJob)
		now        time.Time
		wantCreate string // "" for none
		wantEvent  string
	}{
		{name: "nothing due before the first start time", schedule: "0 * * * *", now: t0.Add(-time.Second)},
		{name: "@hourly starts on the hour", schedule: "@hourly", now: t0.Add(time.Minute), wantCreate: minuteName(t0)},
		{name: "@every is accepted as the parser does", schedule: "@every 1m", now: t0, wantCreate: minuteName(t0.Add(-30 * time.Second))},
		{name: "only the most recent missed start time runs", schedule: "* * * * *", now: t0.Add(10 * time.Minute),
			edit:       func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(-time.Hour)} },
			wantCreate: minuteName(t0.Add(10 * time.Minute))},
		{name: "over 100 missed start times warn", schedule: "* * * * *", now: t0.Add(3 * time.Hour),
			wantCreate: minuteName(t0.Add(3 * time.Hour)), wantEvent: ReasonTooManyMissedTimes},
		{name: "startingDeadlineSeconds bounds the missed start times", schedule: "* * * * *", now: t0.Add(3 * time.Hour),
			edit:       func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](120) },
			wantCreate: minuteName(t0.Add(3 * time.Hour))},
		{name: "a start time older than startingDeadlineSeconds is missed", schedule: "0 * * * *", now: t0.Add(30 * time.Minute),
			edit: func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](1200)
				cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(-time.Hour)}
			}},
		{name: "a missed start within startingDeadlineSeconds still runs", schedule: "0 * * * *", now: t0.Add(30 * time.Minute),
			edit: func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](3600)
				cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(-time.Hour)}
			}, wantCreate: minuteName(t0)},
		{name: "suspended starts nothing", schedule: "* * * * *", now: t0.Add(time.Minute),
			edit: func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }},
		{name: "a start time already met is not run again", schedule: "* * * * *", now: t0.Add(30 * time.Second),
			edit: func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: t0} }},
		{name: "timeZone shifts the schedule", schedule: "0 11 * * *", now: t0.Add(time.Minute),
			edit:       func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Europe/Paris") }, // 11:00 in Paris is 10:00 UTC in January
			wantCreate: minuteName(t0)},
		{name: "an unknown timeZone is reported", schedule: "* * * * *", now: t0.Add(time.Minute),
			edit: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }, wantEvent: ReasonUnknownTimeZone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edits []func(*batchv1.CronJob)
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			cj := newCronJob(tt.schedule, edits...)
			if tt.schedule == "@every 1m" {
				cj.CreationTimestamp = metav1.Time{Time: t0.Add(-90 * time.Second)}
			}
			f := newFixture(t, tt.now, cj)
			var got string
			for _, j := range f.api.created {
				got = j.Name
			}
			if got != tt.wantCreate || len(f.api.created) > 1 {
				t.Errorf("created %v, want %q", f.api.actions, tt.wantCreate)
			}
			if tt.wantEvent != "" && !slices.Contains(f.rec.reasons, tt.wantEvent) {
				t.Errorf("events %v, want %s", f.rec.reasons, tt.wantEvent)
			}
		})
	}
}

func TestSyncConcurrencyPolicy(t *testing.T) {
	tests := []struct {
		policy batchv1.ConcurrencyPolicy
		want   []string
	}{
		{batchv1.AllowConcurrent, []string{"create " + minuteName(t0), "status"}},
		{batchv1.ForbidConcurrent, nil},
		{batchv1.ReplaceConcurrent, []string{"delete old", "create " + minuteName(t0), "status"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			cj := newCronJob("* * * * *", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = tt.policy })
			old := childJob(cj, "old", t0.Add(-time.Minute), "")
			cj.Status.Active = []corev1.ObjectReference{activeRef(old)}
			cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(-time.Minute)}
			f := newFixture(t, t0.Add(time.Second), cj, old)
			if diff := cmp.Diff(tt.want, f.api.actions); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
			if tt.policy == batchv1.ForbidConcurrent && !slices.Contains(f.rec.reasons, ReasonJobAlreadyActive) {
				t.Fatalf("events %v", f.rec.reasons)
			}
		})
	}
}

func TestSyncTracksFinishedJobsAndPrunesHistory(t *testing.T) {
	cj := newCronJob("0 0 1 1 *", func(cj *batchv1.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2)
		cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
		cj.Status.LastScheduleTime = &metav1.Time{Time: t0.Add(-time.Hour)}
	})
	var jobs []*batchv1.Job
	for i := range 4 {
		jobs = append(jobs, childJob(cj, fmt.Sprintf("ok%d", i), t0.Add(time.Duration(i-10)*time.Minute), batchv1.JobComplete))
	}
	jobs = append(jobs, childJob(cj, "bad0", t0.Add(-9*time.Minute), batchv1.JobFailed), childJob(cj, "bad1", t0.Add(-8*time.Minute), batchv1.JobFailed))
	running := childJob(cj, "run", t0.Add(-time.Minute), "")
	jobs = append(jobs, running)
	cj.Status.Active = []corev1.ObjectReference{activeRef(jobs[3]), activeRef(running), {Kind: "Job", Namespace: "ns", Name: "gone", UID: "gone-uid"}}
	f := newFixture(t, t0, cj, jobs...)
	st := f.status(t)
	if diff := cmp.Diff([]corev1.ObjectReference{activeRef(running)}, st.Active); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
	if st.LastSuccessfulTime == nil || !st.LastSuccessfulTime.Time.Equal(t0.Add(-7*time.Minute+time.Second)) {
		t.Errorf("lastSuccessfulTime = %v", st.LastSuccessfulTime)
	}
	var deleted []string
	for _, a := range f.api.actions {
		if name, ok := cutPrefix(a, "delete "); ok {
			deleted = append(deleted, name)
		}
	}
	slices.Sort(deleted)
	if diff := cmp.Diff([]string{"bad0", "ok0", "ok1"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if !slices.Contains(f.rec.reasons, ReasonSawCompletedJob) {
		t.Errorf("events %v", f.rec.reasons)
	}
}

// A controller restarted after creating a Job but before recording it
// tracks that Job instead of starting another.
func TestSyncAdoptsJobItCreatedBeforeARestart(t *testing.T) {
	cj := newCronJob("* * * * *")
	existing := childJob(cj, minuteName(t0), t0, "")
	f2 := newFixtureWithExisting(t, t0.Add(time.Second), cj, existing)
	st := f2.status(t)
	if len(f2.api.created) != 0 || len(st.Active) != 1 || st.Active[0].UID != existing.UID {
		t.Fatalf("actions %v status %+v", f2.api.actions, st)
	}
}

// newFixtureWithExisting syncs once with job known to the server but not
// yet to the cache.
func newFixtureWithExisting(t *testing.T, now time.Time, cj *batchv1.CronJob, job *batchv1.Job) *fixture {
	t.Helper()
	cjIdx, _ := cache.NewIndexer(cache.IndexerConfig[*batchv1.CronJob]{})
	jobIdx, _ := cache.NewIndexer(cache.IndexerConfig[*batchv1.Job]{})
	if err := cjIdx.Add(cj); err != nil {
		t.Fatal(err)
	}
	f := &fixture{api: &fakeAPI{existing: map[string]*batchv1.Job{job.Name: job}}, rec: &fakeRecorder{}}
	f.s = &syncer{
		cronJobLister: cache.NewLister(cjIdx, batchv1.Resource("cronjobs")),
		jobLister:     cache.NewLister(jobIdx, batchv1.Resource("jobs")),
		jobs:          f.api, cronJobs: f.api, recorder: f.rec, clock: clocktesting.NewFakeClock(now),
		enqueueAfter: func(_ string, d time.Duration) { f.requeued = append(f.requeued, d) },
	}
	if err := f.s.sync(t.Context(), "ns/cj"); err != nil {
		t.Fatal(err)
	}
	return f
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

func TestMostRecentScheduleTime(t *testing.T) {
	tests := []struct {
		name       string
		schedule   string
		created    time.Time
		now        time.Time
		want       time.Time // zero: none
		wantMissed int
	}{
		{name: "none yet", schedule: "*/5 * * * *", created: t0, now: t0.Add(4 * time.Minute)},
		{name: "one", schedule: "*/5 * * * *", created: t0, now: t0.Add(6 * time.Minute), want: t0.Add(5 * time.Minute), wantMissed: 1},
		{name: "several", schedule: "*/5 * * * *", created: t0, now: t0.Add(23 * time.Minute), want: t0.Add(20 * time.Minute), wantMissed: 4},
		{name: "a year of minutes", schedule: "* * * * *", created: t0, now: t0.Add(365*24*time.Hour + 30*time.Second), want: t0.Add(365 * 24 * time.Hour), wantMissed: 365 * 24 * 60},
		{name: "uneven monthly schedule over years", schedule: "0 0 31 * *", created: t0, now: time.Date(2031, 5, 1, 0, 0, 0, 0, time.UTC), want: time.Date(2031, 3, 31, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := parseSchedule(tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: tt.created}}}
			got, missed := mostRecentScheduleTime(cj, tt.now, sched)
			if tt.want.IsZero() {
				if got != nil {
					t.Fatalf("got %v, want none", got)
				}
				return
			}
			if got == nil || !got.Equal(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if tt.wantMissed != 0 && missed != tt.wantMissed {
				t.Fatalf("missed %d, want %d", missed, tt.wantMissed)
			}
		})
	}
}

// A Job the controller created and recorded in status.active, seen by the
// Job cache before the CronJob cache has that status, is neither
// unexpected nor started again: the controller reads the CronJob from the
// server and finds it there.
func TestSyncReadsCronJobPastALaggingCache(t *testing.T) {
	cached := newCronJob("* * * * *")
	job := childJob(cached, minuteName(t0), t0, "")
	stored := cached.DeepCopy()
	stored.ResourceVersion = "2"
	stored.Status.Active = []corev1.ObjectReference{activeRef(job)}
	stored.Status.LastScheduleTime = &metav1.Time{Time: t0}

	cjIdx, _ := cache.NewIndexer(cache.IndexerConfig[*batchv1.CronJob]{})
	jobIdx, _ := cache.NewIndexer(cache.IndexerConfig[*batchv1.Job]{})
	if err := cjIdx.Add(cached); err != nil {
		t.Fatal(err)
	}
	if err := jobIdx.Add(job); err != nil {
		t.Fatal(err)
	}
	api := &fakeAPI{existing: map[string]*batchv1.Job{job.Name: job}, stored: stored}
	rec := &fakeRecorder{}
	s := &syncer{
		cronJobLister: cache.NewLister(cjIdx, batchv1.Resource("cronjobs")),
		jobLister:     cache.NewLister(jobIdx, batchv1.Resource("jobs")),
		jobs:          api, cronJobs: api, recorder: rec, clock: clocktesting.NewFakeClock(t0.Add(time.Second)),
		enqueueAfter: func(string, time.Duration) {},
	}
	if err := s.sync(t.Context(), "ns/cj"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"get-cronjob cj"}, api.actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if len(rec.reasons) != 0 {
		t.Errorf("events %v, want none", rec.reasons)
	}
}

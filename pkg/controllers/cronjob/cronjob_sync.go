package cronjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Event reasons, as Kubernetes records them.
const (
	ReasonSuccessfulCreate   = "SuccessfulCreate"
	ReasonFailedCreate       = "FailedCreate"
	ReasonSuccessfulDelete   = "SuccessfulDelete"
	ReasonFailedDelete       = "FailedDelete"
	ReasonSawCompletedJob    = "SawCompletedJob"
	ReasonUnexpectedJob      = "UnexpectedJob"
	ReasonJobAlreadyActive   = "JobAlreadyActive"
	ReasonMissSchedule       = "MissSchedule"
	ReasonTooManyMissedTimes = "TooManyMissedTimes"
	ReasonUnparseableSched   = "UnparseableSchedule"
	ReasonUnknownTimeZone    = "UnknownTimeZone"
)

// nextScheduleDelta is added to a requeue at the next start time, so that
// the clock has passed it when the sync runs.
const nextScheduleDelta = 100 * time.Millisecond

// jobWriter creates and deletes Jobs.
type jobWriter interface {
	CreateJob(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
	GetJob(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	// DeleteJob deletes with background propagation.
	DeleteJob(ctx context.Context, namespace, name string, uid types.UID) error
}

// cronJobWriter writes CronJob status and reads a CronJob past the cache.
type cronJobWriter interface {
	GetCronJob(ctx context.Context, namespace, name string) (*batchv1.CronJob, error)
	UpdateStatus(ctx context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error)
}

type syncer struct {
	cronJobLister *cache.Lister[*batchv1.CronJob]
	jobLister     *cache.Lister[*batchv1.Job]
	jobs          jobWriter
	cronJobs      cronJobWriter
	recorder      EventRecorder
	clock         clock.PassiveClock
	enqueueAfter  func(key string, d time.Duration)
}

// sync reconciles the CronJob named by key: it tracks its Jobs, starts the
// one due now if its policies allow, prunes the finished ones beyond the
// history limits, and arranges to look again at the next start time.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	cj, err := s.cronJobLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := s.jobLister.Namespace(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var children []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == cj.UID {
			children = append(children, j)
		}
	}
	if cj, err = s.catchUp(ctx, cj, children); err != nil {
		return err
	}
	cj = cj.DeepCopy()
	old := cj.Status.DeepCopy()
	s.trackChildren(ctx, cj, children)
	createErr := s.startDue(ctx, key, cj)
	var errs []error
	if createErr != nil {
		errs = append(errs, createErr)
	}
	if !apiequality.Semantic.DeepEqual(old, &cj.Status) {
		if _, err := s.cronJobs.UpdateStatus(ctx, cj); err != nil {
			errs = append(errs, fmt.Errorf("update status: %w", err))
		}
	}
	if cj.DeletionTimestamp == nil {
		if err := s.pruneHistory(ctx, cj, children); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// catchUp returns the CronJob as the server has it when the cached one
// lacks, in status.active, an unfinished Job it owns: the Job informer may
// have seen a Job this controller just created before the CronJob informer
// saw the status recording it, and acting on the cached CronJob would warn
// of an unexpected Job and try to start it again. The server's copy is
// read at most once per sync; a CronJob gone from the server leaves the
// cached one to act on.
func (s *syncer) catchUp(ctx context.Context, cj *batchv1.CronJob, children []*batchv1.Job) (*batchv1.CronJob, error) {
	for _, j := range children {
		if finished, _ := finishedCondition(j); finished ||
			slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID }) {
			continue
		}
		fresh, err := s.cronJobs.GetCronJob(ctx, cj.Namespace, cj.Name)
		switch {
		case apierrors.IsNotFound(err):
			return cj, nil
		case err != nil:
			return nil, fmt.Errorf("get cronjob: %w", err)
		case fresh.UID != cj.UID:
			return cj, nil
		}
		return fresh, nil
	}
	return cj, nil
}

// trackChildren drops finished and vanished Jobs from status.active and
// moves lastSuccessfulTime forward.
func (s *syncer) trackChildren(ctx context.Context, cj *batchv1.CronJob, children []*batchv1.Job) {
	byUID := map[types.UID]*batchv1.Job{}
	for _, j := range children {
		byUID[j.UID] = j
		active := slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID })
		finished, cond := finishedCondition(j)
		switch {
		case !active && !finished:
			s.recorder.Event(cj, corev1.EventTypeWarning, ReasonUnexpectedJob, "Saw a job that the controller did not create or forgot: "+j.Name)
		case active && finished:
			cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID })
			s.recorder.Event(cj, corev1.EventTypeNormal, ReasonSawCompletedJob, fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, cond))
		}
		if finished && cond == batchv1.JobComplete && j.Status.CompletionTime != nil &&
			(cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time)) {
			cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
		}
	}
	// An active Job missing from the cache may be only new to it: ask the
	// server before forgetting it.
	cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(r corev1.ObjectReference) bool {
		if _, ok := byUID[r.UID]; ok {
			return false
		}
		j, err := s.jobs.GetJob(ctx, r.Namespace, r.Name)
		return apierrors.IsNotFound(err) || err == nil && j.UID != r.UID
	})
}

// startDue creates the Job of the most recent unmet start time, if it is
// due and allowed, and requeues at the next start time.
func (s *syncer) startDue(ctx context.Context, key string, cj *batchv1.CronJob) error {
	if cj.DeletionTimestamp != nil {
		return nil
	}
	now := s.clock.Now()
	if tz := cj.Spec.TimeZone; tz != nil {
		loc, err := time.LoadLocation(*tz)
		if err != nil {
			s.recorder.Event(cj, corev1.EventTypeWarning, ReasonUnknownTimeZone, fmt.Sprintf("invalid timeZone: %q: %v", *tz, err))
			return nil
		}
		now = now.In(loc)
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return nil
	}
	sched, err := parseSchedule(cj.Spec.Schedule)
	if err != nil {
		// Validation refuses these; a stored one cannot be fixed by retrying.
		s.recorder.Event(cj, corev1.EventTypeWarning, ReasonUnparseableSched, err.Error())
		return nil
	}
	requeue := func() {
		if next := nextScheduleTime(now, sched); !next.IsZero() {
			s.enqueueAfter(key, next.Sub(now)+nextScheduleDelta)
		}
	}
	scheduled, missed := mostRecentScheduleTime(cj, now, sched)
	if missed > maxMissed {
		s.recorder.Event(cj, corev1.EventTypeWarning, ReasonTooManyMissedTimes,
			fmt.Sprintf("too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed))
	}
	if scheduled == nil {
		requeue()
		return nil
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil && scheduled.Add(time.Duration(*sds)*time.Second).Before(now) {
		s.recorder.Event(cj, corev1.EventTypeWarning, ReasonMissSchedule, "Missed scheduled time to start a job: "+scheduled.UTC().Format(time.RFC1123Z))
		requeue()
		return nil
	}
	name := jobName(cj, *scheduled)
	if slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.Name == name }) ||
		cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled) {
		requeue()
		return nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			s.recorder.Event(cj, corev1.EventTypeNormal, ReasonJobAlreadyActive, "Not starting job because prior execution is running and concurrency policy is Forbid")
			requeue()
			return nil
		}
	case batchv1.ReplaceConcurrent:
		for _, r := range slices.Clone(cj.Status.Active) {
			if err := s.jobs.DeleteJob(ctx, r.Namespace, r.Name, r.UID); err != nil && !apierrors.IsNotFound(err) {
				s.recorder.Event(cj, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Deleted job: %v", err))
				return err
			}
			s.recorder.Event(cj, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted job "+r.Name)
			cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(a corev1.ObjectReference) bool { return a.UID == r.UID })
		}
	}
	created, err := s.jobs.CreateJob(ctx, newJob(cj, name, *scheduled))
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	case apierrors.IsAlreadyExists(err):
		// Created before, by this controller before a restart perhaps:
		// track it rather than start another.
		existing, getErr := s.jobs.GetJob(ctx, cj.Namespace, name)
		if getErr != nil {
			return getErr
		}
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != cj.UID {
			s.recorder.Event(cj, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating job: %v", err))
			requeue()
			return nil
		}
		created = existing
	case err != nil:
		s.recorder.Event(cj, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating job: %v", err))
		return err
	default:
		s.recorder.Event(cj, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job "+created.Name)
	}
	if finished, _ := finishedCondition(created); !finished {
		cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{
			Kind: "Job", APIVersion: "batch/v1", Namespace: created.Namespace, Name: created.Name,
			UID: created.UID, ResourceVersion: created.ResourceVersion,
		})
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	requeue()
	return nil
}

// jobName is the name of the Job for a start time: the CronJob's name and
// the start time in minutes since the epoch.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return cj.Name + "-" + strconv.FormatInt(scheduled.Unix()/60, 10)
}

// newJob is the Job cj starts for a start time.
func newJob(cj *batchv1.CronJob, name string, scheduled time.Time) *batchv1.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	annotations := t.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   cj.Namespace,
			Name:        name,
			Labels:      t.Labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cronJobKind.GroupVersion().String(), Kind: cronJobKind.Kind, Name: cj.Name, UID: cj.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: t.Spec,
	}
}

// pruneHistory deletes the oldest finished Jobs beyond the successful and
// failed history limits.
func (s *syncer) pruneHistory(ctx context.Context, cj *batchv1.CronJob, children []*batchv1.Job) error {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return nil
	}
	var ok, bad []*batchv1.Job
	for _, j := range children {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch finished, cond := finishedCondition(j); {
		case finished && cond == batchv1.JobComplete:
			ok = append(ok, j)
		case finished:
			bad = append(bad, j)
		}
	}
	var victims []*batchv1.Job
	for _, set := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {bad, cj.Spec.FailedJobsHistoryLimit}} {
		if set.limit == nil || len(set.jobs) <= int(*set.limit) {
			continue
		}
		slices.SortStableFunc(set.jobs, byStartTime)
		victims = append(victims, set.jobs[:len(set.jobs)-int(*set.limit)]...)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, j := range victims {
		wg.Go(func() {
			err := s.jobs.DeleteJob(ctx, j.Namespace, j.Name, j.UID)
			if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				if err == nil {
					s.recorder.Event(cj, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted job "+j.Name)
				}
				return
			}
			s.recorder.Event(cj, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Deleted job: %v", err))
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// byStartTime orders Jobs oldest first: by start time (a Job that never
// started counts as newest), then by name.
func byStartTime(a, b *batchv1.Job) int {
	switch {
	case a.Status.StartTime == nil && b.Status.StartTime != nil:
		return 1
	case a.Status.StartTime != nil && b.Status.StartTime == nil:
		return -1
	case a.Status.StartTime != nil && !a.Status.StartTime.Equal(b.Status.StartTime):
		return a.Status.StartTime.Compare(b.Status.StartTime.Time)
	}
	if a.Name < b.Name {
		return -1
	}
	if a.Name > b.Name {
		return 1
	}
	return 0
}

// finishedCondition reports whether j has finished, and how.
func finishedCondition(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

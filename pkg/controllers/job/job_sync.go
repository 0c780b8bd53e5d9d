package job

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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Event reasons, as Kubernetes records them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonCompleted        = "Completed"
	ReasonSuspended        = "Suspended"
	ReasonResumed          = "Resumed"
)

// Condition reasons, as Kubernetes writes them.
const (
	ReasonBackoffLimitExceeded     = batchv1.JobReasonBackoffLimitExceeded
	ReasonDeadlineExceeded         = batchv1.JobReasonDeadlineExceeded
	ReasonPodFailurePolicy         = batchv1.JobReasonPodFailurePolicy
	ReasonMaxFailedIndexesExceeded = batchv1.JobReasonMaxFailedIndexesExceeded
	ReasonFailedIndexes            = batchv1.JobReasonFailedIndexes
	ReasonCompletionsReached       = batchv1.JobReasonCompletionsReached
	ReasonSuccessPolicy            = batchv1.JobReasonSuccessPolicy
	ReasonJobSuspended             = "JobSuspended"
	ReasonJobResumed               = "JobResumed"
)

// managedBy is the spec.managedBy value of Jobs this controller manages
// (as it does Jobs without one).
const managedBy = batchv1.JobControllerName

// podWriter is the part of the API the sync writes pods through.
type podWriter interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name only if its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	controller.Patcher
}

// jobWriter reads Jobs past the cache and writes their status.
type jobWriter interface {
	GetJob(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	UpdateStatus(ctx context.Context, j *batchv1.Job) (*batchv1.Job, error)
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	jobLister *cache.Lister[*batchv1.Job]
	// podIndexer is the pod cache; it has controller.ControllerUIDIndex
	// and controllerJobIndex.
	podIndexer *cache.Indexer[*corev1.Pod]
	pods       podWriter
	jobs       jobWriter
	recorder   EventRecorder
	// expectations holds a Job back from creating or deleting pods until
	// the pod informer has seen its previous creations and deletions.
	expectations *controller.UIDTrackingExpectations
	// finalizers holds the pods whose finalizer was removed, until seen.
	finalizers *finalizerExpectations
	clock      clock.PassiveClock
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter func(key string, d time.Duration)
	backoff      time.Duration
	maxBackoff   time.Duration
	burst        int
}

// jobState is what one sync computes about a Job and its pods.
type jobState struct {
	job       *batchv1.Job
	key       string
	now       time.Time
	pods      []*corev1.Pod // every pod the Job controls
	active    []*corev1.Pod // neither finished nor being deleted
	ready     int32
	terminate int32 // being deleted and not finished
	indexed   bool
	// completions is spec.completions, -1 when unset.
	completions int
	parallelism int
	suspended   bool
	// onlyFailed: pods are replaced once Failed, not while terminating.
	onlyFailed bool
	status     *batchv1.JobStatus
	// succeeded and failed count every counted and uncounted pod.
	succeeded, failed int
	succeededIdx      indexSet
	failedIdx         indexSet
	// toRelease are the pods whose finalizer this sync removes.
	toRelease []*corev1.Pod
	// newUncounted is set when uids were added to the uncounted lists.
	newUncounted bool
	// failJob is the message of a FailJob pod failure policy rule that
	// matched, if one did.
	failJob string
}

// sync brings the Job named by key to what its spec asks and writes its
// status.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	job, err := s.jobLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.expectations.DeleteExpectations(key)
		return s.releaseOrphans(ctx, namespace, name, "")
	}
	if err != nil {
		return err
	}
	if job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != managedBy {
		return nil
	}
	if err := s.releaseOrphans(ctx, namespace, name, job.UID); err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return controller.Terminal(fmt.Errorf("invalid selector: %w", err))
	}
	// Only the pods the Job controls and the orphans can be claimed: the
	// index gives them without a walk over every pod of the namespace.
	all, err := controller.ControlledOrOrphaned(s.podIndexer, namespace, job.UID)
	if err != nil {
		return err
	}
	if isJobFinished(job) || job.DeletionTimestamp != nil {
		// Every pod was counted before the Job finished; what still holds
		// a finalizer only needs it gone.
		var owned []*corev1.Pod
		for _, p := range all {
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID && hasTrackingFinalizer(p) {
				owned = append(owned, p)
			}
		}
		_, err := s.removeFinalizers(ctx, key, owned)
		return err
	}
	pods, err := s.claimPods(ctx, job, selector, all)
	if err != nil {
		return err
	}
	st := s.newState(key, job, pods)
	s.countFinished(st)

	var errs []error
	target := s.finishTarget(st)
	switch {
	case target != nil || st.suspended:
		if err := s.deletePods(ctx, st, st.active); err != nil {
			errs = append(errs, err)
		}
	case s.expectations.SatisfiedExpectations(key):
		if err := s.manage(ctx, st); err != nil {
			errs = append(errs, err)
		}
	}
	if target == nil && !st.suspended && job.Spec.ActiveDeadlineSeconds != nil && st.status.StartTime != nil {
		deadline := st.status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
		s.enqueueAfter(key, deadline.Sub(st.now))
	}
	if err := s.flush(ctx, st, target); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// claimPods returns every pod job controls (finished ones too) after
// adopting matching orphans and releasing owned pods that stopped matching.
func (s *syncer) claimPods(ctx context.Context, job *batchv1.Job, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.ClaimPods(ctx, controller.RefManagerConfig[*corev1.Pod]{
		Owner:     job,
		OwnerKind: jobKind,
		Selector:  selector,
		Patcher:   s.pods,
		GetOwner: func(ctx context.Context) (metav1.Object, error) {
			return s.jobs.GetJob(ctx, job.Namespace, job.Name)
		},
		Logger: controller.LoggerFrom(ctx),
	}, pods)
}

// releaseOrphans removes the tracking finalizer from pods whose controller
// is a Job named name that no longer exists (a uid other than uid).
func (s *syncer) releaseOrphans(ctx context.Context, namespace, name string, uid types.UID) error {
	named, err := s.podIndexer.ByIndex(controllerJobIndex, namespace+"/"+name)
	if err != nil {
		return err
	}
	var orphans []*corev1.Pod
	for _, p := range named {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID != uid && hasTrackingFinalizer(p) {
			orphans = append(orphans, p)
		}
	}
	_, err = s.removeFinalizers(ctx, namespace+"/"+name, orphans)
	return err
}

// newState sorts a Job's pods and reads its spec and status.
func (s *syncer) newState(key string, job *batchv1.Job, pods []*corev1.Pod) *jobState {
	st := &jobState{
		job:         job,
		key:         key,
		now:         s.clock.Now(),
		pods:        pods,
		indexed:     ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion,
		completions: -1,
		parallelism: int(ptr.Deref(job.Spec.Parallelism, 1)),
		suspended:   ptr.Deref(job.Spec.Suspend, false),
		onlyFailed:  ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed || job.Spec.PodFailurePolicy != nil,
		status:      job.Status.DeepCopy(),
	}
	if job.Spec.Completions != nil {
		st.completions = int(*job.Spec.Completions)
	}
	if st.status.UncountedTerminatedPods == nil {
		st.status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	for _, p := range pods {
		switch {
		case isFinished(p):
		case p.DeletionTimestamp != nil:
			st.terminate++
		default:
			st.active = append(st.active, p)
			if isPodReady(p) {
				st.ready++
			}
		}
	}
	limit := -1
	if st.indexed {
		limit = st.completions
	}
	st.succeededIdx = parseIndexes(st.status.CompletedIndexes, limit)
	st.failedIdx = indexSet{}
	if st.status.FailedIndexes != nil {
		st.failedIdx = parseIndexes(*st.status.FailedIndexes, limit)
	}
	s.suspendOrResume(st)
	return st
}

// suspendOrResume keeps the Suspended condition and startTime in step with
// spec.suspend.
func (s *syncer) suspendOrResume(st *jobState) {
	cond := findCondition(st.status, batchv1.JobSuspended)
	switch {
	case st.suspended && (cond == nil || cond.Status != corev1.ConditionTrue):
		setCondition(st.status, batchv1.JobSuspended, corev1.ConditionTrue, ReasonJobSuspended, "Job suspended", st.now)
		st.status.StartTime = nil
		s.recorder.Event(st.job, corev1.EventTypeNormal, ReasonSuspended, "Job suspended")
	case !st.suspended && cond != nil && cond.Status == corev1.ConditionTrue:
		setCondition(st.status, batchv1.JobSuspended, corev1.ConditionFalse, ReasonJobResumed, "Job resumed", st.now)
		st.status.StartTime = &metav1.Time{Time: st.now}
		s.recorder.Event(st.job, corev1.EventTypeNormal, ReasonResumed, "Job resumed")
	}
	if !st.suspended && st.status.StartTime == nil {
		st.status.StartTime = &metav1.Time{Time: st.now}
	}
}

// countFinished records the finished pods not counted yet in the
// uncounted lists (and their indexes), and picks the pods whose finalizer
// is to go.
func (s *syncer) countFinished(st *jobState) {
	u := st.status.UncountedTerminatedPods
	succeededUIDs, failedUIDs := sets.New(u.Succeeded...), sets.New(u.Failed...)
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || s.finalizers.pending(st.key, p.UID) {
			continue
		}
		if succeededUIDs.Has(p.UID) || failedUIDs.Has(p.UID) {
			st.toRelease = append(st.toRelease, p)
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			st.toRelease = append(st.toRelease, p)
			if st.indexed {
				i, ok := validIndex(p, st.completions)
				if !ok || st.succeededIdx.has(i) || st.failedIdx.has(i) {
					// A duplicate or stray: nothing to count.
					continue
				}
				st.succeededIdx.add(i)
			}
			u.Succeeded = append(u.Succeeded, p.UID)
			st.newUncounted = true
		case isPodFailed(p, st):
			st.toRelease = append(st.toRelease, p)
			action, msg := matchFailurePolicy(st.job.Spec.PodFailurePolicy, p)
			if action != nil && *action == batchv1.PodFailurePolicyActionIgnore {
				continue
			}
			if action != nil && *action == batchv1.PodFailurePolicyActionFailJob && st.failJob == "" {
				st.failJob = msg
			}
			if st.indexed && st.job.Spec.BackoffLimitPerIndex != nil {
				if i, ok := validIndex(p, st.completions); ok {
					failures := annotationCount(p, IndexFailureCountKey) + 1
					if action != nil && *action == batchv1.PodFailurePolicyActionFailIndex ||
						failures > int(*st.job.Spec.BackoffLimitPerIndex) {
						st.failedIdx.add(i)
					}
				}
			}
			u.Failed = append(u.Failed, p.UID)
			st.newUncounted = true
		}
	}
	st.succeeded = int(st.status.Succeeded) + len(u.Succeeded)
	st.failed = int(st.status.Failed) + len(u.Failed)
}

// finishTarget returns the condition (FailureTarget or SuccessCriteriaMet)
// the Job has reached, adding it to the status when it is new, or nil.
func (s *syncer) finishTarget(st *jobState) *batchv1.JobCondition {
	if c := findCondition(st.status, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	if c := findCondition(st.status, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	spec := &st.job.Spec
	typ, reason, msg := batchv1.JobFailureTarget, "", ""
	switch {
	case st.failJob != "":
		reason, msg = ReasonPodFailurePolicy, st.failJob
	case spec.BackoffLimit != nil && st.failed > int(*spec.BackoffLimit):
		reason, msg = ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
	case !st.suspended && pastDeadline(st):
		reason, msg = ReasonDeadlineExceeded, "Job was active longer than specified deadline"
	case st.indexed && spec.MaxFailedIndexes != nil && len(st.failedIdx) > int(*spec.MaxFailedIndexes):
		reason, msg = ReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"
	default:
		typ = batchv1.JobSuccessCriteriaMet
		if i, ok := matchSuccessPolicy(spec.SuccessPolicy, st.succeededIdx, st.completions); st.indexed && ok {
			reason, msg = ReasonSuccessPolicy, fmt.Sprintf("Matched rules at index %d", i)
		} else if completionsReached(st) {
			reason, msg = ReasonCompletionsReached, "Reached expected number of succeeded pods"
		} else if st.indexed && len(st.failedIdx) > 0 && len(st.succeededIdx)+len(st.failedIdx) >= st.completions {
			typ, reason, msg = batchv1.JobFailureTarget, ReasonFailedIndexes, "Job has failed indexes"
		}
	}
	if reason == "" {
		return nil
	}
	return setCondition(st.status, typ, corev1.ConditionTrue, reason, msg, st.now)
}

// completionsReached reports whether enough pods succeeded.
func completionsReached(st *jobState) bool {
	switch {
	case st.indexed:
		return len(st.succeededIdx) >= st.completions
	case st.completions < 0:
		// Any success completes a Job without completions, once the rest
		// of its pods are done.
		return st.succeeded > 0 && len(st.active) == 0
	default:
		return st.succeeded >= st.completions
	}
}

func pastDeadline(st *jobState) bool {
	ads := st.job.Spec.ActiveDeadlineSeconds
	if ads == nil || st.status.StartTime == nil {
		return false
	}
	return !st.now.Before(st.status.StartTime.Add(time.Duration(*ads) * time.Second))
}

// manage creates and deletes pods so that the Job runs as many as it
// should.
func (s *syncer) manage(ctx context.Context, st *jobState) error {
	if st.indexed {
		return s.manageIndexed(ctx, st)
	}
	active := len(st.active)
	want := st.parallelism
	switch {
	case st.completions < 0:
		if st.succeeded > 0 {
			want = active
		}
	default:
		want = max(0, min(st.completions-st.succeeded, st.parallelism))
	}
	if active > want {
		victims := slices.Clone(st.active)
		slices.SortStableFunc(victims, deletionOrder)
		return s.deletePods(ctx, st, victims[:min(active-want, s.burst)])
	}
	running := active
	if st.onlyFailed {
		running += int(st.terminate)
	}
	if running >= want {
		return nil
	}
	if wait := s.backoffRemaining(st.pods, st.now); wait > 0 {
		s.enqueueAfter(st.key, wait)
		return nil
	}
	n := min(want-running, s.burst)
	templates := make([]*corev1.Pod, n)
	for i := range templates {
		templates[i] = s.newPod(st.job, noIndex, 0, 0)
	}
	return s.createPods(ctx, st, templates)
}

// manageIndexed keeps one active pod for each index that has neither
// succeeded nor failed, at most parallelism of them.
func (s *syncer) manageIndexed(ctx context.Context, st *jobState) error {
	byIndex := map[int][]*corev1.Pod{}
	var victims []*corev1.Pod
	for _, p := range st.active {
		i, ok := validIndex(p, st.completions)
		if !ok || st.succeededIdx.has(i) || st.failedIdx.has(i) {
			victims = append(victims, p)
			continue
		}
		byIndex[i] = append(byIndex[i], p)
	}
	kept := 0
	for _, ps := range byIndex {
		// Keep the pod furthest along; the rest are duplicates.
		slices.SortStableFunc(ps, deletionOrder)
		victims = append(victims, ps[:len(ps)-1]...)
		kept++
	}
	busy := map[int]bool{}
	for i := range byIndex {
		busy[i] = true
	}
	if st.onlyFailed {
		for _, p := range st.pods {
			if p.DeletionTimestamp != nil && !isFinished(p) {
				if i, ok := validIndex(p, st.completions); ok {
					busy[i] = true
					kept++
				}
			}
		}
	}
	want := max(0, min(st.parallelism, st.completions-len(st.succeededIdx)-len(st.failedIdx)))
	if kept > want {
		// Drop the highest indexes first.
		var extra []*corev1.Pod
		for i := st.completions - 1; i >= 0 && kept > want; i-- {
			if ps := byIndex[i]; len(ps) > 0 {
				extra = append(extra, ps[len(ps)-1])
				kept--
			}
		}
		victims = append(victims, extra...)
	}
	var errs []error
	if len(victims) > 0 {
		errs = append(errs, s.deletePods(ctx, st, victims[:min(len(victims), s.burst)]))
	}
	if kept >= want {
		return errors.Join(errs...)
	}
	last := lastPodPerIndex(st.pods)
	var wait time.Duration
	var templates []*corev1.Pod
	for i := 0; i < st.completions && kept+len(templates) < want && len(templates) < s.burst; i++ {
		if busy[i] || st.succeededIdx.has(i) || st.failedIdx.has(i) {
			continue
		}
		failures, ignored := 0, 0
		if prev := last[i]; prev != nil {
			failures, ignored = indexFailures(st.job, prev)
		}
		if st.job.Spec.BackoffLimitPerIndex != nil {
			if prev := last[i]; prev != nil && prev.Status.Phase == corev1.PodFailed && failures > 0 {
				if left := finishedAt(prev).Add(s.delay(failures)).Sub(st.now); left > 0 {
					if wait == 0 || left < wait {
						wait = left
					}
					continue
				}
			}
		} else if w := s.backoffRemaining(st.pods, st.now); w > 0 {
			wait = w
			break
		}
		templates = append(templates, s.newPod(st.job, i, failures, ignored))
	}
	if wait > 0 {
		s.enqueueAfter(st.key, wait)
	}
	if len(templates) > 0 {
		errs = append(errs, s.createPods(ctx, st, templates))
	}
	return errors.Join(errs...)
}

// lastPodPerIndex is the newest finished pod of every index.
func lastPodPerIndex(pods []*corev1.Pod) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	for _, p := range pods {
		i := indexOf(p)
		if i == noIndex || !isFinished(p) && p.DeletionTimestamp == nil {
			continue
		}
		if prev, ok := out[i]; !ok || prev.CreationTimestamp.Before(&p.CreationTimestamp) ||
			prev.CreationTimestamp.Equal(&p.CreationTimestamp) && prev.Name < p.Name {
			out[i] = p
		}
	}
	return out
}

// indexFailures are the failure counts a replacement for prev's index
// carries: prev's own, plus prev's failure if it failed.
func indexFailures(job *batchv1.Job, prev *corev1.Pod) (failures, ignored int) {
	failures, ignored = annotationCount(prev, IndexFailureCountKey), annotationCount(prev, IndexIgnoredFailureCountKey)
	if prev.Status.Phase != corev1.PodFailed && prev.DeletionTimestamp == nil {
		return failures, ignored
	}
	if prev.Status.Phase == corev1.PodSucceeded {
		return failures, ignored
	}
	if action, _ := matchFailurePolicy(job.Spec.PodFailurePolicy, prev); action != nil && *action == batchv1.PodFailurePolicyActionIgnore {
		return failures, ignored + 1
	}
	return failures + 1, ignored
}

// delay is the pod recreate backoff after failures failures in a row.
func (s *syncer) delay(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := s.backoff
	for range failures - 1 {
		d *= 2
		if d >= s.maxBackoff {
			return s.maxBackoff
		}
	}
	return min(d, s.maxBackoff)
}

// backoffRemaining is how long the Job must still wait before it creates
// pods: the failures since its last success, counted from the pods it
// still has, make the delay, measured from the last failure.
func (s *syncer) backoffRemaining(pods []*corev1.Pod, now time.Time) time.Duration {
	type end struct {
		at     time.Time
		failed bool
	}
	var ends []end
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			ends = append(ends, end{finishedAt(p), false})
		case p.Status.Phase == corev1.PodFailed:
			ends = append(ends, end{finishedAt(p), true})
		}
	}
	slices.SortStableFunc(ends, func(a, b end) int { return a.at.Compare(b.at) })
	failures := 0
	var last time.Time
	for _, e := range ends {
		if e.failed {
			failures++
			last = e.at
		} else {
			failures = 0
		}
	}
	if failures == 0 {
		return 0
	}
	return last.Add(s.delay(failures)).Sub(now)
}

// finishedAt is when a pod's last container finished, or failing that
// when it stopped being ready, was deleted or was created.
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if !t.IsZero() {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Time
	}
	return p.CreationTimestamp.Time
}

// newPod is a pod of job's template, controlled by it, tracked by the
// finalizer, for index i of an Indexed Job.
func (s *syncer) newPod(job *batchv1.Job, i, failures, ignored int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    job.Namespace,
			GenerateName: job.Name + "-",
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   append(t.Finalizers, TrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: jobKind.GroupVersion().String(), Kind: jobKind.Kind,
				Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: t.Spec,
	}
	if i == noIndex {
		return pod
	}
	idx := strconv.Itoa(i)
	pod.GenerateName = job.Name + "-" + idx + "-"
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[CompletionIndexKey] = idx
	pod.Labels[CompletionIndexKey] = idx
	if job.Spec.BackoffLimitPerIndex != nil {
		pod.Annotations[IndexFailureCountKey] = strconv.Itoa(failures)
		if ignored > 0 {
			pod.Annotations[IndexIgnoredFailureCountKey] = strconv.Itoa(ignored)
		}
	}
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-" + idx
	}
	env := corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", CompletionIndexKey),
	}}}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for c := range list {
			if !slices.ContainsFunc(list[c].Env, func(e corev1.EnvVar) bool { return e.Name == completionIndexEnv }) {
				list[c].Env = append(list[c].Env, env)
			}
		}
	}
	return pod
}

// createPods creates the pods in slow-start batches of 1, 2, 4, ...,
// stopping at the first batch with a failure.
func (s *syncer) createPods(ctx context.Context, st *jobState, pods []*corev1.Pod) error {
	s.expectations.ExpectCreations(st.key, len(pods))
	created := 0
	var firstErr error
	for batch, next := 1, 0; next < len(pods) && firstErr == nil; batch *= 2 {
		chunk := pods[next:min(next+batch, len(pods))]
		next += len(chunk)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range chunk {
			wg.Go(func() {
				out, err := s.pods.CreatePod(ctx, p)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						return
					}
					s.recorder.Event(st.job, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating: %v", err))
					if firstErr == nil {
						firstErr = err
					}
					return
				}
				created++
				s.recorder.Event(st.job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+out.Name)
			})
		}
		wg.Wait()
	}
	if skipped := len(pods) - created; skipped > 0 {
		s.expectations.LowerExpectations(st.key, skipped, 0)
	}
	return firstErr
}

// deletePods deletes pods, each only if its uid is unchanged.
func (s *syncer) deletePods(ctx context.Context, st *jobState, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	ids := make([]string, len(pods))
	for i, p := range pods {
		ids[i] = podKey(p)
	}
	s.expectations.ExpectDeletions(st.key, ids)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		wg.Go(func() {
			err := s.pods.DeletePod(ctx, p.Namespace, p.Name, p.UID)
			if err == nil {
				s.recorder.Event(st.job, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+p.Name)
				return
			}
			s.expectations.DeletionObserved(st.key, podKey(p))
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return
			}
			s.recorder.Event(st.job, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Error deleting: %v", err))
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// finalizerPatch removes the tracking finalizer from a pod.
var finalizerPatch = []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + TrackingFinalizer + `"]}}`)

// removeFinalizers removes the tracking finalizer from pods and returns
// the uids it was removed from (or that are gone).
func (s *syncer) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) (sets.Set[types.UID], error) {
	done := sets.New[types.UID]()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		s.finalizers.expect(key, p.UID)
		wg.Go(func() {
			err := s.pods.Patch(ctx, p.Namespace, p.Name, types.StrategicMergePatchType, finalizerPatch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !apierrors.IsNotFound(err) {
				s.finalizers.observed(key, p.UID)
				errs = append(errs, fmt.Errorf("remove finalizer of pod %s: %w", p.Name, err))
				return
			}
			done.Insert(p.UID)
		})
	}
	wg.Wait()
	return done, errors.Join(errs...)
}

// flush writes the status: first the newly finished pods into the
// uncounted lists, so that no pod goes uncounted should the controller
// stop; then, once their finalizers are gone, into the counters; then the
// final condition when the Job is done.
func (s *syncer) flush(ctx context.Context, st *jobState, target *batchv1.JobCondition) error {
	job := st.job
	st.status.Active = int32(len(st.active))
	st.status.Ready = ptr.To(st.ready)
	st.status.Terminating = ptr.To(st.terminate)
	if st.indexed {
		st.status.CompletedIndexes = st.succeededIdx.String()
		if job.Spec.BackoffLimitPerIndex != nil {
			st.status.FailedIndexes = ptr.To(st.failedIdx.String())
		}
	}
	if st.newUncounted {
		updated, err := s.writeStatus(ctx, job, st.status)
		if err != nil {
			return err
		}
		job = updated
	}
	removed, removeErr := s.removeFinalizers(ctx, st.key, st.toRelease)
	// A uid moves to the counters once its pod holds no finalizer.
	withFinalizer := sets.New[types.UID]()
	for _, p := range st.pods {
		if hasTrackingFinalizer(p) && !removed.Has(p.UID) && !s.finalizers.pending(st.key, p.UID) {
			withFinalizer.Insert(p.UID)
		}
	}
	u := st.status.UncountedTerminatedPods
	var keepS, keepF []types.UID
	for _, uid := range u.Succeeded {
		if withFinalizer.Has(uid) {
			keepS = append(keepS, uid)
		} else {
			st.status.Succeeded++
		}
	}
	for _, uid := range u.Failed {
		if withFinalizer.Has(uid) {
			keepF = append(keepF, uid)
		} else {
			st.status.Failed++
		}
	}
	u.Succeeded, u.Failed = keepS, keepF
	if target != nil && len(u.Succeeded) == 0 && len(u.Failed) == 0 && st.status.Active == 0 && st.terminate == 0 {
		s.finish(st, target)
	}
	if _, err := s.writeStatus(ctx, job, st.status); err != nil {
		return errors.Join(removeErr, err)
	}
	return removeErr
}

// finish adds the terminal condition that target announced.
func (s *syncer) finish(st *jobState, target *batchv1.JobCondition) {
	if target.Type == batchv1.JobSuccessCriteriaMet {
		setCondition(st.status, batchv1.JobComplete, corev1.ConditionTrue, target.Reason, target.Message, st.now)
		st.status.CompletionTime = &metav1.Time{Time: st.now}
		s.recorder.Event(st.job, corev1.EventTypeNormal, ReasonCompleted, "Job completed")
		return
	}
	setCondition(st.status, batchv1.JobFailed, corev1.ConditionTrue, target.Reason, target.Message, st.now)
	s.recorder.Event(st.job, corev1.EventTypeWarning, target.Reason, target.Message)
}

// writeStatus writes status into job unless nothing changed.
func (s *syncer) writeStatus(ctx context.Context, job *batchv1.Job, status *batchv1.JobStatus) (*batchv1.Job, error) {
	old := job.Status
	if old.UncountedTerminatedPods == nil {
		old.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	if apiequality.Semantic.DeepEqual(&old, status) {
		return job, nil
	}
	next := job.DeepCopy()
	next.Status = *status.DeepCopy()
	out, err := s.jobs.UpdateStatus(ctx, next)
	if err != nil {
		return nil, fmt.Errorf("update status: %w", err)
	}
	return out, nil
}

// isPodFailed reports whether a pod counts as failed: phase Failed, or,
// unless pods are replaced only once Failed, being deleted before it
// succeeded. Pods deleted because the Job is suspended do not count.
func isPodFailed(p *corev1.Pod, st *jobState) bool {
	switch {
	case p.Status.Phase == corev1.PodFailed:
		return true
	case p.Status.Phase == corev1.PodSucceeded, st.onlyFailed, st.suspended:
		return false
	}
	return p.DeletionTimestamp != nil
}

// deletionOrder sorts pods cheapest to delete first: unscheduled, then
// pending, then not ready, then newest.
func deletionOrder(a, b *corev1.Pod) int {
	rank := func(p *corev1.Pod) int {
		switch {
		case p.Spec.NodeName == "":
			return 0
		case p.Status.Phase == corev1.PodPending:
			return 1
		case !isPodReady(p):
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, TrackingFinalizer)
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isJobFinished reports whether the Job has its Complete or Failed
// condition.
func isJobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func findCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets a condition, moving its transition time only when its
// status changes, and returns it.
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) *batchv1.JobCondition {
	at := metav1.Time{Time: now}
	if c := findCondition(st, t); c != nil {
		if c.Status != status {
			c.LastTransitionTime = at
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, at
		return c
	}
	st.Conditions = append(st.Conditions, batchv1.JobCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastProbeTime: at, LastTransitionTime: at,
	})
	return &st.Conditions[len(st.Conditions)-1]
}

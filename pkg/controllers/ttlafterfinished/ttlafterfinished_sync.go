package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// jobClient reads Jobs past the cache and deletes them.
type jobClient interface {
	GetJob(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	DeleteJob(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

type syncer struct {
	lister       *cache.Lister[*batchv1.Job]
	jobs         jobClient
	clock        clock.PassiveClock
	enqueueAfter func(key string, d time.Duration)
}

// sync deletes the Job named by key if its TTL has expired, or looks at it
// again when it will have.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	job, err := s.lister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := s.expired(key, job); err != nil || !expired {
		return err
	}
	// The cache may be behind: check the Job as the server has it.
	fresh, err := s.jobs.GetJob(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := s.expired(key, fresh); err != nil || !expired {
		return err
	}
	controller.LoggerFrom(ctx).Info("deleting finished job past its ttl", "job", key)
	err = s.jobs.DeleteJob(ctx, namespace, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or changed: a changed Job comes back through the
		// informer and is looked at anew.
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete job: %w", err)
	}
	return nil
}

// expired reports whether job's TTL is up, and if it is not but will be,
// arranges to look again then.
func (s *syncer) expired(key string, job *batchv1.Job) (bool, error) {
	if !needsCleanup(job) {
		return false, nil
	}
	finished, ok := finishTime(job)
	if !ok {
		return false, controller.Terminal(fmt.Errorf("job %s finished without a transition time", key))
	}
	expireAt := finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if left := expireAt.Sub(s.clock.Now()); left > 0 {
		s.enqueueAfter(key, left)
		return false, nil
	}
	return true, nil
}

// needsCleanup reports whether job has a TTL and has finished.
func needsCleanup(job *batchv1.Job) bool {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return false
	}
	_, ok := finishCondition(job)
	return ok
}

func finishCondition(job *batchv1.Job) (*batchv1.JobCondition, bool) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return nil, false
}

// finishTime is when job finished: the transition time of its Complete or
// Failed condition.
func finishTime(job *batchv1.Job) (time.Time, bool) {
	c, ok := finishCondition(job)
	if !ok || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

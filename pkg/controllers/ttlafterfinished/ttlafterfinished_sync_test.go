package ttlafterfinished

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fakeJobs struct {
	fresh   *batchv1.Job
	deletes []metav1.DeleteOptions
}

func (f *fakeJobs) GetJob(context.Context, string, string) (*batchv1.Job, error) {
	if f.fresh == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, "j")
	}
	return f.fresh, nil
}

func (f *fakeJobs) DeleteJob(_ context.Context, _, _ string, opts metav1.DeleteOptions) error {
	f.deletes = append(f.deletes, opts)
	return nil
}

func finishedJob(ttl *int32, cond batchv1.JobConditionType, finished time.Time) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "uid", ResourceVersion: "7"},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ttl},
	}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: finished}}}
	}
	return j
}

func TestSync(t *testing.T) {
	tests := []struct {
		name        string
		job         *batchv1.Job
		fresh       *batchv1.Job // nil: same as job
		wantDelete  bool
		wantRequeue time.Duration
	}{
		{name: "a Complete job past its ttl is deleted", job: finishedJob(ptr.To[int32](10), batchv1.JobComplete, t0.Add(-11*time.Second)), wantDelete: true},
		{name: "a Failed job past its ttl is deleted", job: finishedJob(ptr.To[int32](0), batchv1.JobFailed, t0), wantDelete: true},
		{name: "a job before its ttl is requeued for the time left", job: finishedJob(ptr.To[int32](60), batchv1.JobComplete, t0.Add(-20*time.Second)), wantRequeue: 40 * time.Second},
		{name: "an unfinished job is left alone", job: finishedJob(ptr.To[int32](0), "", t0)},
		{name: "a job without ttl is left alone", job: finishedJob(nil, batchv1.JobComplete, t0.Add(-time.Hour))},
		{name: "a ttl lengthened on the server is honoured", job: finishedJob(ptr.To[int32](1), batchv1.JobComplete, t0.Add(-time.Minute)),
			fresh: finishedJob(ptr.To[int32](3600), batchv1.JobComplete, t0.Add(-time.Minute)), wantRequeue: 59 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := cache.NewIndexer(cache.IndexerConfig[*batchv1.Job]{})
			if err != nil {
				t.Fatal(err)
			}
			if err := idx.Add(tt.job); err != nil {
				t.Fatal(err)
			}
			fresh := tt.fresh
			if fresh == nil {
				fresh = tt.job
			}
			api := &fakeJobs{fresh: fresh}
			var requeued []time.Duration
			s := &syncer{
				lister: cache.NewLister(idx, batchv1.Resource("jobs")), jobs: api, clock: clocktesting.NewFakeClock(t0),
				enqueueAfter: func(_ string, d time.Duration) { requeued = append(requeued, d) },
			}
			if err := s.sync(t.Context(), "ns/j"); err != nil {
				t.Fatal(err)
			}
			if got := len(api.deletes) == 1; got != tt.wantDelete {
				t.Fatalf("deleted = %v, want %v", got, tt.wantDelete)
			}
			if tt.wantDelete {
				opts := api.deletes[0]
				if *opts.PropagationPolicy != metav1.DeletePropagationBackground || *opts.Preconditions.UID != "uid" || *opts.Preconditions.ResourceVersion != "7" {
					t.Fatalf("delete options = %+v", opts)
				}
			}
			if tt.wantRequeue != 0 && !slices.Contains(requeued, tt.wantRequeue) {
				t.Fatalf("requeued %v, want %v", requeued, tt.wantRequeue)
			}
		})
	}
}

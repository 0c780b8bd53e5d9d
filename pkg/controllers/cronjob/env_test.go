package cronjob

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// A CronJob on a fake clock starts a Job each minute the clock passes and
// keeps only successfulJobsHistoryLimit finished ones.
func TestEnvCronJobStartsJobsAndPrunesHistory(t *testing.T) {
	t.Parallel()
	// The server stamps creation times with the real clock: start the
	// fake one there.
	clk := clocktesting.NewFakeClock(time.Now())
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger, Clock: clk})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 1)
	}))
	ns := env.Namespace(t)
	cjs := client.NewResource(env.Client, client.CronJobs).Namespace(ns)
	jobs := client.NewResource(env.Client, client.Jobs).Namespace(ns)
	_, err := cjs.Create(t.Context(), &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{
			Schedule:                   "* * * * *",
			SuccessfulJobsHistoryLimit: ptr.To[int32](2),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 4 {
		// Wait until the controller has armed its wake-up, then pass it.
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond) // the fake clock offers no wait for waiters
		}
		clk.Step(time.Minute)
		cj := testenv.WaitFor(t, env, client.CronJobs, ns+"/tick", func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 1 && !slices.Contains(names, cj.Status.Active[0].Name)
		})
		name := cj.Status.Active[0].Name
		names = append(names, name)
		// Finish the Job as its controller would.
		j, err := jobs.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] == "" {
			t.Fatalf("job %d without scheduled timestamp: %v", i, j.Annotations)
		}
		now := metav1.NewTime(clk.Now())
		j.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}}
		if _, err := jobs.UpdateStatus(t.Context(), j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, env, client.CronJobs, ns+"/tick", func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 0 && cj.Status.LastSuccessfulTime != nil
		})
	}
	// Of the four finished Jobs only the two newest stay.
	testenv.WaitForDeletion(t, env, client.Jobs, ns+"/"+names[0])
	testenv.WaitForDeletion(t, env, client.Jobs, ns+"/"+names[1])
	for _, n := range names[2:] {
		if _, err := jobs.Get(t.Context(), n, metav1.GetOptions{}); err != nil {
			t.Fatalf("job %s: %v", n, err)
		}
	}
}

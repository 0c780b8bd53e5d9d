package ttlafterfinished

import (
	"context"
	"log/slog"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestEnvDeletesFinishedJobAfterTTL(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 1)
	}))
	ns := env.Namespace(t)
	jobs := client.NewResource(env.Client, client.Jobs).Namespace(ns)
	mk := func(name string, ttl int32) *batchv1.Job {
		j, err := jobs.Create(t.Context(), &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				TTLSecondsAfterFinished: ptr.To(ttl),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		j.Status = batchv1.JobStatus{
			StartTime: &now, CompletionTime: &now, Succeeded: 1,
			Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			},
		}
		if j, err = jobs.UpdateStatus(t.Context(), j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	mk("soon", 1)
	mk("later", 3600)
	testenv.WaitForDeletion(t, env, client.Jobs, ns+"/soon")
	if _, err := jobs.Get(t.Context(), "later", metav1.GetOptions{}); err != nil {
		t.Fatalf("job with an hour to go: %v", err)
	}
}

package job

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// harness is a testenv environment running the Job controller and a node
// simulator, with clients scoped to one namespace.
type harness struct {
	t    testing.TB
	env  *testenv.Env
	ns   string
	jobs *client.ResourceClient[*batchv1.Job]
	pods *client.ResourceClient[*corev1.Pod]
}

// runJobController runs a Job controller and a node simulator on their own
// informers until ctx ends.
func runJobController(ctx context.Context, env *testenv.Env, withSim bool) error {
	logger := slog.New(slog.DiscardHandler)
	f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
	if err != nil {
		return err
	}
	defer f.Shutdown()
	rec, err := record.New(record.Config{
		Sink:      record.ClientSink{Events: client.NewResource(env.Client, client.Events)},
		Component: Name,
		Logger:    logger,
	})
	if err != nil {
		return err
	}
	c, err := New(Config{
		Client: env.Client, Informers: f, Recorder: rec, Logger: logger,
		PodFailureBackoff: 10 * time.Millisecond, SyncBatchPeriod: 5 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	var sim *nodesim.Simulator
	if withSim {
		if sim, err = nodesim.New(nodesim.Config{Client: env.Client, Informers: f, Logger: logger, StartupDelay: -1}); err != nil {
			return err
		}
	}
	f.Start(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rec.Run(ctx) })
	if sim != nil {
		wg.Go(func() { _ = sim.Run(ctx, 4) })
	}
	err = c.Run(ctx, 4)
	wg.Wait()
	return err
}

func startHarness(t testing.TB) *harness {
	t.Helper()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		return runJobController(ctx, env, true)
	}))
	ns := env.Namespace(t)
	return &harness{
		t: t, env: env, ns: ns,
		jobs: client.NewResource(env.Client, client.Jobs).Namespace(ns),
		pods: client.NewResource(env.Client, client.Pods).Namespace(ns),
	}
}

// newJob is a Job whose pods finish as annotations say.
func newJob(name string, completions, parallelism int32, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: &completions,
			Parallelism: &parallelism,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				},
			},
		},
	}
}

func (h *harness) create(j *batchv1.Job) *batchv1.Job {
	h.t.Helper()
	out, err := h.jobs.Create(h.t.Context(), j, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) waitJob(name string, cond func(*batchv1.Job) bool) *batchv1.Job {
	h.t.Helper()
	return testenv.WaitFor(h.t, h.env, client.Jobs, h.ns+"/"+name, cond)
}

func hasCondition(j *batchv1.Job, t batchv1.JobConditionType, reason string) bool {
	c := findCondition(&j.Status, t)
	return c != nil && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason)
}

func (h *harness) jobPods(j *batchv1.Job) []*corev1.Pod {
	h.t.Helper()
	list, err := h.pods.List(h.t.Context(), metav1.ListOptions{LabelSelector: batchv1.ControllerUidLabel + "=" + string(j.UID)})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func TestEnvParallelJobCompletes(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	j := h.create(newJob("five", 5, 2, map[string]string{nodesim.CompleteAfterAnnotation: "0s"}))
	done := h.waitJob("five", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, ReasonCompletionsReached) })
	if done.Status.Succeeded != 5 || done.Status.Failed != 0 || done.Status.Active != 0 || done.Status.CompletionTime == nil {
		t.Fatalf("status = %+v", done.Status)
	}
	if !hasCondition(done, batchv1.JobSuccessCriteriaMet, ReasonCompletionsReached) {
		t.Fatalf("no SuccessCriteriaMet condition: %+v", done.Status.Conditions)
	}
	pods := h.jobPods(j)
	if len(pods) != 5 {
		t.Fatalf("%d pods, want 5", len(pods))
	}
	for _, p := range pods {
		if hasTrackingFinalizer(p) || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s: phase %s finalizers %v", p.Name, p.Status.Phase, p.Finalizers)
		}
	}
}

func TestEnvBackoffLimitExceeded(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	j := newJob("fails", 1, 1, map[string]string{nodesim.ExitCodeAnnotation: "3"})
	j.Spec.BackoffLimit = ptr.To[int32](2)
	j = h.create(j)
	done := h.waitJob("fails", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobFailed, ReasonBackoffLimitExceeded) })
	if done.Status.Failed != 3 || done.Status.Succeeded != 0 || done.Status.CompletionTime != nil {
		t.Fatalf("status = %+v", done.Status)
	}
	if !hasCondition(done, batchv1.JobFailureTarget, ReasonBackoffLimitExceeded) {
		t.Fatalf("no FailureTarget: %+v", done.Status.Conditions)
	}
	if n := len(h.jobPods(j)); n != 3 {
		t.Fatalf("%d pods, want 3", n)
	}
}

func TestEnvIndexedJobRunsEachIndexOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	j := newJob("idx", 4, 2, map[string]string{nodesim.CompleteAfterAnnotation: "0s"})
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j = h.create(j)
	done := h.waitJob("idx", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, "") })
	if done.Status.CompletedIndexes != "0-3" || done.Status.Succeeded != 4 {
		t.Fatalf("status = %+v", done.Status)
	}
	seen := map[string]string{}
	for _, p := range h.jobPods(j) {
		idx := p.Annotations[CompletionIndexKey]
		if prev, dup := seen[idx]; dup {
			t.Errorf("index %s ran twice: %s and %s", idx, prev, p.Name)
		}
		seen[idx] = p.Name
		if p.Labels[CompletionIndexKey] != idx || p.Spec.Hostname != fmt.Sprintf("idx-%s", idx) {
			t.Errorf("pod %s: label %q hostname %q", p.Name, p.Labels[CompletionIndexKey], p.Spec.Hostname)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("indexes run: %v", seen)
	}
}

// A Job half done when its controller stops is finished by a new one on
// the same server without running more pods than completions.
func TestEnvRestartedControllerFinishesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t)
	ns := env.Namespace(t)
	h := &harness{t: t, env: env, ns: ns,
		jobs: client.NewResource(env.Client, client.Jobs).Namespace(ns),
		pods: client.NewResource(env.Client, client.Pods).Namespace(ns)}
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		go func() { errs <- runJobController(ctx, env, true) }()
		return func() {
			cancel()
			if err := <-errs; err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}
	stop := run()
	j := h.create(newJob("restart", 6, 3, map[string]string{nodesim.CompleteAfterAnnotation: "50ms"}))
	h.waitJob("restart", func(j *batchv1.Job) bool {
		u := j.Status.UncountedTerminatedPods
		return u != nil && j.Status.Succeeded+int32(len(u.Succeeded)) >= 2
	})
	stop()
	stop = run()
	defer stop()
	done := h.waitJob("restart", func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, "") })
	if done.Status.Succeeded != 6 {
		t.Fatalf("succeeded = %d", done.Status.Succeeded)
	}
	if n := len(h.jobPods(j)); n != 6 {
		t.Fatalf("%d pods, want 6", n)
	}
}

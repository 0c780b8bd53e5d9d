package nodesim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// statusRecorder keeps the statuses written.
type statusRecorder struct{ written []*corev1.Pod }

func (r *statusRecorder) Bind(context.Context, *corev1.Pod, string) error { return nil }
func (r *statusRecorder) UpdatePodStatus(_ context.Context, pod *corev1.Pod) error {
	r.written = append(r.written, pod.DeepCopy())
	return nil
}
func (r *statusRecorder) DeletePod(context.Context, string, string, types.UID) error { return nil }

// runningPod has run since startedAt with restartPolicy policy.
func runningPod(policy corev1.RestartPolicy, annotations map[string]string, startedAt time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", Annotations: annotations},
		Spec:       corev1.PodSpec{RestartPolicy: policy, NodeName: "n", Containers: []corev1.Container{{Name: "c"}}},
	}
	runningStatus(&p.Status, p, &nodeSpec{name: "n", hostIP: "172.18.0.1"}, "10.244.0.2", startedAt)
	return p
}

func TestRunEndsContainersAsAnnotated(t *testing.T) {
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		annotations map[string]string
		restarts    int32
		wantPhase   corev1.PodPhase // "" for no write
		wantCode    int32
		wantRestart bool
	}{
		{name: "no annotation runs forever", policy: corev1.RestartPolicyNever},
		{name: "Always pods never finish", policy: corev1.RestartPolicyAlways, annotations: map[string]string{ExitCodeAnnotation: "1"}},
		{name: "complete-after succeeds", policy: corev1.RestartPolicyNever, annotations: map[string]string{CompleteAfterAnnotation: "1s"}, wantPhase: corev1.PodSucceeded},
		{name: "not before complete-after", policy: corev1.RestartPolicyNever, annotations: map[string]string{CompleteAfterAnnotation: "1h"}},
		{name: "exit code fails a Never pod", policy: corev1.RestartPolicyNever, annotations: map[string]string{ExitCodeAnnotation: "3"}, wantPhase: corev1.PodFailed, wantCode: 3},
		{name: "exit code restarts an OnFailure pod", policy: corev1.RestartPolicyOnFailure, annotations: map[string]string{ExitCodeAnnotation: "2"}, wantPhase: corev1.PodRunning, wantCode: 2, wantRestart: true},
		{name: "fail-times fails the first runs", policy: corev1.RestartPolicyOnFailure, annotations: map[string]string{FailTimesAnnotation: "2"}, restarts: 1, wantPhase: corev1.PodRunning, wantCode: 1, wantRestart: true},
		{name: "fail-times succeeds after N runs", policy: corev1.RestartPolicyOnFailure, annotations: map[string]string{FailTimesAnnotation: "2"}, restarts: 2, wantPhase: corev1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0.Add(time.Minute))
			rec := &statusRecorder{}
			s := &syncer{pods: rec, clock: clk, startupDelay: time.Second, enqueueAfter: func(string, time.Duration) {}}
			pod := runningPod(tt.policy, tt.annotations, t0)
			pod.Status.ContainerStatuses[0].RestartCount = tt.restarts
			if err := s.run(t.Context(), "ns/p", pod); err != nil {
				t.Fatal(err)
			}
			if tt.wantPhase == "" {
				if len(rec.written) != 0 {
					t.Fatalf("wrote %+v", rec.written[0].Status)
				}
				return
			}
			if len(rec.written) != 1 {
				t.Fatalf("%d writes", len(rec.written))
			}
			st := rec.written[0].Status
			cs := st.ContainerStatuses[0]
			if st.Phase != tt.wantPhase {
				t.Fatalf("phase %s, want %s", st.Phase, tt.wantPhase)
			}
			if tt.wantRestart {
				if cs.RestartCount != tt.restarts+1 || cs.State.Waiting == nil || cs.LastTerminationState.Terminated == nil ||
					cs.LastTerminationState.Terminated.ExitCode != tt.wantCode || isPodReady(rec.written[0]) {
					t.Fatalf("container status %+v", cs)
				}
				return
			}
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tt.wantCode {
				t.Fatalf("container state %+v", cs.State)
			}
		})
	}
}

func TestRunRestartsCrashedContainerAfterDelay(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rec := &statusRecorder{}
	var requeued []time.Duration
	s := &syncer{pods: rec, clock: clk, startupDelay: 5 * time.Second, enqueueAfter: func(_ string, d time.Duration) { requeued = append(requeued, d) }}
	pod := runningPod(corev1.RestartPolicyOnFailure, map[string]string{ExitCodeAnnotation: "1"}, t0.Add(-time.Minute))
	crashedStatus(&pod.Status, 1, t0)
	if err := s.run(t.Context(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	if len(rec.written) != 0 || len(requeued) != 1 || requeued[0] != 5*time.Second {
		t.Fatalf("before the delay: writes %d requeued %v", len(rec.written), requeued)
	}
	clk.Step(5 * time.Second)
	if err := s.run(t.Context(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	if len(rec.written) != 1 || !isPodReady(rec.written[0]) || rec.written[0].Status.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("after the delay: %+v", rec.written)
	}
}

func TestRunFailConditionAnnotation(t *testing.T) {
	rec := &statusRecorder{}
	s := &syncer{pods: rec, clock: clocktesting.NewFakeClock(t0), enqueueAfter: func(string, time.Duration) {}}
	pod := runningPod(corev1.RestartPolicyNever, map[string]string{ExitCodeAnnotation: "1", FailConditionAnnotation: "ConfigIssue"}, t0)
	if err := s.run(t.Context(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	c := podCondition(&rec.written[0].Status, "ConfigIssue")
	if c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("conditions %+v", rec.written[0].Status.Conditions)
	}
}

func TestFailStoppedMarksPodsWithFinalizersFailed(t *testing.T) {
	rec := &statusRecorder{}
	s := &syncer{pods: rec, clock: clocktesting.NewFakeClock(t0)}
	pod := runningPod(corev1.RestartPolicyNever, nil, t0)
	if err := s.failStopped(t.Context(), pod); err != nil || len(rec.written) != 0 {
		t.Fatalf("pod without finalizers written: %v", err)
	}
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	if err := s.failStopped(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if len(rec.written) != 1 || rec.written[0].Status.Phase != corev1.PodFailed ||
		rec.written[0].Status.ContainerStatuses[0].State.Terminated.ExitCode != 137 {
		t.Fatalf("written %+v", rec.written)
	}
}

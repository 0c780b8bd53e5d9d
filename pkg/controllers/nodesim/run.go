package nodesim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/controller"
)

// Annotations that choose how a pod with restartPolicy Never or OnFailure
// ends. A pod with none of them (and without CompleteAfterAnnotation) runs
// Config.RunTime, or until it is deleted when that is zero.
const (
	// ExitCodeAnnotation, a decimal integer, is the exit code of the
	// pod's containers when they end, CompleteAfterAnnotation (or, without
	// it, no time) after they started. Zero makes the pod Succeeded; any
	// other code makes a restartPolicy Never pod Failed and restarts the
	// containers of a restartPolicy OnFailure pod.
	ExitCodeAnnotation = "nodesim.kplane.io/exit-code"
	// FailTimesAnnotation, a decimal integer N, makes the first N runs of
	// the pod's containers end with ExitCodeAnnotation's code (1 if that
	// is absent or 0) and the later runs with 0: an OnFailure pod restarts
	// N times and then succeeds. A run is counted by the containers'
	// restartCount, so a Never pod always makes its first run.
	FailTimesAnnotation = "nodesim.kplane.io/fail-times"
	// FailConditionAnnotation names a pod condition type that a pod which
	// fails gets with status True (reason SimulatedFailure), so that pod
	// failure policies on conditions can be exercised.
	FailConditionAnnotation = "nodesim.kplane.io/fail-condition"
)

// Reasons of the run's container states and conditions, as kubelets write
// them.
const (
	reasonError            = "Error"
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	reasonPodFailed        = "PodFailed"
	reasonSimulatedFailure = "SimulatedFailure"
)

// runPlan is how the current run of a pod's containers ends.
type runPlan struct {
	after    time.Duration
	exitCode int32
}

// planRun reads a finishing pod's annotations (without any, it runs
// defaultRun when that is positive); ok is false for a pod that runs until
// deleted.
func planRun(ctx context.Context, pod *corev1.Pod, defaultRun time.Duration) (plan runPlan, ok bool) {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		return runPlan{}, false
	}
	logger := controller.LoggerFrom(ctx)
	a := pod.Annotations
	if v, set := a[CompleteAfterAnnotation]; set {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			logger.Info("ignoring malformed annotation", "annotation", CompleteAfterAnnotation, "value", v)
		} else {
			plan.after, ok = d, true
		}
	}
	if v, set := a[ExitCodeAnnotation]; set {
		code, err := strconv.ParseInt(v, 10, 32)
		if err != nil || code < 0 || code > 255 {
			logger.Info("ignoring malformed annotation", "annotation", ExitCodeAnnotation, "value", v)
		} else {
			plan.exitCode, ok = int32(code), true
		}
	}
	if v, set := a[FailTimesAnnotation]; set {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			logger.Info("ignoring malformed annotation", "annotation", FailTimesAnnotation, "value", v)
		} else {
			ok = true
			switch {
			case restartCount(pod) >= int32(n):
				plan.exitCode = 0
			case plan.exitCode == 0:
				plan.exitCode = 1
			}
		}
	}
	if !ok && defaultRun > 0 {
		return runPlan{after: defaultRun}, true
	}
	return plan, ok
}

// run ends or restarts the containers of a running pod as its annotations
// ask, and restarts the containers of an OnFailure pod that failed once the
// restart delay has passed.
func (s *syncer) run(ctx context.Context, key string, pod *corev1.Pod) error {
	plan, ok := planRun(ctx, pod, s.runTime)
	if !ok {
		return nil
	}
	now := s.clock.Now()
	restartDelay := max(s.startupDelay, 0)
	if restarting(pod) {
		var last time.Time
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
		if remaining := last.Add(restartDelay).Sub(now); remaining > 0 {
			s.enqueueAfter(key, remaining)
			return nil
		}
		next := pod.DeepCopy()
		restartedStatus(&next.Status, now)
		return s.pods.UpdatePodStatus(ctx, next)
	}
	if remaining := runStart(pod).Add(plan.after).Sub(now); remaining > 0 {
		s.enqueueAfter(key, remaining)
		return nil
	}
	next := pod.DeepCopy()
	switch {
	case plan.exitCode == 0:
		succeededStatus(&next.Status, pod, now)
	case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
		crashedStatus(&next.Status, plan.exitCode, now)
	default:
		failedStatus(&next.Status, plan.exitCode, now)
		if t := pod.Annotations[FailConditionAnnotation]; t != "" {
			setPodCondition(&next.Status, corev1.PodCondition{
				Type: corev1.PodConditionType(t), Status: corev1.ConditionTrue, Reason: reasonSimulatedFailure,
				Message: fmt.Sprintf("simulated failure with exit code %d", plan.exitCode),
			}, now)
		}
	}
	return s.pods.UpdatePodStatus(ctx, next)
}

// runStart is when the current run of the pod's containers started.
func runStart(pod *corev1.Pod) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil {
			return r.StartedAt.Time
		}
	}
	if c := podCondition(&pod.Status, corev1.PodReady); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// restarting reports whether the pod's containers failed and wait to be
// started again (restartPolicy OnFailure).
func restarting(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && slices.ContainsFunc(pod.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool {
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoopBackOff
	})
}

func restartCount(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n = max(n, cs.RestartCount)
	}
	return n
}

// crashedStatus is a pod whose containers exited with code and will be
// restarted: the run's end is kept as their last state.
func crashedStatus(st *corev1.PodStatus, code int32, now time.Time) {
	t := metav1.NewTime(now)
	no := false
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		started := t
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reasonError, StartedAt: started, FinishedAt: t, ContainerID: cs.ContainerID,
		}}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: reasonCrashLoopBackOff, Message: "back-off restarting failed container " + cs.Name,
		}}
		cs.RestartCount++
		cs.Ready = false
		cs.Started = &no
	}
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotRdy}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotRdy}, now)
}

// restartedStatus is a pod whose containers run again after a restart.
func restartedStatus(st *corev1.PodStatus, now time.Time) {
	t := metav1.NewTime(now)
	yes := true
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}
		cs.Ready = true
		cs.Started = &yes
	}
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}, now)
}

// failedStatus is a pod whose containers exited with a non-zero code and
// are not restarted.
func failedStatus(st *corev1.PodStatus, code int32, now time.Time) {
	st.Phase = corev1.PodFailed
	t := metav1.NewTime(now)
	no := false
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		started := t
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready = false
		cs.Started = &no
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reasonError, StartedAt: started, FinishedAt: t, ContainerID: cs.ContainerID,
		}}
	}
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonPodFailed}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonPodFailed}, now)
}

// failStopped gives a pod whose deletion stopped its containers the
// terminal phase a kubelet gives it before the pod is removed: Failed,
// with its containers terminated by the kill (exit code 137). Only pods
// with finalizers outlive their deletion, so only they are written.
func (s *syncer) failStopped(ctx context.Context, pod *corev1.Pod) error {
	if isTerminal(pod) || len(pod.Finalizers) == 0 {
		return nil
	}
	next := pod.DeepCopy()
	failedStatus(&next.Status, 137, s.clock.Now())
	return s.pods.UpdatePodStatus(ctx, next)
}

package tables

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeLostReason is the pod status reason the node lifecycle controller
// sets when a pod's node stops responding.
const nodeLostReason = "NodeLost"

func podColumns() []metav1.TableColumnDefinition {
	status, spec := corev1.PodStatus{}.SwaggerDoc(), corev1.PodSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn(),
		{Name: "IP", Type: "string", Priority: 1, Description: status["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: spec["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: status["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: spec["readinessGates"]},
	}
}

// isSidecar reports whether an init container keeps running beside the
// app containers (restartPolicy Always).
func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func hasCondition(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// later returns the later of a and the termination time of a container's
// last termination, if any.
func later(a time.Time, s corev1.ContainerStatus) time.Time {
	if t := s.LastTerminationState.Terminated; t != nil && a.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return a
}

// podRow follows kubectl's pod printer: READY counts ready containers
// (sidecar init containers included), STATUS is the most telling reason
// (an init step, a container's waiting or terminated reason, Terminating
// while deletion is pending), RESTARTS sums restarts with the age of the
// latest one.
func podRow(pod *corev1.Pod, now time.Time) ([]any, []metav1.TableRowCondition) {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart time.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	var conds []metav1.TableRowCondition
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		conds = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		conds = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}

	inits := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		inits[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}

	initializing := false
	for i, s := range pod.Status.InitContainerStatuses {
		restarts += int(s.RestartCount)
		lastRestart = later(lastRestart, s)
		sidecar := isSidecar(inits[s.Name])
		if sidecar {
			sidecarRestarts += int(s.RestartCount)
			lastSidecarRestart = later(lastSidecarRestart, s)
		}
		switch {
		case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
			continue
		case sidecar && s.Started != nil && *s.Started:
			if s.Ready {
				ready++
			}
			continue
		case s.State.Terminated != nil:
			t := s.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case s.State.Waiting != nil && s.State.Waiting.Reason != "" && s.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + s.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || hasCondition(pod.Status.Conditions, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			s := pod.Status.ContainerStatuses[i]
			restarts += int(s.RestartCount)
			lastRestart = later(lastRestart, s)
			switch {
			case s.State.Waiting != nil && s.State.Waiting.Reason != "":
				reason = s.State.Waiting.Reason
			case s.State.Terminated != nil && s.State.Terminated.Reason != "":
				reason = s.State.Terminated.Reason
			case s.State.Terminated != nil && s.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", s.State.Terminated.Signal)
			case s.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", s.State.Terminated.ExitCode)
			case s.Ready && s.State.Running != nil:
				running = true
				ready++
			}
		}
		// A pod with a completed container and one still running is running.
		if reason == "Completed" && running {
			if hasCondition(pod.Status.Conditions, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == nodeLostReason:
		reason = "Unknown"
	case pod.DeletionTimestamp != nil && !terminal:
		reason = "Terminating"
	}

	restartsCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, now))
	}

	none := func(s string) string {
		if s == "" {
			return "<none>"
		}
		return s
	}
	ip := ""
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		met := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == corev1.ConditionTrue {
						met++
					}
					break
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
	}
	return []any{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		reason,
		restartsCell,
		since(pod.CreationTimestamp.Time, now),
		none(ip),
		none(pod.Spec.NodeName),
		none(pod.Status.NominatedNodeName),
		gates,
	}, conds
}

package tables

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var readyCell = regexp.MustCompile(`^(\d+)/(\d+)$`)

// FuzzPodRow builds pods from arbitrary container states and checks that
// every row is well formed: one cell per column, READY never above the
// container count, RESTARTS starting with the restart sum.
func FuzzPodRow(f *testing.F) {
	f.Add("Running", "", uint8(2), uint8(1), "CrashLoopBackOff", "", int32(0), int32(0), int32(3), true, false, uint8(0))
	f.Add("Pending", "", uint8(1), uint8(2), "", "Error", int32(1), int32(0), int32(0), false, true, uint8(1))
	f.Add("Failed", "Evicted", uint8(0), uint8(0), "", "", int32(0), int32(9), int32(0), false, false, uint8(0))
	f.Fuzz(func(t *testing.T, phase, podReason string, containers, inits uint8, waitReason, termReason string, exit, signal, restarts int32, ready, deleting bool, sidecars uint8) {
		containers, inits, sidecars = containers%5, inits%4, sidecars%4
		if restarts < 0 {
			restarts = -restarts % 1000
		}
		p := pod()
		p.Status.Phase = corev1.PodPhase(phase)
		p.Status.Reason = podReason
		if deleting {
			p.DeletionTimestamp = agoPtr(time.Second)
		}
		always := corev1.ContainerRestartPolicyAlways
		started := true
		state := func(i int) corev1.ContainerState {
			switch i % 3 {
			case 0:
				return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waitReason}}
			case 1:
				return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: termReason, ExitCode: exit, Signal: signal, FinishedAt: ago(time.Minute)}}
			}
			return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}
		total := int(containers)
		for i := range int(inits) {
			c := corev1.Container{Name: fmt.Sprintf("init-%d", i)}
			if i < int(sidecars) {
				c.RestartPolicy = &always
				total++
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			s := corev1.ContainerStatus{Name: c.Name, Ready: ready, RestartCount: restarts, State: state(i + int(exit)), Started: &started}
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(time.Duration(i) * time.Minute)}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, s)
		}
		for i := range int(containers) {
			c := corev1.Container{Name: fmt.Sprintf("c-%d", i)}
			p.Spec.Containers = append(p.Spec.Containers, c)
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
				corev1.ContainerStatus{Name: c.Name, Ready: ready, RestartCount: restarts, State: state(i + int(signal))})
		}
		cells, conds := podRow(p, now)
		if len(cells) != len(podColumns()) {
			t.Fatalf("%d cells for %d columns", len(cells), len(podColumns()))
		}
		m := readyCell.FindStringSubmatch(cells[1].(string))
		if m == nil {
			t.Fatalf("READY cell %q", cells[1])
		}
		r, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if n != total || r > n {
			t.Fatalf("READY %s with %d containers", cells[1], total)
		}
		if cells[2].(string) == "" && phase != "" {
			t.Fatalf("empty STATUS for phase %q", phase)
		}
		restartsCell := cells[3].(string)
		if _, err := strconv.Atoi(restartsCell); err != nil && !regexp.MustCompile(`^\d+ \(.+ ago\)$`).MatchString(restartsCell) {
			t.Fatalf("RESTARTS cell %q", restartsCell)
		}
		terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if terminal != (len(conds) == 1 && conds[0].Type == metav1.RowCompleted) {
			t.Fatalf("phase %s gave conditions %v", phase, conds)
		}
		if deleting && !terminal && podReason != nodeLostReason && cells[2] != "Terminating" {
			t.Fatalf("pod being deleted shows %q", cells[2])
		}
	})
}

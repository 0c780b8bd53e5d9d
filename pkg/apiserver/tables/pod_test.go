package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// now is the fixed time every test measures ages against.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

// pod builds a pod created 5 minutes ago with one container per name.
func pod(containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(5 * time.Minute)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: c + ":1"})
	}
	return p
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, exit, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exit, Signal: signal}}}
}

func cond(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

func TestPodRow(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	yes := true
	tests := []struct {
		name      string
		pod       func() *corev1.Pod
		wantCells []any
		wantConds []metav1.TableRowCondition
	}{
		{
			name: "running, one of two ready, wide cells",
			pod: func() *corev1.Pod {
				p := pod("app", "sidecar")
				p.Spec.NodeName = "node-1"
				p.Status.Phase = corev1.PodRunning
				p.Status.PodIP = "10.0.0.5"
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 0), running("sidecar", false, 0)}
				return p
			},
			wantCells: []any{"web", "1/2", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "<none>"},
		},
		{
			name: "pending without statuses",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.NominatedNodeName = "node-2"
				return p
			},
			wantCells: []any{"web", "0/1", "Pending", "0", "5m", "<none>", "<none>", "node-2", "<none>"},
		},
		{
			name: "crash loop with recent restart",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				s := waiting("app", "CrashLoopBackOff")
				s.RestartCount = 5
				s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(90 * time.Second)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
				return p
			},
			wantCells: []any{"web", "0/1", "CrashLoopBackOff", "5 (90s ago)", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "restarts sum over containers, the latest restart counts",
			pod: func() *corev1.Pod {
				p := pod("a", "b")
				p.Status.Phase = corev1.PodRunning
				a, b := running("a", true, 2), running("b", true, 1)
				a.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(3 * time.Hour)}
				b.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(200 * time.Second)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{a, b}
				return p
			},
			wantCells: []any{"web", "2/2", "Running", "3 (3m20s ago)", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "restarts without a termination time",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 4)}
				return p
			},
			wantCells: []any{"web", "1/1", "Running", "4", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", "Completed", 0, 0)}
				return p
			},
			wantCells: []any{"web", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
			wantConds: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The pod has completed successfully."}},
		},
		{
			name: "failed with an error",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", "Error", 1, 0)}
				return p
			},
			wantCells: []any{"web", "0/1", "Error", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
			wantConds: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The pod failed."}},
		},
		{
			name: "evicted",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodFailed
				p.Status.Reason = "Evicted"
				return p
			},
			wantCells: []any{"web", "0/1", "Evicted", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
			wantConds: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The pod failed."}},
		},
		{
			name: "exit code and signal without reason",
			pod: func() *corev1.Pod {
				p := pod("a", "b")
				p.Status.Phase = corev1.PodRunning
				// Statuses are read last to first, so the first one decides.
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("a", "", 137, 0), terminated("b", "", 0, 9)}
				return p
			},
			wantCells: []any{"web", "0/2", "ExitCode:137", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "signal without reason",
			pod: func() *corev1.Pod {
				p := pod("a")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("a", "", 0, 9)}
				return p
			},
			wantCells: []any{"web", "0/1", "Signal:9", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed container beside a running one, pod ready",
			pod: func() *corev1.Pod {
				p := pod("job", "server")
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionTrue)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("job", "Completed", 0, 0), running("server", true, 0)}
				return p
			},
			wantCells: []any{"web", "1/2", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed container beside a running one, pod not ready",
			pod: func() *corev1.Pod {
				p := pod("job", "server")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("job", "Completed", 0, 0), running("server", true, 0)}
				return p
			},
			wantCells: []any{"web", "1/2", "NotReady", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminating",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 0)}
				return p
			},
			wantCells: []any{"web", "1/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminal pod being deleted keeps its status",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", "Completed", 0, 0)}
				return p
			},
			wantCells: []any{"web", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
			wantConds: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The pod has completed successfully."}},
		},
		{
			name: "deleted on a lost node",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.DeletionTimestamp = agoPtr(time.Second)
				p.Status.Phase = corev1.PodRunning
				p.Status.Reason = "NodeLost"
				return p
			},
			wantCells: []any{"web", "0/1", "Unknown", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduling gated",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
				return p
			},
			wantCells: []any{"web", "0/1", "SchedulingGated", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "first init container initializing",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("i1", "PodInitializing"), waiting("i2", "PodInitializing")}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "PodInitializing")}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:0/2", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "second init container running",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "Completed", 0, 0), running("i2", false, 0)}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:1/2", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container crash loop counts its restarts",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.Phase = corev1.PodPending
				s := waiting("i1", "CrashLoopBackOff")
				s.RestartCount = 3
				s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(10 * time.Second)}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:CrashLoopBackOff", "3 (10s ago)", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container failed with a reason",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "Error", 1, 0)}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:Error", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container failed without a reason",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "", 2, 0), terminated("i2", "", 0, 15)}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:ExitCode:2", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container killed by a signal",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "", 1, 15)}
				return p
			},
			wantCells: []any{"web", "0/1", "Init:Signal:15", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "sidecar init container counts as a ready container",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
				p.Status.Phase = corev1.PodRunning
				s := running("proxy", true, 1)
				s.Started = &yes
				s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Hour)}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 0)}
				return p
			},
			wantCells: []any{"web", "2/2", "Running", "1 (120m ago)", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "readiness gates",
			pod: func() *corev1.Pod {
				p := pod("app")
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{cond("example.com/lb", corev1.ConditionTrue), cond("example.com/dns", corev1.ConditionFalse)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 0)}
				return p
			},
			wantCells: []any{"web", "1/1", "Running", "0", "5m", "<none>", "<none>", "<none>", "1/2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, conds := podRow(tt.pod(), now)
			if diff := cmp.Diff(tt.wantCells, cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantConds, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSince(t *testing.T) {
	tests := []struct {
		age  time.Duration
		want string
	}{
		{0, "0s"},
		{45 * time.Second, "45s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{200 * time.Second, "3m20s"},
		{10 * time.Minute, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{7*time.Hour + 59*time.Minute, "7h59m"},
		{8 * time.Hour, "8h"},
		{47 * time.Hour, "47h"},
		{52 * time.Hour, "2d4h"},
		{7 * 24 * time.Hour, "7d"},
		{8 * 24 * time.Hour, "8d"},
		{400 * 24 * time.Hour, "400d"},
		{3*365*24*time.Hour + 5*24*time.Hour, "3y5d"},
		{10 * 365 * 24 * time.Hour, "10y"},
		{-time.Second, "0s"},
		{-time.Minute, "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := since(now.Add(-tt.age), now); got != tt.want {
				t.Fatalf("since(%v ago) = %q, want %q", tt.age, got, tt.want)
			}
		})
	}
	if got := since(time.Time{}, now); got != "<unknown>" {
		t.Fatalf("since(zero) = %q, want <unknown>", got)
	}
}

package replicaset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/client"
)

func TestEnvScaleUpAndDown(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	rs := h.createRS("web", 3)
	h.waitRS("web", "3 replicas", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 3 })
	pods := h.waitPods("3 pods", func(p []*corev1.Pod) bool { return len(controlledBy(p, rs)) == 3 })
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || p.GenerateName != "web-" {
			t.Errorf("pod %s: controller ref %+v, generateName %q", p.Name, ref, p.GenerateName)
		}
	}

	h.scale("web", 1)
	h.waitRS("web", "1 replica", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 1 })
	h.waitPods("1 pod", func(p []*corev1.Pod) bool { return len(p) == 1 })

	h.scale("web", 0)
	h.waitRS("web", "0 replicas", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 0 })
	h.waitPods("no pods", func(p []*corev1.Pod) bool { return len(p) == 0 })

	events, err := client.NewResource(h.env.Client, client.Events).Namespace(h.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var creates, deletes int32
	for _, e := range events.Items {
		switch e.Reason {
		case ReasonSuccessfulCreate:
			creates += max(e.Count, 1)
		case ReasonSuccessfulDelete:
			deletes += max(e.Count, 1)
		}
	}
	// Events are written asynchronously; all must be there by now or be
	// on their way, so only check that some arrived of each kind.
	if creates == 0 || deletes == 0 {
		t.Errorf("events: %d SuccessfulCreate, %d SuccessfulDelete; want some of each", creates, deletes)
	}
}

func TestEnvReplacesDeletedPod(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	rs := h.createRS("web", 2)
	pods := h.waitPods("2 pods", func(p []*corev1.Pod) bool { return len(controlledBy(p, rs)) == 2 })
	victim := pods[0]
	if err := h.pods.Delete(t.Context(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPods("a replacement", func(p []*corev1.Pod) bool {
		mine := controlledBy(p, rs)
		for _, x := range mine {
			if x.UID == victim.UID {
				return false
			}
		}
		return len(mine) == 2
	})
}

func TestEnvAdoptsAndReleases(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
	}
	orphan, err := h.pods.Create(t.Context(), orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign := orphan.DeepCopy()
	yes := true
	foreign.ObjectMeta = metav1.ObjectMeta{
		Name: "foreign", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "some-uid", Controller: &yes}},
	}
	if _, err := h.pods.Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := h.createRS("web", 2)
	pods := h.waitPods("orphan adopted and one pod created", func(p []*corev1.Pod) bool {
		mine := controlledBy(p, rs)
		adopted := false
		for _, x := range mine {
			adopted = adopted || x.UID == orphan.UID
		}
		return adopted && len(mine) == 2
	})
	for _, p := range pods {
		if p.Name == "foreign" {
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "some-uid" {
				t.Errorf("foreign pod's controller changed: %+v", ref)
			}
		}
	}

	// Relabel the adopted pod: it is released and replaced.
	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if _, err := h.pods.Patch(t.Context(), "orphan", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPods("orphan released and replaced", func(p []*corev1.Pod) bool {
		released := false
		for _, x := range p {
			if x.UID == orphan.UID {
				released = metav1.GetControllerOf(x) == nil
			}
		}
		return released && len(controlledBy(p, rs)) == 2
	})
}

func TestEnvStatusCounts(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	rs := h.createRS("web", 2)
	pods := h.waitPods("2 pods", func(p []*corev1.Pod) bool { return len(controlledBy(p, rs)) == 2 })
	st := h.waitRS("web", "replicas 2", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 2 }).Status
	if st.ReadyReplicas != 0 || st.AvailableReplicas != 0 || st.FullyLabeledReplicas != 2 {
		t.Errorf("status = %+v, want 2 fully labeled, none ready", st)
	}
	// Make one pod ready, as a node agent would.
	p := pods[0].DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now()),
	})
	if _, err := h.pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitRS("web", "1 ready and available", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ReadyReplicas == 1 && rs.Status.AvailableReplicas == 1
	})
}

func TestEnvMinReadySecondsOnFakeClock(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(time.Now())
	h := startHarnessWith(t, clk)
	rs := h.createRSWith("web", 1, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 10 })
	pods := h.waitPods("1 pod", func(p []*corev1.Pod) bool { return len(controlledBy(p, rs)) == 1 })
	p := pods[0].DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now()),
	})
	if _, err := h.pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitRS("web", "ready, not yet available", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ReadyReplicas == 1 && rs.Status.AvailableReplicas == 0
	})
	clk.Step(11 * time.Second)
	h.waitRS("web", "available after minReadySeconds", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.AvailableReplicas == 1
	})
}

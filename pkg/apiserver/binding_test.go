package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBinding(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	bind := func(node string) response {
		return e.do("POST", podPath("default", "p")+"/binding", &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		})
	}
	bind("node-1").expect(t, 201, "")
	var p corev1.Pod
	e.do("GET", podPath("default", "p"), nil).decode(t, &p)
	if p.Spec.NodeName != "node-1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Fatalf("bound pod: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	bind("node-2").expect(t, 409, metav1.StatusReasonConflict)
	bind("").expect(t, 422, metav1.StatusReasonInvalid)
	e.do("POST", podPath("default", "nope")+"/binding", &corev1.Binding{Target: corev1.ObjectReference{Name: "n"}}).expect(t, 404, metav1.StatusReasonNotFound)
	e.do("GET", podPath("default", "p")+"/binding", nil).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	e.do("POST", deployPath("default", "d")+"/binding", `{}`).expect(t, 404, metav1.StatusReasonNotFound)
}

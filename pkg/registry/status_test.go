package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestStatusUpdateKeepsMetadata checks what a write through the status
// subresource stores, per resource: the new status and metadata, except
// what the resource resets to the stored state.
func TestStatusUpdateKeepsMetadata(t *testing.T) {
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	tests := []struct {
		name  string
		st    Strategy
		old   Object
		write func(obj Object) // changes spec, status and metadata
		check func(t *testing.T, out, old Object)
	}{{
		name: "deployment: annotations kept, labels and spec reset",
		st:   Deployments(),
		old:  deployment("d"),
		write: func(o Object) {
			d := o.(*appsv1.Deployment)
			d.Spec.Replicas = ptr[int32](9)
			d.Status.Replicas = 5
		},
		check: func(t *testing.T, out, old Object) {
			d, od := out.(*appsv1.Deployment), old.(*appsv1.Deployment)
			if d.Status.Replicas != 5 {
				t.Errorf("status %+v", d.Status)
			}
			if diff := cmp.Diff(od.Spec, d.Spec); diff != "" {
				t.Errorf("spec changed (-old +out):\n%s", diff)
			}
			if diff := cmp.Diff(od.Labels, d.Labels); diff != "" {
				t.Errorf("labels changed (-old +out):\n%s", diff)
			}
			if d.Annotations["note"] != "new" || d.Finalizers[0] != "example.com/f" {
				t.Errorf("metadata dropped: annotations %v finalizers %v", d.Annotations, d.Finalizers)
			}
		},
	}, {
		name: "replicaset: labels and annotations kept, spec reset",
		st:   ReplicaSets(),
		old:  replicaSet("r"),
		write: func(o Object) {
			r := o.(*appsv1.ReplicaSet)
			r.Spec.Replicas = ptr[int32](9)
			r.Status.Replicas = 5
		},
		check: func(t *testing.T, out, old Object) {
			r, or := out.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
			if r.Status.Replicas != 5 || cmp.Diff(or.Spec, r.Spec) != "" {
				t.Errorf("status %+v spec replicas %v", r.Status, r.Spec.Replicas)
			}
			if r.Labels["extra"] != "yes" || r.Annotations["note"] != "new" {
				t.Errorf("metadata dropped: labels %v annotations %v", r.Labels, r.Annotations)
			}
		},
	}, {
		name: "pod: owner references and spec reset, QoS and observed generations kept",
		st:   Pods(),
		old: func() Object {
			p := pod("p")
			p.OwnerReferences = owner
			p.Status = corev1.PodStatus{
				Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 3,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, ObservedGeneration: 2}},
			}
			return p
		}(),
		write: func(o Object) {
			p := o.(*corev1.Pod)
			p.Spec.NodeName = "n1"
			p.OwnerReferences = nil
			p.Status = corev1.PodStatus{
				Phase:      corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			}
		},
		check: func(t *testing.T, out, old Object) {
			p := out.(*corev1.Pod)
			if p.Spec.NodeName != "" || len(p.OwnerReferences) != 1 {
				t.Errorf("spec node %q owner references %v", p.Spec.NodeName, p.OwnerReferences)
			}
			if p.Labels["extra"] != "yes" || p.Annotations["note"] != "new" {
				t.Errorf("metadata dropped: labels %v annotations %v", p.Labels, p.Annotations)
			}
			want := corev1.PodStatus{
				Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 3,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 2}},
			}
			if diff := cmp.Diff(want, p.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "node: spec reset",
		st:   Nodes(),
		old:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
		write: func(o Object) {
			n := o.(*corev1.Node)
			n.Spec.Unschedulable = true
			n.Status.Phase = corev1.NodeRunning
		},
		check: func(t *testing.T, out, old Object) {
			n := out.(*corev1.Node)
			if n.Spec.Unschedulable || n.Status.Phase != corev1.NodeRunning || n.Labels["extra"] != "yes" {
				t.Errorf("node %+v", n)
			}
		},
	}, {
		name: "namespace: spec reset",
		st:   Namespaces(),
		old:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}},
		write: func(o Object) {
			n := o.(*corev1.Namespace)
			n.Spec.Finalizers = nil
			n.Status.Phase = corev1.NamespaceTerminating
		},
		check: func(t *testing.T, out, old Object) {
			n := out.(*corev1.Namespace)
			if len(n.Spec.Finalizers) != 1 || n.Status.Phase != corev1.NamespaceTerminating || n.Annotations["note"] != "new" {
				t.Errorf("namespace %+v", n)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old
			tc.st.Default(old)
			old.SetGeneration(4)
			old.SetResourceVersion("10")
			old.SetLabels(map[string]string{"app": old.GetName()})
			before := old.DeepCopyObject()
			obj := old.DeepCopyObject().(Object)
			obj.SetGeneration(99)
			obj.SetResourceVersion("10")
			obj.SetLabels(map[string]string{"app": old.GetName(), "extra": "yes"})
			obj.SetAnnotations(map[string]string{"note": "new"})
			obj.SetFinalizers([]string{"example.com/f"})
			tc.write(obj)
			out := tc.st.PrepareForStatusUpdate(obj, old).(Object)
			if out.GetGeneration() != 4 || out.GetResourceVersion() != "10" {
				t.Errorf("generation %d resourceVersion %q, want 4 and 10", out.GetGeneration(), out.GetResourceVersion())
			}
			tc.check(t, out, old)
			if diff := cmp.Diff(before, runtime.Object(old)); diff != "" {
				t.Errorf("stored object changed (-before +after):\n%s", diff)
			}
			if errs := tc.st.ValidateUpdate(out, old); len(errs) > 0 {
				t.Errorf("validate: %v", errs)
			}
		})
	}
}

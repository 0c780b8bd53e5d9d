package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func replicationController(name string) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: podSpec()},
		},
	}
}

func TestReplicationController(t *testing.T) {
	st := ReplicationControllers()
	r := replicationController("web")
	if errs := createObj(t, st, r); len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(map[string]string{"app": "web"}, r.Spec.Selector); diff != "" {
		t.Errorf("selector not defaulted to the template's labels (-want +got):\n%s", diff)
	}
	if *r.Spec.Replicas != 1 || r.Labels["app"] != "web" {
		t.Errorf("replicas %d labels %v", *r.Spec.Replicas, r.Labels)
	}
	r.Status.Replicas = 2
	_, fs, _ := st.GetAttrs(r)
	if !fields.SelectorFromSet(fields.Set{"status.replicas": "2"}).Matches(fs) {
		t.Errorf("fields %v", fs)
	}
	sc, err := st.Scale(r)
	if err != nil || sc.Spec.Replicas != 1 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=web" {
		t.Errorf("scale %+v %v", sc, err)
	}

	tests := []struct {
		name   string
		change func(r *corev1.ReplicationController)
		want   []string
	}{
		{"no template", func(r *corev1.ReplicationController) {
			r.Spec.Template = nil
			r.Spec.Selector = map[string]string{"a": "b"}
		},
			[]string{"spec.template: Required value"}},
		{"selector mismatch", func(r *corev1.ReplicationController) { r.Spec.Selector = map[string]string{"app": "x"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"}},
		{"restart policy", func(r *corev1.ReplicationController) { r.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"deadline", func(r *corev1.ReplicationController) { r.Spec.Template.Spec.ActiveDeadlineSeconds = ptr[int64](5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"}},
		{"negative replicas", func(r *corev1.ReplicationController) { r.Spec.Replicas = ptr[int32](-1) },
			[]string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replicationController("web")
			tt.change(r)
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, st, r))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

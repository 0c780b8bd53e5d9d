package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func daemonSet(name string) *appsv1.DaemonSet {
	l := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()},
		},
	}
}

func TestDaemonSetDefaults(t *testing.T) {
	d := daemonSet("agent")
	if errs := createObj(t, DaemonSets(), d); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0)),
	}}
	if diff := cmp.Diff(want, d.Spec.UpdateStrategy); diff != "" {
		t.Errorf("update strategy (-want +got):\n%s", diff)
	}
	if *d.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("revision history limit %d", *d.Spec.RevisionHistoryLimit)
	}
	if g := d.Annotations[appsv1.DeprecatedTemplateGeneration]; g != "1" {
		t.Errorf("template generation %q", g)
	}
	// A change of the template counts a template generation, one elsewhere does not.
	next := d.DeepCopy()
	next.Spec.MinReadySeconds = 5
	DaemonSets().PrepareForUpdate(next, d)
	if g := next.Annotations[appsv1.DeprecatedTemplateGeneration]; g != "1" || next.Generation != 2 {
		t.Errorf("template generation %q generation %d", g, next.Generation)
	}
	again := next.DeepCopy()
	again.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	DaemonSets().PrepareForUpdate(again, next)
	if g := again.Annotations[appsv1.DeprecatedTemplateGeneration]; g != "2" || again.Generation != 3 {
		t.Errorf("template generation %q generation %d", g, again.Generation)
	}
}

func TestDaemonSetValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *appsv1.DaemonSet)
		want   []string
	}{
		{"no selector", func(d *appsv1.DaemonSet) { d.Spec.Selector = nil },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`"}},
		{"deadline", func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr[int64](9) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"}},
		{"not a percentage", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromString("half")), MaxSurge: ptr(intstr.FromInt32(0))}
		}, []string{
			`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`,
			"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
		}},
		{"empty selector", func(d *appsv1.DaemonSet) { d.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for daemonset"}},
		{"restart policy", func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"surge and unavailable", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromString("10%"))}
		}, []string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is non-zero`}},
		{"both zero", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(0))}
		}, []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"}},
		{"over 100%", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromString("150%")), MaxSurge: ptr(intstr.FromInt32(0))}
		}, []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`}},
		{"update strategy type", func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: "Blue"} },
			[]string{`spec.updateStrategy: Unsupported value: {"type":"Blue"}: supported values: "RollingUpdate", "OnDelete"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := daemonSet("agent")
			tt.change(d)
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, DaemonSets(), d))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDaemonSetSelectorImmutable(t *testing.T) {
	old := daemonSet("agent")
	createObj(t, DaemonSets(), old)
	old.ResourceVersion = "2"
	d := old.DeepCopy()
	d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if errs := updateObj(t, DaemonSets(), d, old); len(errs) > 0 {
		t.Errorf("template change refused: %v", errs)
	}
	d = old.DeepCopy()
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent", "tier": "x"}}
	d.Spec.Template.Labels = map[string]string{"app": "agent", "tier": "x"}
	want := []string{`spec.selector: Invalid value: {"matchLabels":{"app":"agent","tier":"x"}}: field is immutable`}
	if diff := cmp.Diff(want, errStrings(updateObj(t, DaemonSets(), d, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

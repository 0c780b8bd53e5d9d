package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pdb(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: minAvailable, MaxUnavailable: maxUnavailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
}

func TestPodDisruptionBudgetValidation(t *testing.T) {
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	runValidation(t, PodDisruptionBudgets(), []validationCase{
		{"min available", pdb(&two, nil), nil},
		{"max unavailable percent", pdb(nil, &half), nil},
		{"neither", pdb(nil, nil), nil},
		{"both", pdb(&two, &half), []string{
			`spec: Invalid value: {"minAvailable":2,"selector":{"matchLabels":{"app":"web"}},"maxUnavailable":"50%"}: minAvailable and maxUnavailable cannot be both set`,
		}},
		{"negative", pdb(ptr(intstr.FromInt32(-1)), nil), []string{"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"}},
		{"over 100%", pdb(nil, ptr(intstr.FromString("150%"))), []string{`spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%`}},
		{"not a percent", pdb(ptr(intstr.FromString("half")), nil), []string{`spec.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`}},
		{"eviction policy", func() *policyv1.PodDisruptionBudget {
			p := pdb(&two, nil)
			p.Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))
			return p
		}(), []string{`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`}},
		{"known eviction policy", func() *policyv1.PodDisruptionBudget {
			p := pdb(&two, nil)
			p.Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.AlwaysAllow)
			return p
		}(), nil},
	})
}

func TestPodDisruptionBudgetStatus(t *testing.T) {
	st := PodDisruptionBudgets()
	two := intstr.FromInt32(2)
	old := pdb(&two, nil)
	old.Generation = 3
	old.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}

	upd := old.DeepCopy()
	upd.Status = policyv1.PodDisruptionBudgetStatus{}
	upd.Spec.MinAvailable = ptr(intstr.FromInt32(1))
	st.PrepareForUpdate(upd, old)
	if upd.Status.DisruptionsAllowed != 1 || upd.Generation != 4 {
		t.Errorf("main write: status %+v, generation %d", upd.Status, upd.Generation)
	}
	sw := old.DeepCopy()
	sw.Spec.MinAvailable = nil
	sw.Status.DisruptionsAllowed = 0
	out := st.PrepareForStatusUpdate(sw, old).(*policyv1.PodDisruptionBudget)
	if out.Spec.MinAvailable == nil || out.Status.DisruptionsAllowed != 0 || out.Generation != 3 {
		t.Errorf("status write: spec %+v, status %+v, generation %d", out.Spec, out.Status, out.Generation)
	}
}

func TestPodDisruptionBudgetStatusValidation(t *testing.T) {
	st := PodDisruptionBudgets()
	old := pdb(ptr(intstr.FromInt32(1)), nil)
	old.ResourceVersion = "2"
	w := old.DeepCopy()
	w.Status.DisruptionsAllowed = -1
	w.Status.Conditions = []metav1.Condition{{Type: "DisruptionAllowed", Status: "Maybe", Reason: "SufficientPods", LastTransitionTime: metav1.Now()}}
	out := st.PrepareForStatusUpdate(w, old)
	want := []string{
		`status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
		"status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
	}
	if diff := cmp.Diff(want, errorStrings(st.ValidateUpdate(out, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

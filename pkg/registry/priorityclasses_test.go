package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

func TestPriorityClassValidation(t *testing.T) {
	runValidation(t, PriorityClasses(), []validationCase{
		{"valid", priorityClass("high", 1000), nil},
		{"highest user value", priorityClass("top", 1000000000), nil},
		{"negative", priorityClass("low", -5), nil},
		{"too high", priorityClass("too-high", 1000000001), []string{"value: Forbidden: maximum allowed value of a user defined priority is 1000000000"}},
		{"system class", priorityClass("system-node-critical", 2000001000), nil},
		{"system class with a wrong value", priorityClass("system-cluster-critical", 5), []string{
			"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000",
		}},
		{"system class as global default", func() *schedulingv1.PriorityClass {
			p := priorityClass("system-node-critical", 2000001000)
			p.GlobalDefault = true
			return p
		}(), []string{
			"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-node-critical PriorityClass must be false",
		}},
		{"unknown system class", priorityClass("system-mine", 10), []string{
			"metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
		}},
		{"bad preemption policy", func() *schedulingv1.PriorityClass {
			p := priorityClass("p", 1)
			p.PreemptionPolicy = ptr(corev1.PreemptionPolicy("Sometimes"))
			return p
		}(), []string{`preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"`}},
	})
}

func TestPriorityClassDefaultsAndUpdate(t *testing.T) {
	st := PriorityClasses()
	p := priorityClass("high", 1000)
	st.Default(p)
	if p.PreemptionPolicy == nil || *p.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("preemptionPolicy %v", p.PreemptionPolicy)
	}
	p.ResourceVersion = "1"
	described := p.DeepCopy()
	described.Description = "for the important things"
	if errs := st.ValidateUpdate(described, p); len(errs) != 0 {
		t.Errorf("description change: %v", errs)
	}
	changed := p.DeepCopy()
	changed.Value = 2000
	changed.PreemptionPolicy = ptr(corev1.PreemptNever)
	want := []string{
		"value: Forbidden: may not be changed in an update.",
		`preemptionPolicy: Invalid value: "Never": field is immutable`,
	}
	if diff := cmp.Diff(want, errorStrings(st.ValidateUpdate(changed, p))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestSystemPriorityClassesAreValid(t *testing.T) {
	st := PriorityClasses()
	for _, p := range SystemPriorityClasses() {
		st.Default(p)
		if errs := st.Validate(p); len(errs) != 0 {
			t.Errorf("%s: %v", p.Name, errs)
		}
	}
}

func TestPriorityClassGeneration(t *testing.T) {
	st := PriorityClasses()
	p := priorityClass("high", 1000)
	st.PrepareForCreate(p)
	if p.Generation != 1 {
		t.Fatalf("created with generation %d", p.Generation)
	}
	upd := p.DeepCopy()
	upd.Description = "changed"
	upd.GlobalDefault = true
	st.PrepareForUpdate(upd, p)
	if upd.Generation != 1 {
		t.Errorf("updated to generation %d", upd.Generation)
	}
}

func TestCreateOnUpdate(t *testing.T) {
	for _, st := range []Strategy{Roles(), RoleBindings(), ClusterRoles(), ClusterRoleBindings(), RuntimeClasses()} {
		if !st.Info().AllowCreateOnUpdate {
			t.Errorf("%s: no create on update", st.Info().Resource)
		}
	}
	for _, st := range []Strategy{Ingresses(), IngressClasses(), NetworkPolicies(), PodDisruptionBudgets(), PriorityClasses(), CertificateSigningRequests()} {
		if st.Info().AllowCreateOnUpdate {
			t.Errorf("%s: create on update", st.Info().Resource)
		}
	}
}

package registry

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// systemPriorityClassPrefix starts the names reserved for the system
	// priority classes.
	systemPriorityClassPrefix = "system-"
	// HighestUserPriority is the highest value a priority class other than
	// the system ones may have.
	HighestUserPriority int32 = 1000000000
)

// SystemPriorityClasses returns the priority classes every cluster has,
// which the API server creates when it starts: system-cluster-critical
// (2000000000) and system-node-critical (2000001000). Each call returns
// fresh objects.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:  metav1.ObjectMeta{Name: "system-cluster-critical"},
			Value:       2000000000,
			Description: "For pods the cluster cannot work without; they may still be moved to another node.",
		},
		{
			ObjectMeta:  metav1.ObjectMeta{Name: "system-node-critical"},
			Value:       2000001000,
			Description: "For pods their node cannot work without; they are never moved to another node.",
		},
	}
}

// PriorityClasses is scheduling.k8s.io/v1 priorityclasses: named pod
// priorities, whose value and preemption policy never change. A delete
// request of a system priority class is refused.
func PriorityClasses() Strategy {
	return priorityClassStrategy{&Resource[*schedulingv1.PriorityClass]{
		Meta: Info{
			GVK:      schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"),
			Resource: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
		},
		NewFunc:     func() *schedulingv1.PriorityClass { return &schedulingv1.PriorityClass{} },
		NewListFunc: func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		// Generation 1 from creation on, never bumped, as in Kubernetes:
		// the part that bumps it never changes.
		Spec: func(*schedulingv1.PriorityClass) any { return nil },
		Defaults: func(p *schedulingv1.PriorityClass) {
			if p.PreemptionPolicy == nil {
				p.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
			}
		},
		ValidateFunc: validatePriorityClass,
		ValidateUpdateFunc: func(p, old *schedulingv1.PriorityClass) field.ErrorList {
			var errs field.ErrorList
			if p.Value != old.Value {
				errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
			}
			return append(errs, apivalidation.ValidateImmutableField(p.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
		},
	}}
}

// priorityClassStrategy is the PriorityClass strategy: the generic one,
// refusing to delete the system priority classes.
type priorityClassStrategy struct {
	*Resource[*schedulingv1.PriorityClass]
}

var _ DeleteGuard = priorityClassStrategy{}

// CheckDelete implements DeleteGuard.
func (priorityClassStrategy) CheckDelete(_, name string) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name == name {
			return errors.New("this is a system priority class and cannot be deleted")
		}
	}
	return nil
}

func validatePriorityClass(p *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(p.Name, systemPriorityClassPrefix) {
		if err := checkSystemPriorityClass(p); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if p.Value > HighestUserPriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserPriority)))
	}
	if p.PreemptionPolicy != nil {
		fld := field.NewPath("preemptionPolicy")
		switch *p.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fld, ""))
		default:
			errs = append(errs, field.NotSupported(fld, *p.PreemptionPolicy, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
		}
	}
	return errs
}

// checkSystemPriorityClass reports why p, named with the system prefix, is
// not one of the system priority classes as they are defined.
func checkSystemPriorityClass(p *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != p.Name {
			continue
		}
		if sys.Value != p.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != p.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", p.Name)
}

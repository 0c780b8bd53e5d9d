package priority

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// priorityClasses is the resource the plugin reads.
var priorityClasses = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")

var (
	podsResource          = schema.GroupResource{Resource: "pods"}
	priorityClassResource = priorityClasses.GroupResource()
)

// plugin resolves pods' priorities and keeps one default PriorityClass.
type plugin struct {
	source admission.Source
}

var (
	_ admission.MutationInterface   = (*plugin)(nil)
	_ admission.ValidationInterface = (*plugin)(nil)
)

// New builds the plugin; cfg.Source is required. It is an
// admission.Factory.
func New(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("priority needs a Source")
	}
	return &plugin{source: cfg.Source}, nil
}

// Handles reports true for CREATE and UPDATE.
func (p *plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Admit sets the priority of pods.
func (p *plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != podsResource {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	if a.Operation == admission.Update {
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
		}
		// The priority was set when the pod was created and cannot change:
		// an update that leaves it out keeps it.
		if pod.Spec.Priority == nil && old.Spec.Priority != nil {
			v := *old.Spec.Priority
			pod.Spec.Priority = &v
		}
		if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
			v := *old.Spec.PreemptionPolicy
			pod.Spec.PreemptionPolicy = &v
		}
		return nil
	}
	var (
		priority int32
		policy   *corev1.PreemptionPolicy
	)
	if pod.Spec.PriorityClassName == "" {
		def, err := p.defaultClass(ctx)
		if err != nil {
			return fmt.Errorf("failed to get default priority class: %w", err)
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.Name
			priority, policy = def.Value, def.PreemptionPolicy
		} else {
			lower := corev1.PreemptLowerPriority
			policy = &lower
		}
	} else {
		pc, err := p.class(ctx, pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err)
		}
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		v := *policy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

// Validate refuses a second default PriorityClass.
func (p *plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != priorityClassResource {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind PriorityClass but was unable to be converted")
	}
	if !pc.GlobalDefault {
		return nil
	}
	def, err := p.defaultClass(ctx)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if def != nil && (a.Operation == admission.Create || def.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// class returns the PriorityClass name from the cache or, when the cache
// lacks it, from the store.
func (p *plugin) class(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	o, err := p.source.Get(ctx, priorityClasses, "", name)
	if apierrors.IsNotFound(err) {
		o, err = p.source.Fetch(ctx, priorityClasses, "", name)
	}
	if err != nil {
		return nil, err
	}
	return asPriorityClass(o)
}

// defaultClass returns the globalDefault PriorityClass of the lowest value,
// or nil when no class is the default.
func (p *plugin) defaultClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	objs, _, err := p.source.List(ctx, priorityClasses, "")
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, o := range objs {
		pc, err := asPriorityClass(o)
		if err != nil {
			return nil, err
		}
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

func asPriorityClass(o runtime.Object) (*schedulingv1.PriorityClass, error) {
	switch pc := o.(type) {
	case *schedulingv1.PriorityClass:
		return pc, nil
	case runtime.Unstructured:
		out := &schedulingv1.PriorityClass{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pc.UnstructuredContent(), out); err != nil {
			return nil, fmt.Errorf("decode priority class: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("priority class of unexpected type %T", o)
	}
}

package limitranger

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// Annotation is the pod annotation telling what the plugin defaulted.
const Annotation = "kubernetes.io/limit-ranger"

// limitRanges is the resource the plugin reads.
var limitRanges = corev1.SchemeGroupVersion.WithResource("limitranges")

var (
	podKind   = schema.GroupKind{Kind: "Pod"}
	claimKind = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

// plugin applies and enforces LimitRanges.
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
		return nil, errors.New("LimitRanger needs a Source")
	}
	return &plugin{source: cfg.Source}, nil
}

// Handles reports true for CREATE and UPDATE.
func (p *plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Admit gives containers the defaults of the namespace's limitRanges.
func (p *plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	return p.run(ctx, a, func(lr *corev1.LimitRange) error {
		if pod, ok := a.Object.(*corev1.Pod); ok && a.Resource.Resource == "pods" {
			applyDefaults(lr, pod)
		}
		return nil
	})
}

// Validate refuses pods and claims outside the namespace's limitRanges.
func (p *plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	return p.run(ctx, a, func(lr *corev1.LimitRange) error {
		switch obj := a.Object.(type) {
		case *corev1.Pod:
			if a.Resource.Resource == "pods" {
				return validatePod(lr, obj)
			}
		case *corev1.PersistentVolumeClaim:
			if a.Resource.Resource == "persistentvolumeclaims" {
				return validateClaim(lr, obj)
			}
		}
		return nil
	})
}

// kind returns the group and kind of the request's object.
func kind(a *admission.Attributes) schema.GroupKind {
	if a.Kind.Kind != "" {
		return a.Kind.GroupKind()
	}
	switch a.Object.(type) {
	case *corev1.Pod:
		return podKind
	case *corev1.PersistentVolumeClaim:
		return claimKind
	}
	return schema.GroupKind{}
}

// supports reports whether the plugin looks at a: pods and claims, no
// subresource but a pod's resize, no pod update otherwise.
func supports(a *admission.Attributes) bool {
	gk := kind(a)
	if a.Subresource == "resize" && gk == podKind && a.Operation == admission.Update {
		return true
	}
	if a.Subresource != "" {
		return false
	}
	if gk == podKind && a.Operation == admission.Update {
		return false
	}
	return gk == podKind || gk == claimKind
}

func (p *plugin) run(ctx context.Context, a *admission.Attributes, fn func(*corev1.LimitRange) error) error {
	if !supports(a) {
		return nil
	}
	if a.OldObject != nil {
		m, err := meta.Accessor(a.OldObject)
		if err != nil {
			return admission.NewForbidden(a, err)
		}
		if m.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	objs, _, err := p.source.List(ctx, limitRanges, a.Namespace)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
	}
	for _, o := range objs {
		lr, err := asLimitRange(o)
		if err != nil {
			return admission.NewForbidden(a, err)
		}
		if err := fn(lr); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

func asLimitRange(o runtime.Object) (*corev1.LimitRange, error) {
	switch lr := o.(type) {
	case *corev1.LimitRange:
		return lr, nil
	case runtime.Unstructured:
		out := &corev1.LimitRange{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(lr.UnstructuredContent(), out); err != nil {
			return nil, fmt.Errorf("decode limit range: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("limit range of unexpected type %T", o)
	}
}

package registry

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Info names a resource and states which API behaviours it has.
type Info struct {
	// GVK is the group, version and kind of the objects.
	GVK schema.GroupVersionKind
	// Resource is the lower-case plural used in paths, e.g. "pods".
	Resource string
	// Singular is the lower-case singular name, e.g. "pod".
	Singular string
	// ListKind is the kind of a list of the objects; empty means the
	// kind followed by "List", as for every built-in.
	ListKind string
	// ShortNames are the aliases kubectl accepts, e.g. "po".
	ShortNames []string
	// Categories group resources for kubectl, e.g. "all".
	Categories []string
	// Namespaced is true for resources that live in a namespace.
	Namespaced bool
	// Status is true when the resource has a status subresource: writes to
	// the main resource keep the stored status, and status writes keep the
	// stored spec (and what ResetForStatus resets) but store the new status
	// and metadata, as in Kubernetes.
	Status bool
	// Scale is true when the resource has a scale subresource
	// (autoscaling/v1 Scale).
	Scale bool
	// AllowCreateOnUpdate lets an update of a missing object create it.
	AllowCreateOnUpdate bool
	// NoDeleteCollection refuses deleting the whole collection at once
	// (Kubernetes does for namespaces).
	NoDeleteCollection bool
	// ReturnDeletedObject makes delete answer with the deleted object rather
	// than a success Status.
	ReturnDeletedObject bool
}

// ListGVK returns the group, version and kind of a list of the objects.
func (i Info) ListGVK() schema.GroupVersionKind {
	if i.ListKind != "" {
		return i.GVK.GroupVersion().WithKind(i.ListKind)
	}
	return i.GVK.GroupVersion().WithKind(i.GVK.Kind + "List")
}

// GroupVersionResource returns the resource's group, version and plural.
func (i Info) GroupVersionResource() schema.GroupVersionResource {
	return i.GVK.GroupVersion().WithResource(i.Resource)
}

// Strategy is the behaviour of one resource. Methods receive objects of the
// resource's own type (as returned by New) and may mutate the first argument;
// they must not keep references to their arguments.
type Strategy interface {
	// Info names the resource.
	Info() Info
	// New returns a new empty object, e.g. &corev1.Pod{}.
	New() runtime.Object
	// NewList returns a new empty list, e.g. &corev1.PodList{}.
	NewList() runtime.Object

	// PrepareForCreate clears what a client may not set on create (the
	// status of a resource with a status subresource) and sets generation.
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate makes obj, the new state written through the main
	// resource, keep old's status, and bumps generation when the spec changed.
	PrepareForUpdate(obj, old runtime.Object)
	// PrepareForStatusUpdate returns the state to store for a write of obj
	// through the status subresource: obj, with its metadata changes kept,
	// old's generation, and the fields the status subresource may not change
	// (the spec, and per resource some metadata) reset to old's. The
	// resourceVersion is obj's (the caller's precondition). The caller still
	// applies the update rules every write follows (uid, timestamps, ...).
	PrepareForStatusUpdate(obj, old runtime.Object) runtime.Object
	// Default fills in defaulted fields.
	Default(obj runtime.Object)
	// Validate checks a new object, metadata included.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks a changed object against its previous state.
	ValidateUpdate(obj, old runtime.Object) field.ErrorList

	// GetAttrs returns the labels and the selectable fields of obj.
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
	// FieldLabels lists the fields a field selector may name.
	FieldLabels() []string

	// Scale returns the scale subresource view of obj.
	Scale(obj runtime.Object) (*autoscalingv1.Scale, error)
	// SetReplicas sets the desired replicas of obj from a scale write.
	SetReplicas(obj runtime.Object, replicas int32) error

	// GracefulDelete reports whether deleting obj, with the grace period the
	// client asked for (nil: none), should mark it for deletion and leave it
	// to an agent, and with which grace period.
	GracefulDelete(obj runtime.Object, requested *int64) (graceful bool, grace int64)
}

// Object is what every served type is: a runtime.Object with ObjectMeta.
type Object interface {
	runtime.Object
	metav1.Object
}

// Resource builds a Strategy from typed functions. Only Info, NewFunc and
// NewListFunc are required; each nil function means the resource lacks that
// behaviour.
type Resource[T Object] struct {
	// Meta names the resource and its behaviours.
	Meta Info
	// NewFunc returns a new empty object, e.g. &corev1.Pod{}.
	NewFunc func() T
	// NewListFunc returns a new empty list, e.g. &corev1.PodList{}.
	NewListFunc func() runtime.Object

	// NameFunc validates metadata.name; nil means a DNS subdomain.
	NameFunc apivalidation.ValidateNameFunc
	// Spec returns the part of an object whose changes bump
	// metadata.generation. Nil: the resource has no generation.
	Spec func(T) any
	// CopyStatus copies src's status into dst. Required when Meta.Status.
	CopyStatus func(dst, src T)
	// ResetForStatus resets in obj, the new state written through the status
	// subresource, what that subresource may not change, copying it from old,
	// the stored state: the spec, and for some resources labels or owner
	// references. It may keep references into old. Nil, with Meta.Status,
	// stores old with only obj's status.
	ResetForStatus func(obj, old T)
	// ResetStatus sets the status a new object starts with; nil keeps the
	// status the client sent (nodes).
	ResetStatus func(T)
	// Defaults fills in defaulted fields.
	Defaults func(T)
	// ValidateFunc checks the type-specific fields of a new object.
	ValidateFunc func(T) field.ErrorList
	// ValidateUpdateFunc checks immutable fields and transitions.
	ValidateUpdateFunc func(obj, old T) field.ErrorList
	// Fields returns the selectable fields beyond metadata.name and
	// metadata.namespace.
	Fields func(T) fields.Set
	// Replicas returns the desired and observed replicas and the label
	// selector of a scalable resource. Required when Meta.Scale.
	Replicas func(T) (desired, observed int32, selector string)
	// SetReplicasFunc sets the desired replicas. Required when Meta.Scale.
	SetReplicasFunc func(T, int32)
	// Graceful decides graceful deletion; nil means never graceful.
	Graceful func(obj T, requested *int64) (bool, int64)
}

var _ Strategy = (*Resource[*metav1.PartialObjectMetadata])(nil)

func (r *Resource[T]) cast(obj runtime.Object) T {
	t, ok := obj.(T)
	if !ok {
		// Objects come from New; anything else is a programming error in the server.
		panic(fmt.Sprintf("registry: %s given a %T", r.Meta.Resource, obj))
	}
	return t
}

// Info implements Strategy.
func (r *Resource[T]) Info() Info { return r.Meta }

// New implements Strategy.
func (r *Resource[T]) New() runtime.Object { return r.NewFunc() }

// NewList implements Strategy.
func (r *Resource[T]) NewList() runtime.Object { return r.NewListFunc() }

// PrepareForCreate implements Strategy.
func (r *Resource[T]) PrepareForCreate(obj runtime.Object) {
	t := r.cast(obj)
	if r.Meta.Status && r.ResetStatus != nil {
		r.ResetStatus(t)
	}
	if r.Spec != nil {
		t.SetGeneration(1)
	} else {
		t.SetGeneration(0)
	}
}

// PrepareForUpdate implements Strategy.
func (r *Resource[T]) PrepareForUpdate(obj, old runtime.Object) {
	t, o := r.cast(obj), r.cast(old)
	if r.Meta.Status && r.CopyStatus != nil {
		r.CopyStatus(t, o)
	}
	t.SetGeneration(o.GetGeneration())
	if r.Spec != nil && !apiequality.Semantic.DeepEqual(r.Spec(t), r.Spec(o)) {
		t.SetGeneration(o.GetGeneration() + 1)
	}
}

// PrepareForStatusUpdate implements Strategy.
func (r *Resource[T]) PrepareForStatusUpdate(obj, old runtime.Object) runtime.Object {
	t, o := r.cast(obj), r.cast(old)
	if r.ResetForStatus != nil {
		// A copy of old, so that obj never shares memory with the stored state.
		r.ResetForStatus(t, o.DeepCopyObject().(T))
		t.SetGeneration(o.GetGeneration())
		return t
	}
	out := o.DeepCopyObject().(T)
	if r.CopyStatus != nil {
		r.CopyStatus(out, t)
	}
	out.SetResourceVersion(t.GetResourceVersion())
	return out
}

// Default implements Strategy.
func (r *Resource[T]) Default(obj runtime.Object) {
	if r.Defaults != nil {
		r.Defaults(r.cast(obj))
	}
}

func (r *Resource[T]) nameFunc() apivalidation.ValidateNameFunc {
	if r.NameFunc != nil {
		return r.NameFunc
	}
	return apivalidation.NameIsDNSSubdomain
}

// Validate implements Strategy.
func (r *Resource[T]) Validate(obj runtime.Object) field.ErrorList {
	t := r.cast(obj)
	errs := apivalidation.ValidateObjectMetaAccessor(t, r.Meta.Namespaced, r.nameFunc(), field.NewPath("metadata"))
	if r.ValidateFunc != nil {
		errs = append(errs, r.ValidateFunc(t)...)
	}
	return errs
}

// ValidateUpdate implements Strategy.
func (r *Resource[T]) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	t, o := r.cast(obj), r.cast(old)
	errs := apivalidation.ValidateObjectMetaAccessor(t, r.Meta.Namespaced, r.nameFunc(), field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(t, o, field.NewPath("metadata"))...)
	if r.ValidateFunc != nil {
		errs = append(errs, r.ValidateFunc(t)...)
	}
	if r.ValidateUpdateFunc != nil {
		errs = append(errs, r.ValidateUpdateFunc(t, o)...)
	}
	return errs
}

// GetAttrs implements Strategy.
func (r *Resource[T]) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	t, ok := obj.(T)
	if !ok {
		return nil, nil, fmt.Errorf("%s: unexpected object type %T", r.Meta.Resource, obj)
	}
	fs := fields.Set{"metadata.name": t.GetName()}
	if r.Meta.Namespaced {
		fs["metadata.namespace"] = t.GetNamespace()
	}
	if r.Fields != nil {
		for k, v := range r.Fields(t) {
			fs[k] = v
		}
	}
	return labels.Set(t.GetLabels()), fs, nil
}

// FieldLabels implements Strategy.
func (r *Resource[T]) FieldLabels() []string {
	_, fs, _ := r.GetAttrs(r.NewFunc())
	out := make([]string, 0, len(fs)+1)
	out = append(out, "metadata.name", "metadata.namespace")
	for k := range fs {
		if k != "metadata.name" && k != "metadata.namespace" {
			out = append(out, k)
		}
	}
	return out
}

// Scale implements Strategy.
func (r *Resource[T]) Scale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	if !r.Meta.Scale || r.Replicas == nil {
		return nil, fmt.Errorf("%s has no scale subresource", r.Meta.Resource)
	}
	t := r.cast(obj)
	desired, observed, selector := r.Replicas(t)
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              t.GetName(),
			Namespace:         t.GetNamespace(),
			UID:               t.GetUID(),
			ResourceVersion:   t.GetResourceVersion(),
			CreationTimestamp: t.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: desired},
		Status: autoscalingv1.ScaleStatus{Replicas: observed, Selector: selector},
	}, nil
}

// SetReplicas implements Strategy.
func (r *Resource[T]) SetReplicas(obj runtime.Object, replicas int32) error {
	if !r.Meta.Scale || r.SetReplicasFunc == nil {
		return fmt.Errorf("%s has no scale subresource", r.Meta.Resource)
	}
	r.SetReplicasFunc(r.cast(obj), replicas)
	return nil
}

// GracefulDelete implements Strategy.
func (r *Resource[T]) GracefulDelete(obj runtime.Object, requested *int64) (bool, int64) {
	if r.Graceful == nil {
		return false, 0
	}
	return r.Graceful(r.cast(obj), requested)
}

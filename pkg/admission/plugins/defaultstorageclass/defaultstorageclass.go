package defaultstorageclass

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// The annotations marking a StorageClass the default, and a claim's class.
const (
	IsDefaultAnnotation      = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultAnnotation  = "storageclass.beta.kubernetes.io/is-default-class"
	BetaClaimClassAnnotation = "volume.beta.kubernetes.io/storage-class"
)

var (
	claimsResource = schema.GroupResource{Resource: "persistentvolumeclaims"}
	// storageClasses is the resource the plugin reads.
	storageClasses = storagev1.SchemeGroupVersion.WithResource("storageclasses")
)

// plugin sets the default StorageClass of new claims.
type plugin struct {
	source admission.Source
}

var _ admission.MutationInterface = (*plugin)(nil)

// New builds the plugin; cfg.Source is required. It is an
// admission.Factory.
func New(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("DefaultStorageClass needs a Source")
	}
	return &plugin{source: cfg.Source}, nil
}

// Handles reports true for CREATE only.
func (p *plugin) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit sets spec.storageClassName of a claim that names no class.
func (p *plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.GroupResource() != claimsResource || a.Subresource != "" {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	if _, ok := pvc.Annotations[BetaClaimClassAnnotation]; ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	def, err := p.defaultClass(ctx)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if def == nil {
		return nil
	}
	name := def.Name
	pvc.Spec.StorageClassName = &name
	return nil
}

// defaultClass returns the default StorageClass, or nil when there is none.
func (p *plugin) defaultClass(ctx context.Context) (*storagev1.StorageClass, error) {
	objs, _, err := p.source.List(ctx, storageClasses, "")
	if err != nil {
		return nil, fmt.Errorf("list storage classes: %w", err)
	}
	var defaults []*storagev1.StorageClass
	for _, o := range objs {
		sc, err := asStorageClass(o)
		if err != nil {
			return nil, err
		}
		if sc.Annotations[IsDefaultAnnotation] == "true" || sc.Annotations[BetaIsDefaultAnnotation] == "true" {
			defaults = append(defaults, sc)
		}
	}
	if len(defaults) == 0 {
		return nil, nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti != tj {
			return ti > tj
		}
		return defaults[i].Name < defaults[j].Name
	})
	return defaults[0], nil
}

func asStorageClass(o runtime.Object) (*storagev1.StorageClass, error) {
	switch sc := o.(type) {
	case *storagev1.StorageClass:
		return sc, nil
	case runtime.Unstructured:
		out := &storagev1.StorageClass{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sc.UnstructuredContent(), out); err != nil {
			return nil, fmt.Errorf("decode storage class: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("storage class of unexpected type %T", o)
	}
}

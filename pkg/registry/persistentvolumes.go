package registry

import (
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	accessModes = sets.New(corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod)
	volumeModes = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
	reclaims    = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)
)

// PersistentVolumeClaims is core/v1 persistentvolumeclaims: a status
// subresource, claims that start Pending, a spec that after creation only
// changes its volumeName once (the binder's), its storage request upward
// while bound, and its volumeAttributesClassName.
func PersistentVolumeClaims() Strategy {
	return &Resource[*corev1.PersistentVolumeClaim]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
			Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"},
			Namespaced: true, Status: true,
		},
		NewFunc:     func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} },
		NewListFunc: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		CopyStatus:  func(dst, src *corev1.PersistentVolumeClaim) { dst.Status = src.Status },
		ResetForStatus: func(c, old *corev1.PersistentVolumeClaim) {
			c.Spec = old.Spec
		},
		ResetStatus: func(c *corev1.PersistentVolumeClaim) {
			c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		Defaults: func(c *corev1.PersistentVolumeClaim) {
			defaultPVCSpec(&c.Spec)
			if c.Status.Phase == "" {
				c.Status.Phase = corev1.ClaimPending
			}
		},
		ValidateFunc: func(c *corev1.PersistentVolumeClaim) field.ErrorList {
			return validatePVCSpec(&c.Spec, field.NewPath("spec"))
		},
		ValidateUpdateFunc: validatePVCUpdate,
	}
}

func defaultPVCSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
}

// validateAccessModes checks the access modes of a claim or a volume.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(fld, "at least 1 access mode is required"))
	}
	rwop := false
	for _, m := range modes {
		if !accessModes.Has(m) {
			errs = append(errs, field.NotSupported(fld, m, sets.List(accessModes)))
		}
		rwop = rwop || m == corev1.ReadWriteOncePod
	}
	if rwop && len(modes) > 1 {
		errs = append(errs, field.Forbidden(fld, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(m *corev1.PersistentVolumeMode, fld *field.Path) field.ErrorList {
	if m != nil && !volumeModes.Has(*m) {
		return field.ErrorList{field.NotSupported(fld, *m, sets.List(volumeModes))}
	}
	return nil
}

func validateClassName(name *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != nil && *name != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*name, false) {
			errs = append(errs, field.Invalid(fld, *name, msg))
		}
	}
	return errs
}

// validatePVCSpec checks a claim's spec, also that of a stateful set's
// volume claim template.
func validatePVCSpec(s *corev1.PersistentVolumeClaimSpec, fld *field.Path) field.ErrorList {
	errs := validateAccessModes(s.AccessModes, fld.Child("accessModes"))
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	}
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(fld.Child("resources").Key(string(corev1.ResourceStorage)), ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(fld.Child("resources", "requests").Key(string(corev1.ResourceStorage)), q.String(), "must be greater than zero"))
	}
	errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: s.Resources.Limits}, fld.Child("resources"))...)
	errs = append(errs, validateClassName(s.StorageClassName, fld.Child("storageClassName"))...)
	errs = append(errs, validateVolumeMode(s.VolumeMode, fld.Child("volumeMode"))...)
	if s.VolumeAttributesClassName != nil && *s.VolumeAttributesClassName == "" {
		errs = append(errs, field.Required(fld.Child("volumeAttributesClassName"), "an empty string is disallowed"))
	} else {
		errs = append(errs, validateClassName(s.VolumeAttributesClassName, fld.Child("volumeAttributesClassName"))...)
	}
	return errs
}

func validatePVCUpdate(c, old *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	spec, oldSpec := c.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		// The binder sets the volume once.
		oldSpec.VolumeName = spec.VolumeName
	}
	// A claim of the legacy beta storage-class annotation may move to the field.
	if _, ok := old.Annotations[corev1.BetaStorageClassAnnotation]; ok && oldSpec.StorageClassName == nil && spec.StorageClassName != nil &&
		old.Annotations[corev1.BetaStorageClassAnnotation] == *spec.StorageClassName {
		oldSpec.StorageClassName = spec.StorageClassName
	}
	if c.Status.Phase == corev1.ClaimBound && spec.Resources.Requests != nil {
		if q, ok := oldSpec.Resources.Requests[corev1.ResourceStorage]; ok {
			spec.Resources.Requests[corev1.ResourceStorage] = q
		}
	}
	oldSpec.VolumeAttributesClassName = spec.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		diff := cmp.Diff(oldSpec, spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+diff))
	}
	newSize, oldSize := c.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		if status := old.Status.Capacity[corev1.ResourceStorage]; newSize.Cmp(status) <= 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	errs = append(errs, validateImmutable(c.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.VolumeAttributesClassName != nil {
		switch v := c.Spec.VolumeAttributesClassName; {
		case v == nil:
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
		case *v == "":
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-empty value to empty value is forbidden"))
		}
	}
	return errs
}

// PersistentVolumes is core/v1 persistentvolumes: cluster-scoped, a status
// subresource, volumes that start Pending and are retained unless a
// reclaim policy says otherwise, exactly one volume source, which never
// changes.
func PersistentVolumes() Strategy {
	return &Resource[*corev1.PersistentVolume]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
			Resource: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"},
			Status: true,
		},
		NewFunc:        func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} },
		NewListFunc:    func() runtime.Object { return &corev1.PersistentVolumeList{} },
		CopyStatus:     func(dst, src *corev1.PersistentVolume) { dst.Status = src.Status },
		ResetForStatus: func(v, old *corev1.PersistentVolume) { v.Spec = old.Spec },
		ResetStatus: func(v *corev1.PersistentVolume) {
			v.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
		},
		Defaults: func(v *corev1.PersistentVolume) {
			if v.Status.Phase == "" {
				v.Status.Phase = corev1.VolumePending
			}
			if v.Spec.PersistentVolumeReclaimPolicy == "" {
				v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
			}
			if v.Spec.VolumeMode == nil {
				v.Spec.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
			}
		},
		ValidateFunc: validatePV,
		ValidateUpdateFunc: func(v, old *corev1.PersistentVolume) field.ErrorList {
			fld := field.NewPath("spec")
			errs := validateImmutable(v.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource, fld.Child("persistentvolumesource"))
			errs = append(errs, validateImmutable(v.Spec.VolumeMode, old.Spec.VolumeMode, fld.Child("volumeMode"))...)
			if old.Spec.NodeAffinity != nil {
				errs = append(errs, validateImmutable(v.Spec.NodeAffinity, old.Spec.NodeAffinity, fld.Child("nodeAffinity"))...)
			}
			return errs
		},
	}
}

func validatePV(v *corev1.PersistentVolume) field.ErrorList {
	fld := field.NewPath("spec")
	s := &v.Spec
	errs := validateAccessModes(s.AccessModes, fld.Child("accessModes"))
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(fld.Child("capacity"), ""))
	}
	if _, ok := s.Capacity[corev1.ResourceStorage]; !ok || len(s.Capacity) > 1 {
		errs = append(errs, field.NotSupported(fld.Child("capacity"), s.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, name := range sortedResourceNames(s.Capacity) {
		if q := s.Capacity[name]; q.Sign() <= 0 {
			errs = append(errs, field.Invalid(fld.Child("capacity").Key(string(name)), q.String(), "must be greater than zero"))
		}
	}
	if p := s.PersistentVolumeReclaimPolicy; p != "" && !reclaims.Has(p) {
		errs = append(errs, field.NotSupported(fld.Child("persistentVolumeReclaimPolicy"), p, sets.List(reclaims)))
	}
	errs = append(errs, validateClassName(&s.StorageClassName, fld.Child("storageClassName"))...)
	errs = append(errs, validateVolumeMode(s.VolumeMode, fld.Child("volumeMode"))...)
	errs = append(errs, validateClassName(s.VolumeAttributesClassName, fld.Child("volumeAttributesClassName"))...)
	errs = append(errs, validateVolumeSource(v, fld)...)
	return errs
}

// validateVolumeSource checks that a volume has exactly one source, and
// the fields of the common ones.
func validateVolumeSource(v *corev1.PersistentVolume, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	src := reflect.ValueOf(v.Spec.PersistentVolumeSource)
	n := 0
	for i := range src.NumField() {
		if src.Field(i).IsNil() {
			continue
		}
		if n++; n > 1 {
			name, _, _ := strings.Cut(src.Type().Field(i).Tag.Get("json"), ",")
			errs = append(errs, field.Forbidden(fld.Child(name), "may not specify more than 1 volume type"))
		}
	}
	if n == 0 {
		return append(errs, field.Required(fld, "must specify a volume type"))
	}
	s := &v.Spec.PersistentVolumeSource
	switch {
	case s.HostPath != nil:
		if s.HostPath.Path == "" {
			errs = append(errs, field.Required(fld.Child("hostPath", "path"), ""))
		}
	case s.NFS != nil:
		if s.NFS.Server == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "server"), ""))
		}
		if s.NFS.Path == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "path"), ""))
		} else if !strings.HasPrefix(s.NFS.Path, "/") {
			errs = append(errs, field.Invalid(fld.Child("nfs", "path"), s.NFS.Path, "must be an absolute path"))
		}
	case s.Local != nil:
		if s.Local.Path == "" {
			errs = append(errs, field.Required(fld.Child("local", "path"), ""))
		}
		if v.Spec.NodeAffinity == nil {
			errs = append(errs, field.Required(fld.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	case s.CSI != nil:
		if s.CSI.Driver == "" {
			errs = append(errs, field.Required(fld.Child("csi", "driver"), ""))
		}
		if s.CSI.VolumeHandle == "" {
			errs = append(errs, field.Required(fld.Child("csi", "volumeHandle"), ""))
		}
	}
	return errs
}

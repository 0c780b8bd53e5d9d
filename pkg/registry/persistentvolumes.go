package registry

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
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
		// Kubernetes still selects claims on a bare "name", a field of old.
		Fields: func(c *corev1.PersistentVolumeClaim) fields.Set { return fields.Set{"name": c.Name} },
	}
}

func defaultPVCSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
}

// validateAccessModes checks the access modes of a claim or a volume;
// required says what to report when there are none.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, required string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(fld, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		switch {
		case !accessModes.Has(m):
			errs = append(errs, field.NotSupported(fld, m, sets.List(accessModes)))
		case m == corev1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
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
	errs := validateAccessModes(s.AccessModes, "at least 1 access mode is required", fld.Child("accessModes"))
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	}
	storage := fld.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storage, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storage, q.String(), "must be greater than zero"))
	}
	errs = append(errs, validateClassName(s.StorageClassName, fld.Child("storageClassName"))...)
	errs = append(errs, validateVolumeMode(s.VolumeMode, fld.Child("volumeMode"))...)
	if s.DataSource != nil {
		errs = append(errs, validateDataSource(s.DataSource.Name, s.DataSource.Kind, s.DataSource.APIGroup, fld.Child("dataSource"))...)
	}
	if r := s.DataSourceRef; r != nil {
		errs = append(errs, validateDataSource(r.Name, r.Kind, r.APIGroup, fld.Child("dataSourceRef"))...)
		if r.Namespace != nil && *r.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*r.Namespace, false) {
				errs = append(errs, field.Invalid(fld.Child("dataSourceRef", "namespace"), *r.Namespace, msg))
			}
			if s.DataSource != nil {
				errs = append(errs, field.Invalid(fld, fld.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
			}
		} else if d := s.DataSource; d != nil && (d.Kind != r.Kind || d.Name != r.Name || deref(d.APIGroup) != deref(r.APIGroup) || (d.APIGroup == nil) != (r.APIGroup == nil)) {
			errs = append(errs, field.Invalid(fld, fld.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	errs = append(errs, validateClassName(s.VolumeAttributesClassName, fld.Child("volumeAttributesClassName"))...)
	return errs
}

// validateDataSource checks what a claim is populated from.
func validateDataSource(name, kind string, group *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	}
	switch g := deref(group); {
	case g == "" && kind != "PersistentVolumeClaim":
		errs = append(errs, field.Invalid(fld, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	case g != "":
		for _, msg := range validation.IsDNS1123Subdomain(g) {
			errs = append(errs, field.Invalid(fld.Child("apiGroup"), g, msg))
		}
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
	// A claim may move its class from the legacy beta annotation to the
	// field, and a claim of no class may be given one (a default class
	// that appeared later).
	oldClass, hadAnnotation := old.Annotations[corev1.BetaStorageClassAnnotation]
	newClass, hasAnnotation := c.Annotations[corev1.BetaStorageClassAnnotation]
	switch {
	case hadAnnotation && oldSpec.StorageClassName == nil && spec.StorageClassName != nil && *spec.StorageClassName == oldClass &&
		(!hasAnnotation || newClass == oldClass):
		spec.StorageClassName = nil
	default:
		if newClass != oldClass {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation), newClass, apivalidation.FieldImmutableErrorMsg))
		}
		if !hadAnnotation && oldSpec.StorageClassName == nil && spec.StorageClassName != nil {
			spec.StorageClassName = nil
		}
	}
	if c.Status.Phase == corev1.ClaimBound && spec.Resources.Requests != nil {
		spec.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	spec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		diff := cmp.Diff(oldSpec, spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+diff))
	}
	newSize, oldSize := c.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		// Shrinking back towards the capacity recovers from a failed
		// expansion; volumes never shrink below it.
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
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to an empty string is forbidden"))
		}
	}
	return errs
}

// PersistentVolumes is core/v1 persistentvolumes: cluster-scoped, a status
// subresource, volumes that start Pending and are retained unless a
// reclaim policy says otherwise, exactly one volume source, which never
// changes.
func PersistentVolumes() Strategy {
	r := &Resource[*corev1.PersistentVolume]{
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
		// Kubernetes still selects volumes on a bare "name", a field of old.
		Fields: func(v *corev1.PersistentVolume) fields.Set { return fields.Set{"name": v.Name} },
		ValidateUpdateFunc: func(v, old *corev1.PersistentVolume) field.ErrorList {
			var errs field.ErrorList
			src, oldSrc := v.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource
			// A CSI volume may be given the secret its expansion needs.
			if src.CSI != nil && oldSrc.CSI != nil && oldSrc.CSI.ControllerExpandSecretRef == nil && src.CSI.ControllerExpandSecretRef != nil {
				csi := *src.CSI
				csi.ControllerExpandSecretRef = nil
				src.CSI = &csi
			}
			if !apiequality.Semantic.DeepEqual(src, oldSrc) {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+cmp.Diff(oldSrc, src)))
			}
			errs = append(errs, validateImmutable(v.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
			if old.Spec.NodeAffinity != nil {
				errs = append(errs, validateImmutable(v.Spec.NodeAffinity, old.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
			}
			if old.Spec.VolumeAttributesClassName != nil && v.Spec.VolumeAttributesClassName == nil {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
			}
			return errs
		},
	}
	return &hooked[*corev1.PersistentVolume]{
		Resource: r,
		// A new volume entered its Pending phase when it was created.
		prepare: func(v *corev1.PersistentVolume) {
			created := v.CreationTimestamp
			v.Status.LastPhaseTransitionTime = &created
		},
	}
}

func validatePV(v *corev1.PersistentVolume) field.ErrorList {
	fld := field.NewPath("spec")
	s := &v.Spec
	errs := validateAccessModes(s.AccessModes, "", fld.Child("accessModes"))
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
	errs = append(errs, validateVolumeSource(v, fld)...)
	if s.HostPath != nil && path.Clean(s.HostPath.Path) == "/" && s.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(fld.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	errs = append(errs, validateClassName(&s.StorageClassName, fld.Child("storageClassName"))...)
	errs = append(errs, validateVolumeMode(s.VolumeMode, fld.Child("volumeMode"))...)
	if c := s.VolumeAttributesClassName; c != nil {
		if *c == "" {
			errs = append(errs, field.Required(fld.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, validateClassName(c, fld.Child("volumeAttributesClassName"))...)
		}
		if s.CSI == nil {
			errs = append(errs, field.Required(fld.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return errs
}

// validateVolumeSource checks that a volume has exactly one source, in
// the order Kubernetes looks for them, and the fields of the common ones.
func validateVolumeSource(v *corev1.PersistentVolume, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &v.Spec.PersistentVolumeSource
	n := 0
	for _, src := range []struct {
		name string
		set  bool
	}{
		{"hostPath", s.HostPath != nil}, {"gcePersistentDisk", s.GCEPersistentDisk != nil}, {"awsElasticBlockStore", s.AWSElasticBlockStore != nil},
		{"glusterfs", s.Glusterfs != nil}, {"flocker", s.Flocker != nil}, {"nfs", s.NFS != nil}, {"rbd", s.RBD != nil},
		{"quobyte", s.Quobyte != nil}, {"cephFS", s.CephFS != nil}, {"iscsi", s.ISCSI != nil}, {"cinder", s.Cinder != nil},
		{"fc", s.FC != nil}, {"flexVolume", s.FlexVolume != nil}, {"azureFile", s.AzureFile != nil}, {"vsphereVolume", s.VsphereVolume != nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil}, {"portworxVolume", s.PortworxVolume != nil}, {"azureDisk", s.AzureDisk != nil},
		{"scaleIO", s.ScaleIO != nil}, {"local", s.Local != nil}, {"storageos", s.StorageOS != nil}, {"csi", s.CSI != nil},
	} {
		if !src.set {
			continue
		}
		// Kubernetes counts a flex volume without refusing it as a second source.
		if n > 0 && src.name != "flexVolume" {
			errs = append(errs, field.Forbidden(fld.Child(src.name), "may not specify more than 1 volume type"))
			continue
		}
		n++
	}
	if n == 0 {
		return append(errs, field.Required(fld, "must specify a volume type"))
	}
	switch {
	case s.HostPath != nil:
		if s.HostPath.Path == "" {
			errs = append(errs, field.Required(fld.Child("hostPath", "path"), ""))
		} else if slices.Contains(strings.Split(filepath.ToSlash(s.HostPath.Path), "/"), "..") {
			errs = append(errs, field.Invalid(fld.Child("hostPath", "path"), s.HostPath.Path, "must not contain '..'"))
		}
	case s.NFS != nil:
		if s.NFS.Server == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "server"), ""))
		}
		if s.NFS.Path == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "path"), ""))
		} else if !path.IsAbs(s.NFS.Path) {
			errs = append(errs, field.Invalid(fld.Child("nfs", "path"), s.NFS.Path, "must be an absolute path"))
		}
	case s.Local != nil:
		if s.Local.Path == "" {
			errs = append(errs, field.Required(fld.Child("local", "path"), ""))
		}
		if v.Spec.NodeAffinity == nil || v.Spec.NodeAffinity.Required == nil {
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

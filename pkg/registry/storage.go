package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits Kubernetes puts on storage objects.
const (
	maxProvisionerParameterSize = 256 << 10
	maxProvisionerParameterLen  = 512
	csiDriverNameMaxLength      = 63
	csiNodeIDMaxLength          = 192
	maxAttachedVolumeMetadata   = 256 << 10
	maxVolumeErrorMessageSize   = 1024
)

// StorageClasses is storage.k8s.io/v1 storageclasses: cluster-scoped, the
// provisioner, parameters, reclaimPolicy and volumeBindingMode fixed once
// created.
func StorageClasses() Strategy {
	return &Resource[*storagev1.StorageClass]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("StorageClass"),
			Resource: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
		},
		NewFunc:     func() *storagev1.StorageClass { return &storagev1.StorageClass{} },
		NewListFunc: func() runtime.Object { return &storagev1.StorageClassList{} },
		Defaults: func(sc *storagev1.StorageClass) {
			if sc.ReclaimPolicy == nil {
				sc.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimDelete)
			}
			if sc.VolumeBindingMode == nil {
				sc.VolumeBindingMode = ptr(storagev1.VolumeBindingImmediate)
			}
		},
		ValidateFunc: func(sc *storagev1.StorageClass) field.ErrorList {
			errs := validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))
			errs = append(errs, validateProvisionerParameters(sc.Parameters, true, field.NewPath("parameters"))...)
			if p := sc.ReclaimPolicy; p != nil && *p != "" {
				policies := []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
				if !slices.Contains(policies, *p) {
					errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, policies))
				}
			}
			modes := []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
			if m := sc.VolumeBindingMode; m == nil {
				errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
			} else if !slices.Contains(modes, *m) {
				errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, modes))
			}
			return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
		},
		ValidateUpdateFunc: func(sc, old *storagev1.StorageClass) field.ErrorList {
			var errs field.ErrorList
			if !mapsEqual(sc.Parameters, old.Parameters) {
				errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
			}
			if sc.Provisioner != old.Provisioner {
				errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
			}
			if deref(sc.ReclaimPolicy) != deref(old.ReclaimPolicy) {
				errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
			}
			return append(errs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
		},
	}
}

// validateProvisioner checks a provisioner or CSI driver name of a class.
func validateProvisioner(p string, fld *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fld, p)}
	}
	return validateQualifiedName(strings.ToLower(p), fld)
}

func validateQualifiedName(v string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(fld, v, msg))
	}
	return errs
}

func validateProvisionerParameters(params map[string]string, allowEmpty bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(params) > maxProvisionerParameterLen {
		errs = append(errs, field.TooLong(fld, "Provisioner Parameters exceeded max allowed", maxProvisionerParameterLen))
		return errs
	}
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(fld, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(fld, "", maxProvisionerParameterSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(fld, "must contain at least one key/value pair"))
	}
	return errs
}

func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Each term as the values of each key, to find the terms that repeat.
	var seen []map[string]sets.Set[string]
	for i, term := range terms {
		at := fld.Index(i)
		byKey := map[string]sets.Set[string]{}
		for j, req := range term.MatchLabelExpressions {
			rp := at.Child("matchLabelExpressions").Index(j)
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), ""))
			}
			values := sets.New[string]()
			for k, v := range req.Values {
				if values.Has(v) {
					errs = append(errs, field.Duplicate(rp.Child("values").Index(k), v))
				}
				values.Insert(v)
			}
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
			if _, dup := byKey[req.Key]; dup {
				errs = append(errs, field.Duplicate(rp.Child("key"), req.Key))
			}
			byKey[req.Key] = values
		}
		for _, s := range seen {
			if apiequality.Semantic.DeepEqual(s, byKey) {
				errs = append(errs, field.Duplicate(at.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, byKey)
	}
	return errs
}

// validateCSIDriverName checks the name of a CSI driver.
func validateCSIDriverName(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fld, ""))
	}
	if len(name) > csiDriverNameMaxLength {
		errs = append(errs, field.TooLong(fld, name, csiDriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

// CSIDrivers is storage.k8s.io/v1 csidrivers: cluster-scoped, named after
// the driver, attachRequired and volumeLifecycleModes fixed once created.
func CSIDrivers() Strategy {
	return &Resource[*storagev1.CSIDriver]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("CSIDriver"),
			Resource: "csidrivers", Singular: "csidriver",
		},
		NewFunc:     func() *storagev1.CSIDriver { return &storagev1.CSIDriver{} },
		NewListFunc: func() runtime.Object { return &storagev1.CSIDriverList{} },
		Defaults: func(d *storagev1.CSIDriver) {
			s := &d.Spec
			if s.AttachRequired == nil {
				s.AttachRequired = ptr(true)
			}
			if s.PodInfoOnMount == nil {
				s.PodInfoOnMount = ptr(false)
			}
			if s.StorageCapacity == nil {
				s.StorageCapacity = ptr(false)
			}
			if s.FSGroupPolicy == nil {
				s.FSGroupPolicy = ptr(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
			}
			if len(s.VolumeLifecycleModes) == 0 {
				s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
			}
			if s.RequiresRepublish == nil {
				s.RequiresRepublish = ptr(false)
			}
			if s.SELinuxMount == nil {
				s.SELinuxMount = ptr(false)
			}
		},
		ValidateFunc: validateCSIDriver,
		ValidateUpdateFunc: func(d, old *storagev1.CSIDriver) field.ErrorList {
			spec := field.NewPath("spec")
			errs := apivalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, spec.Child("attachRequired"))
			return append(errs, apivalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, spec.Child("volumeLifecycleModes"))...)
		},
	}
}

func validateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	errs := validateCSIDriverName(d.Name, field.NewPath("name"))
	spec := field.NewPath("spec")
	s := &d.Spec
	// Kubernetes reports a missing attachRequired under this name.
	if s.AttachRequired == nil {
		errs = append(errs, field.Required(spec.Child("attachedRequired"), ""))
	}
	if s.PodInfoOnMount == nil {
		errs = append(errs, field.Required(spec.Child("podInfoOnMount"), ""))
	}
	if s.StorageCapacity == nil {
		errs = append(errs, field.Required(spec.Child("storageCapacity"), ""))
	}
	policies := []storagev1.FSGroupPolicy{storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	if p := s.FSGroupPolicy; p != nil && !slices.Contains(policies, *p) {
		errs = append(errs, field.NotSupported(spec.Child("fsGroupPolicy"), *p, policies))
	}
	audiences := map[string]bool{}
	for i, tr := range s.TokenRequests {
		at := spec.Child("tokenRequests").Index(i)
		if audiences[tr.Audience] {
			errs = append(errs, field.Duplicate(at.Child("audience"), tr.Audience))
			continue
		}
		audiences[tr.Audience] = true
		if e := tr.ExpirationSeconds; e != nil {
			if *e < 600 {
				errs = append(errs, field.Invalid(at.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			}
			if *e > 1<<32 {
				errs = append(errs, field.Invalid(at.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
	for _, m := range s.VolumeLifecycleModes {
		if !slices.Contains(modes, m) {
			errs = append(errs, field.NotSupported(spec.Child("volumeLifecycleModes"), m, modes))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(spec.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		errs = append(errs, field.Invalid(spec.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	return errs
}

// CSINodes is storage.k8s.io/v1 csinodes: one per node, named after it;
// a driver's entry does not change once registered.
func CSINodes() Strategy {
	return &Resource[*storagev1.CSINode]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("CSINode"),
			Resource: "csinodes", Singular: "csinode",
		},
		NewFunc:     func() *storagev1.CSINode { return &storagev1.CSINode{} },
		NewListFunc: func() runtime.Object { return &storagev1.CSINodeList{} },
		ValidateFunc: func(n *storagev1.CSINode) field.ErrorList {
			var errs field.ErrorList
			names := map[string]bool{}
			for i, d := range n.Spec.Drivers {
				at := field.NewPath("spec", "drivers").Index(i)
				errs = append(errs, validateCSIDriverName(d.Name, at.Child("name"))...)
				if d.NodeID == "" {
					errs = append(errs, field.Required(at.Child("nodeID"), d.NodeID))
				}
				if len(d.NodeID) > csiNodeIDMaxLength {
					errs = append(errs, field.Invalid(at.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
				}
				if a := d.Allocatable; a != nil && a.Count != nil {
					errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*a.Count), at.Child("allocatable", "count"))...)
				}
				if names[d.Name] {
					errs = append(errs, field.Duplicate(at.Child("name"), d.Name))
				}
				keys := map[string]bool{}
				for _, k := range d.TopologyKeys {
					if k == "" {
						errs = append(errs, field.Required(at, k))
					}
					if keys[k] {
						errs = append(errs, field.Duplicate(at, k))
					}
					keys[k] = true
					errs = append(errs, validateQualifiedName(k, at)...)
				}
				names[d.Name] = true
			}
			return errs
		},
		ValidateUpdateFunc: func(n, old *storagev1.CSINode) field.ErrorList {
			var errs field.ErrorList
			for _, o := range old.Spec.Drivers {
				for _, d := range n.Spec.Drivers {
					if o.Name != d.Name {
						continue
					}
					// The allocatable count may change; the rest may not.
					o.Allocatable, d.Allocatable = nil, nil
					if !apiequality.Semantic.DeepEqual(o, d) {
						errs = append(errs, field.Invalid(field.NewPath("CSINodeDriver"), d, "field is immutable"))
					}
				}
			}
			return errs
		},
	}
}

// VolumeAttachments is storage.k8s.io/v1 volumeattachments: cluster-scoped,
// a status subresource, the spec fixed once created.
func VolumeAttachments() Strategy {
	return &Resource[*storagev1.VolumeAttachment]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"),
			Resource: "volumeattachments", Singular: "volumeattachment", Status: true,
		},
		NewFunc:        func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} },
		NewListFunc:    func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		CopyStatus:     func(dst, src *storagev1.VolumeAttachment) { dst.Status = src.Status },
		ResetForStatus: func(v, old *storagev1.VolumeAttachment) { v.Spec = old.Spec },
		ResetStatus:    func(v *storagev1.VolumeAttachment) { v.Status = storagev1.VolumeAttachmentStatus{} },
		ValidateFunc: func(v *storagev1.VolumeAttachment) field.ErrorList {
			spec := field.NewPath("spec")
			var errs field.ErrorList
			if v.Spec.Attacher == "" {
				errs = append(errs, field.Required(spec.Child("attacher"), ""))
			}
			src := spec.Child("source")
			const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
			switch s := v.Spec.Source; {
			case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
				errs = append(errs, field.Required(src, exactlyOne))
			case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
				errs = append(errs, field.Forbidden(src, exactlyOne))
			case s.PersistentVolumeName != nil && *s.PersistentVolumeName == "":
				errs = append(errs, field.Required(src.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
			}
			for _, msg := range apivalidation.NameIsDNSSubdomain(v.Spec.NodeName, false) {
				errs = append(errs, field.Invalid(spec.Child("nodeName"), v.Spec.NodeName, msg))
			}
			errs = append(errs, validateVolumeAttachmentStatus(&v.Status)...)
			// What storage.k8s.io/v1 adds: a CSI driver name and a valid PV name.
			errs = append(errs, validateCSIDriverName(v.Spec.Attacher, spec.Child("attacher"))...)
			if n := v.Spec.Source.PersistentVolumeName; n != nil && *n != "" {
				for _, msg := range apivalidation.NameIsDNSSubdomain(*n, false) {
					errs = append(errs, field.Invalid(src.Child("persistentVolumeName"), *n, msg))
				}
			}
			return errs
		},
		ValidateUpdateFunc: func(v, old *storagev1.VolumeAttachment) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(v.Spec, old.Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), v.Spec, "field is immutable")}
			}
			return nil
		},
	}
}

func validateVolumeAttachmentStatus(st *storagev1.VolumeAttachmentStatus) field.ErrorList {
	status := field.NewPath("status")
	var errs field.ErrorList
	size := 0
	for k, v := range st.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadata {
		errs = append(errs, field.TooLong(status.Child("attachmentMetadata"), "", maxAttachedVolumeMetadata))
	}
	for name, e := range map[string]*storagev1.VolumeError{"attachError": st.AttachError, "detachError": st.DetachError} {
		if e != nil && len(e.Message) > maxVolumeErrorMessageSize {
			errs = append(errs, field.TooLong(status.Child(name, "message"), e.Message, maxVolumeErrorMessageSize))
		}
	}
	return errs
}

// CSIStorageCapacities is storage.k8s.io/v1 csistoragecapacities:
// namespaced, nodeTopology and storageClassName fixed once created.
func CSIStorageCapacities() Strategy {
	return &Resource[*storagev1.CSIStorageCapacity]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("CSIStorageCapacity"),
			Resource: "csistoragecapacities", Singular: "csistoragecapacity", Namespaced: true,
		},
		NewFunc:     func() *storagev1.CSIStorageCapacity { return &storagev1.CSIStorageCapacity{} },
		NewListFunc: func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
		ValidateFunc: func(c *storagev1.CSIStorageCapacity) field.ErrorList {
			errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
			for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
				errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
			}
			errs = append(errs, validateNonNegativeQuantity(c.Capacity, field.NewPath("capacity"))...)
			return append(errs, validateNonNegativeQuantity(c.MaximumVolumeSize, field.NewPath("maximumVolumeSize"))...)
		},
		ValidateUpdateFunc: func(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
			errs := apivalidation.ValidateImmutableField(c.NodeTopology, old.NodeTopology, field.NewPath("nodeTopology"))
			return append(errs, apivalidation.ValidateImmutableField(c.StorageClassName, old.StorageClassName, field.NewPath("storageClassName"))...)
		},
	}
}

func validateNonNegativeQuantity(q *resource.Quantity, fld *field.Path) field.ErrorList {
	if q != nil && q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fld, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// VolumeAttributesClasses is storage.k8s.io/v1 volumeattributesclasses:
// cluster-scoped, driverName and parameters fixed once created.
func VolumeAttributesClasses() Strategy {
	return &Resource[*storagev1.VolumeAttributesClass]{
		Meta: Info{
			GVK:      storagev1.SchemeGroupVersion.WithKind("VolumeAttributesClass"),
			Resource: "volumeattributesclasses", Singular: "volumeattributesclass", ShortNames: []string{"vac"},
		},
		NewFunc:     func() *storagev1.VolumeAttributesClass { return &storagev1.VolumeAttributesClass{} },
		NewListFunc: func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
		ValidateFunc: func(c *storagev1.VolumeAttributesClass) field.ErrorList {
			errs := validateProvisioner(c.DriverName, field.NewPath("driverName"))
			return append(errs, validateProvisionerParameters(c.Parameters, false, field.NewPath("parameters"))...)
		},
		ValidateUpdateFunc: func(c, old *storagev1.VolumeAttributesClass) field.ErrorList {
			var errs field.ErrorList
			if c.DriverName != old.DriverName {
				errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
			}
			if !mapsEqual(c.Parameters, old.Parameters) {
				errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
			}
			return errs
		},
	}
}

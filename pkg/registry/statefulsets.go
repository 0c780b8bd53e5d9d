package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StatefulSets is apps/v1 statefulsets: status and scale subresources,
// names that are DNS labels (they prefix the pods' hostnames); of the spec
// only replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
// persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
func StatefulSets() Strategy {
	return &Resource[*appsv1.StatefulSet]{
		Meta: Info{
			GVK:      appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
			Resource: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Categories: []string{"all"},
			Namespaced: true, Status: true, Scale: true,
		},
		NameFunc:       apivalidation.NameIsDNSLabel,
		NewFunc:        func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
		NewListFunc:    func() runtime.Object { return &appsv1.StatefulSetList{} },
		Spec:           func(s *appsv1.StatefulSet) any { return s.Spec },
		CopyStatus:     func(dst, src *appsv1.StatefulSet) { dst.Status = src.Status },
		ResetForStatus: func(s, old *appsv1.StatefulSet) { s.Spec = old.Spec },
		ResetStatus:    func(s *appsv1.StatefulSet) { s.Status = appsv1.StatefulSetStatus{} },
		Defaults:       defaultStatefulSet,
		ValidateFunc:   validateStatefulSet,
		ValidateUpdateFunc: func(s, old *appsv1.StatefulSet) field.ErrorList {
			clone := s.Spec.DeepCopy()
			clone.Replicas = old.Spec.Replicas
			clone.Ordinals = old.Spec.Ordinals
			clone.Template = old.Spec.Template
			clone.UpdateStrategy = old.Spec.UpdateStrategy
			clone.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
			clone.MinReadySeconds = old.Spec.MinReadySeconds
			clone.RevisionHistoryLimit = old.Spec.RevisionHistoryLimit
			var errs field.ErrorList
			if !apiequality.Semantic.DeepEqual(*clone, old.Spec) {
				errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
			}
			return append(errs, validateStatefulSetStatus(&s.Status, &old.Status)...)
		},
		Replicas: func(s *appsv1.StatefulSet) (int32, int32, string) {
			return deref(s.Spec.Replicas), s.Status.Replicas, selectorString(s.Spec.Selector)
		},
		SetReplicasFunc: func(s *appsv1.StatefulSet, n int32) { s.Spec.Replicas = &n },
	}
}

func defaultStatefulSet(s *appsv1.StatefulSet) {
	spec := &s.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		if ru.Partition == nil {
			ru.Partition = ptr[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr[int32](10)
	}
	defaultPodSpec(&spec.Template.Spec)
	// Claim templates read back as Kubernetes writes them: typed as claims
	// (kept for clients of before 1.17), defaulted, Pending.
	for i := range spec.VolumeClaimTemplates {
		c := &spec.VolumeClaimTemplates[i]
		c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
		defaultPVCSpec(&c.Spec)
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimPending
		}
	}
}

func validateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	spec := &s.Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	switch p := spec.PodManagementPolicy; p {
	case "":
		errs = append(errs, field.Required(fld.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(fld.Child("podManagementPolicy"), p, "must be 'OrderedReady' or 'Parallel'"))
	}
	us := fld.Child("updateStrategy")
	switch t := spec.UpdateStrategy.Type; t {
	case "":
		errs = append(errs, field.Required(us, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(us.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			if ru.Partition != nil {
				errs = append(errs, validateNonNegative(int64(*ru.Partition), us.Child("rollingUpdate", "partition"))...)
			}
			if ru.MaxUnavailable != nil {
				p := us.Child("rollingUpdate", "maxUnavailable")
				errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, p)...)
				if intOrPercentValue(ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(p, ru.MaxUnavailable, "cannot be 0"))
				} else {
					errs = append(errs, validateAtMost100Percent(ru.MaxUnavailable, p)...)
				}
			}
		}
	default:
		errs = append(errs, field.Invalid(us, spec.UpdateStrategy, "must be 'RollingUpdate' or 'OnDelete'"))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pf := fld.Child("persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", p.WhenDeleted}, {"whenScaled", p.WhenScaled}} {
			if f.v != appsv1.RetainPersistentVolumeClaimRetentionPolicyType && f.v != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				errs = append(errs, field.NotSupported(pf.Child(f.name), f.v, []string{string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)}))
			}
		}
	}
	if spec.Replicas != nil {
		errs = append(errs, validateNonNegative(int64(*spec.Replicas), fld.Child("replicas"))...)
	}
	errs = append(errs, validateNonNegative(int64(spec.MinReadySeconds), fld.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, validateNonNegative(int64(spec.Ordinals.Start), fld.Child("ordinals", "start"))...)
	}
	if spec.ServiceName != "" {
		for _, msg := range apivalidation.NameIsDNSLabel(spec.ServiceName, false) {
			errs = append(errs, field.Invalid(fld.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	errs = append(errs, validateControllerSelector(spec.Selector, &spec.Template, "statefulset", fld)...)
	errs = append(errs, validateTemplate(&spec.Template, fld.Child("template"))...)
	errs = append(errs, validateAlwaysRestart(&spec.Template.Spec, "StatefulSet", fld.Child("template", "spec"))...)
	for i := range spec.VolumeClaimTemplates {
		errs = append(errs, validateClaimTemplate(&spec.VolumeClaimTemplates[i], fld.Child("volumeClaimTemplates").Index(i))...)
	}
	return errs
}

// validateClaimTemplate checks one of a stateful set's volume claim
// templates: a name, and a claim's spec.
func validateClaimTemplate(c *corev1.PersistentVolumeClaim, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fld.Child("metadata", "name"), "name or generateName is required"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(c.Name, false) {
			errs = append(errs, field.Invalid(fld.Child("metadata", "name"), c.Name, msg))
		}
	}
	errs = append(errs, validatePVCSpec(&c.Spec, fld.Child("spec"))...)
	return errs
}

// validateStatefulSetStatus checks a status write: counts not negative
// and within the replicas, the collision count never lowered.
func validateStatefulSetStatus(st, old *appsv1.StatefulSetStatus) field.ErrorList {
	fld := field.NewPath("status")
	errs := validateCounters(fld,
		counter{"replicas", int64(st.Replicas)}, counter{"readyReplicas", int64(st.ReadyReplicas)},
		counter{"currentReplicas", int64(st.CurrentReplicas)}, counter{"updatedReplicas", int64(st.UpdatedReplicas)},
		counter{"availableReplicas", int64(st.AvailableReplicas)}, counter{"observedGeneration", st.ObservedGeneration})
	if st.CollisionCount != nil {
		errs = append(errs, validateNonNegative(int64(*st.CollisionCount), fld.Child("collisionCount"))...)
	}
	for _, c := range []counter{{"readyReplicas", int64(st.ReadyReplicas)}, {"currentReplicas", int64(st.CurrentReplicas)},
		{"updatedReplicas", int64(st.UpdatedReplicas)}, {"availableReplicas", int64(st.AvailableReplicas)}} {
		if c.value > int64(st.Replicas) {
			errs = append(errs, field.Invalid(fld.Child(c.name), c.value, "cannot be greater than status.replicas"))
		}
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return append(errs, validateCollisionCount(st.CollisionCount, old.CollisionCount, fld)...)
}

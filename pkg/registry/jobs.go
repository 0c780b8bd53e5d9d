package registry

import (
	"fmt"
	"maps"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The labels by which a job finds its pods when it does not select them
// itself: the prefixed ones and the legacy ones Kubernetes still sets.
const (
	jobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	jobNameLabel                = "batch.kubernetes.io/job-name"
	legacyJobControllerUIDLabel = "controller-uid"
	legacyJobNameLabel          = "job-name"
)

// Jobs is batch/v1 jobs: a status subresource; unless spec.manualSelector
// is true the server generates the selector and the template's labels
// from the job's uid and name; the template is immutable (but for its
// scheduling directives while a job that never started is suspended).
func Jobs() Strategy {
	r := &Resource[*batchv1.Job]{
		Meta: Info{
			GVK:      batchv1.SchemeGroupVersion.WithKind("Job"),
			Resource: "jobs", Singular: "job", Categories: []string{"all"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *batchv1.Job { return &batchv1.Job{} },
		NewListFunc:    func() runtime.Object { return &batchv1.JobList{} },
		Spec:           func(j *batchv1.Job) any { return j.Spec },
		CopyStatus:     func(dst, src *batchv1.Job) { dst.Status = src.Status },
		ResetForStatus: func(j, old *batchv1.Job) { j.Spec = old.Spec },
		ResetStatus:    func(j *batchv1.Job) { j.Status = batchv1.JobStatus{} },
		Defaults: func(j *batchv1.Job) {
			defaultJobSpec(&j.Spec)
			if j.Spec.Template.Labels != nil && len(j.Labels) == 0 {
				j.Labels = j.Spec.Template.Labels
			}
		},
		// An update checks the whole job as a create does, then what
		// changed, then the status.
		ValidateUpdateFunc: func(j, old *batchv1.Job) field.ErrorList {
			// A job stored before the prefixed labels existed keeps the
			// legacy ones only.
			_, name := old.Spec.Template.Labels[jobNameLabel]
			_, uid := old.Spec.Template.Labels[jobControllerUIDLabel]
			errs := append(validateJob(j, name && uid), validateJobUpdate(j, old)...)
			return append(errs, validateJobStatus(&j.Status)...)
		},
		Fields: func(j *batchv1.Job) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}
		},
	}
	return &hooked[*batchv1.Job]{
		Resource: r,
		prepare: func(j *batchv1.Job) {
			if !deref(j.Spec.ManualSelector) {
				generateJobSelector(j)
			}
			// A job without labels of its own shows its template's, as a
			// job read back from Kubernetes does (defaulting runs there on
			// every read, after the labels were generated).
			if len(j.Labels) == 0 && len(j.Spec.Template.Labels) > 0 {
				j.Labels = maps.Clone(j.Spec.Template.Labels)
			}
		},
		validate: func(j *batchv1.Job) field.ErrorList { return validateJob(j, true) },
	}
}

// defaultJobSpec fills in a job's spec as Kubernetes defaults it.
func defaultJobSpec(s *batchv1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr[int32](1)
		s.Parallelism = ptr[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr[int32](6)
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.PodFailurePolicy != nil {
		for _, rule := range s.PodFailurePolicy.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr(false)
	}
	defaultPodSpec(&s.Template.Spec)
}

// generateJobSelector labels the template with the job's uid and name and
// selects on the uid, leaving alone the labels the client set itself (a
// wrong one fails validation).
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		legacyJobControllerUIDLabel: string(j.UID),
		jobControllerUIDLabel:       string(j.UID),
		legacyJobNameLabel:          j.Name,
		jobNameLabel:                j.Name,
	} {
		if _, ok := j.Spec.Template.Labels[k]; !ok {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[jobControllerUIDLabel]; !ok {
		j.Spec.Selector.MatchLabels[jobControllerUIDLabel] = string(j.UID)
	}
}

// validateJob checks a job but for its metadata: the generated selector
// and labels (the prefixed ones too when prefixed is true), the spec, and
// the hostnames of an indexed job's pods.
func validateJob(j *batchv1.Job, prefixed bool) field.ErrorList {
	var errs field.ErrorList
	if !deref(j.Spec.ManualSelector) && j.Spec.Selector != nil {
		if j.UID == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
		}
		tplMeta := field.NewPath("spec", "template", "metadata")
		expected := map[string]string{}
		keys := []string{legacyJobControllerUIDLabel, legacyJobNameLabel}
		if prefixed {
			keys = append(keys, jobControllerUIDLabel, jobNameLabel)
		}
		for _, k := range keys {
			want := string(j.UID)
			if k == legacyJobNameLabel || k == jobNameLabel {
				want = j.Name
			}
			expected[k] = want
			switch got, ok := j.Spec.Template.Labels[k]; {
			case !ok:
				errs = append(errs, field.Required(tplMeta.Child("labels").Key(k), want))
			case got != want:
				errs = append(errs, field.Invalid(tplMeta.Child("labels").Key(k), j.Spec.Template.Labels, want))
			}
		}
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
		}
	}
	errs = append(errs, validateJobSpec(&j.Spec, field.NewPath("spec"))...)
	if deref(j.Spec.CompletionMode) == batchv1.IndexedCompletion && deref(j.Spec.Completions) > 0 {
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

// validateJobSpec checks a job's spec, selector included.
func validateJobSpec(s *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	errs := validateJobTemplateFields(s, fld)
	if s.Selector == nil {
		errs = append(errs, field.Required(fld.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
		if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
			errs = append(errs, field.Invalid(fld.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	return errs
}

// Limits of indexed jobs, as in Kubernetes.
const (
	maxIndexedJobParallelism = 100000
	maxIndexedJobFailed      = 100000
	maxJobManagedByLength    = 63
)

// validateJobTemplateFields checks a job spec but for its selector: the
// part a cron job's job template shares with a job.
func validateJobTemplateFields(s *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNeg := func(p *int32, name string) {
		if p != nil {
			errs = append(errs, validateNonNegative(int64(*p), fld.Child(name))...)
		}
	}
	nonNeg(s.Parallelism, "parallelism")
	nonNeg(s.Completions, "completions")
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*s.ActiveDeadlineSeconds, fld.Child("activeDeadlineSeconds"))...)
	}
	nonNeg(s.BackoffLimit, "backoffLimit")
	nonNeg(s.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonNeg(s.BackoffLimitPerIndex, "backoffLimitPerIndex")
	nonNeg(s.MaxFailedIndexes, "maxFailedIndexes")
	if s.MaxFailedIndexes != nil && s.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(fld.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if s.ManagedBy != nil {
		errs = append(errs, validation.IsDomainPrefixedPath(fld.Child("managedBy"), *s.ManagedBy)...)
		if len(*s.ManagedBy) > maxJobManagedByLength {
			errs = append(errs, field.TooLong(fld.Child("managedBy"), *s.ManagedBy, maxJobManagedByLength))
		}
	}
	indexed := deref(s.CompletionMode) == batchv1.IndexedCompletion
	if m := s.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(fld.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed {
		if s.Completions == nil {
			errs = append(errs, field.Required(fld.Child("completions"), "when completion mode is Indexed"))
		}
		if s.Parallelism != nil && *s.Parallelism > maxIndexedJobParallelism {
			errs = append(errs, field.Invalid(fld.Child("parallelism"), *s.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxIndexedJobParallelism)))
		}
		if s.Completions != nil && s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > *s.Completions {
			errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to completions"))
		}
		if s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > maxIndexedJobFailed {
			errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *s.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxIndexedJobFailed)))
		}
	} else {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fld.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(s, fld.Child("podFailurePolicy"))...)
	}
	if s.SuccessPolicy != nil && !indexed {
		errs = append(errs, field.Invalid(fld.Child("successPolicy"), *s.SuccessPolicy, "requires indexed completion mode"))
	}
	if p := s.PodReplacementPolicy; p != nil {
		switch {
		case s.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(fld.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		case *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(fld.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}
	errs = append(errs, validateTemplate(&s.Template, fld.Child("template"))...)
	restart := fld.Child("template", "spec", "restartPolicy")
	switch rp := s.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(restart, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(restart, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(restart, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateJobUpdate checks what may change in a job's spec.
func validateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	spec, oldSpec := &j.Spec, &old.Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	// An indexed job scales by changing completions and parallelism together.
	switch {
	case deref(spec.CompletionMode) != batchv1.IndexedCompletion:
		errs = append(errs, validateImmutable(spec.Completions, oldSpec.Completions, fld.Child("completions"))...)
	case spec.Completions != nil && deref(oldSpec.Completions) != *spec.Completions && *spec.Completions != deref(spec.Parallelism):
		errs = append(errs, field.Invalid(fld.Child("completions"), spec.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, validateImmutable(spec.Selector, oldSpec.Selector, fld.Child("selector"))...)
	errs = append(errs, validateJobTemplateUpdate(j, old)...)
	errs = append(errs, validateImmutable(spec.CompletionMode, oldSpec.CompletionMode, fld.Child("completionMode"))...)
	errs = append(errs, validateImmutable(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, fld.Child("podFailurePolicy"))...)
	errs = append(errs, validateImmutable(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, fld.Child("backoffLimitPerIndex"))...)
	errs = append(errs, validateImmutable(spec.ManagedBy, oldSpec.ManagedBy, fld.Child("managedBy"))...)
	errs = append(errs, validateImmutable(spec.SuccessPolicy, oldSpec.SuccessPolicy, fld.Child("successPolicy"))...)
	return errs
}

// validateJobTemplateUpdate keeps a job's template as it was, except that a
// suspended job that never started may change where its pods go: node
// affinity, node selector, tolerations, scheduling gates, and the
// template's labels and annotations.
func validateJobTemplateUpdate(j, old *batchv1.Job) field.ErrorList {
	tpl, oldTpl := &j.Spec.Template, &old.Spec.Template
	if deref(old.Spec.Suspend) && old.Status.StartTime == nil {
		oldTpl = oldTpl.DeepCopy()
		switch {
		case tpl.Spec.Affinity == nil && oldTpl.Spec.Affinity != nil:
			oldTpl.Spec.Affinity.NodeAffinity = nil
			if *oldTpl.Spec.Affinity == (corev1.Affinity{}) {
				oldTpl.Spec.Affinity = nil
			}
		case tpl.Spec.Affinity != nil && oldTpl.Spec.Affinity == nil:
			oldTpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: tpl.Spec.Affinity.NodeAffinity}
		case tpl.Spec.Affinity != nil && oldTpl.Spec.Affinity != nil:
			oldTpl.Spec.Affinity.NodeAffinity = tpl.Spec.Affinity.NodeAffinity
		}
		oldTpl.Spec.NodeSelector = tpl.Spec.NodeSelector
		oldTpl.Spec.Tolerations = tpl.Spec.Tolerations
		oldTpl.Spec.SchedulingGates = tpl.Spec.SchedulingGates
		oldTpl.Labels = tpl.Labels
		oldTpl.Annotations = tpl.Annotations
	}
	return validateImmutable(tpl, oldTpl, field.NewPath("spec", "template"))
}

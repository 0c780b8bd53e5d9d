package registry

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CronJobs is batch/v1 cronjobs: a status subresource, a schedule in
// standard cron syntax (or a descriptor such as @hourly) read in an IANA
// time zone named by spec.timeZone, and a job template validated as a
// job's spec whose selector the server generates.
func CronJobs() Strategy {
	r := &Resource[*batchv1.CronJob]{
		Meta: Info{
			GVK:      batchv1.SchemeGroupVersion.WithKind("CronJob"),
			Resource: "cronjobs", Singular: "cronjob", ShortNames: []string{"cj"}, Categories: []string{"all"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *batchv1.CronJob { return &batchv1.CronJob{} },
		NewListFunc:    func() runtime.Object { return &batchv1.CronJobList{} },
		Spec:           func(c *batchv1.CronJob) any { return c.Spec },
		CopyStatus:     func(dst, src *batchv1.CronJob) { dst.Status = src.Status },
		ResetForStatus: func(c, old *batchv1.CronJob) { c.Spec = old.Spec },
		ResetStatus:    func(c *batchv1.CronJob) { c.Status = batchv1.CronJobStatus{} },
		Defaults: func(c *batchv1.CronJob) {
			s := &c.Spec
			if s.ConcurrencyPolicy == "" {
				s.ConcurrencyPolicy = batchv1.AllowConcurrent
			}
			if s.Suspend == nil {
				s.Suspend = ptr(false)
			}
			if s.SuccessfulJobsHistoryLimit == nil {
				s.SuccessfulJobsHistoryLimit = ptr[int32](3)
			}
			if s.FailedJobsHistoryLimit == nil {
				s.FailedJobsHistoryLimit = ptr[int32](1)
			}
			defaultPodSpec(&s.JobTemplate.Spec.Template.Spec)
		},
		ValidateUpdateFunc: func(c, old *batchv1.CronJob) field.ErrorList {
			return validateCronJobSpec(&c.Spec, &old.Spec, field.NewPath("spec"))
		},
	}
	return &hooked[*batchv1.CronJob]{
		Resource: r,
		validate: func(c *batchv1.CronJob) field.ErrorList {
			errs := validateCronJobSpec(&c.Spec, nil, field.NewPath("spec"))
			if len(c.Name) > maxCronJobNameLength {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
			}
			return errs
		},
	}
}

// maxCronJobNameLength leaves room in a 63-character job name for the
// 11-character suffix the cron job controller appends.
const maxCronJobNameLength = validation.DNS1035LabelMaxLength - 11

// validateCronJobSpec checks a cron job's spec; old is the stored spec of
// an update, nil on create: a schedule that already named its time zone
// inline ("TZ=..." or "CRON_TZ=...") may keep it.
func validateCronJobSpec(s, old *batchv1.CronJobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Schedule == "" {
		errs = append(errs, field.Required(fld.Child("schedule"), ""))
	} else {
		inlineTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(s.Schedule, inlineTZ, s.TimeZone, fld.Child("schedule"))...)
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*s.StartingDeadlineSeconds, fld.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || deref(old.TimeZone) != deref(s.TimeZone) || (old.TimeZone == nil) != (s.TimeZone == nil) {
		errs = append(errs, validateTimeZone(s.TimeZone, fld.Child("timeZone"))...)
	}
	switch p := s.ConcurrencyPolicy; p {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(fld.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(fld.Child("concurrencyPolicy"), p, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	tpl := fld.Child("jobTemplate")
	errs = append(errs, validateJobTemplateFields(&s.JobTemplate.Spec, tpl.Child("spec"))...)
	if s.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(tpl.Child("spec", "selector"), s.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if deref(s.JobTemplate.Spec.ManualSelector) {
		errs = append(errs, field.NotSupported(tpl.Child("spec", "manualSelector"), s.JobTemplate.Spec.ManualSelector, []string{"nil", "false"}))
	}
	if s.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, validateNonNegative(int64(*s.SuccessfulJobsHistoryLimit), fld.Child("successfulJobsHistoryLimit"))...)
	}
	if s.FailedJobsHistoryLimit != nil {
		errs = append(errs, validateNonNegative(int64(*s.FailedJobsHistoryLimit), fld.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateSchedule parses a schedule as the cron job controller will.
func validateSchedule(schedule string, inlineTZ bool, timeZone *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fld, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case inlineTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(fld, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !inlineTZ && hasTZ:
		errs = append(errs, field.Invalid(fld, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// timeZonePart is one component of an IANA time zone name, with the
// digits and '+' that legacy names use.
var timeZonePart = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)

// validateTimeZone checks that a time zone names a zone of the time zone
// database, and not the server's local one.
func validateTimeZone(tz *string, fld *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fld, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(fld, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(fld, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(fld, tz, err.Error()))
	}
	return errs
}

package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cronJob(name, schedule string) *batchv1.CronJob {
	spec := podSpec()
	spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:    schedule,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}},
		},
	}
}

func TestCronJobDefaults(t *testing.T) {
	c := cronJob("nightly", "@hourly")
	if errs := createObj(t, CronJobs(), c); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := c.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults %+v", s)
	}
	if s.JobTemplate.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod template not defaulted: %+v", s.JobTemplate.Spec.Template.Spec)
	}
	if s.JobTemplate.Spec.Selector != nil || s.JobTemplate.Spec.Template.Labels != nil {
		t.Errorf("job template got a selector or labels: %+v", s.JobTemplate.Spec)
	}
}

func TestCronJobValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *batchv1.CronJob)
		want   []string
	}{
		{"five fields", func(c *batchv1.CronJob) { c.Spec.Schedule = "*/5 * * * *" }, nil},
		{"descriptor", func(c *batchv1.CronJob) { c.Spec.Schedule = "@daily" }, nil},
		{"time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr("Europe/Paris") }, nil},
		{"no schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "" }, []string{"spec.schedule: Required value"}},
		{"minute out of range", func(c *batchv1.CronJob) { c.Spec.Schedule = "61 * * * *" },
			[]string{`spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`}},
		{"six fields", func(c *batchv1.CronJob) { c.Spec.Schedule = "0 * * * * *" },
			[]string{`spec.schedule: Invalid value: "0 * * * * *": expected exactly 5 fields, found 6: [0 * * * * *]`}},
		{"inline time zone", func(c *batchv1.CronJob) { c.Spec.Schedule = "CRON_TZ=UTC * * * * *" },
			[]string{`spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
		{"unknown time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr("Europe/Pariss") },
			[]string{`spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss`}},
		{"local time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr("Local") },
			[]string{`spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`}},
		{"empty time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr("") },
			[]string{`spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string`}},
		{"concurrency policy", func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" },
			[]string{`spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`}},
		{"job template restart policy", func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
			[]string{`spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"job template selector", func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, []string{"spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated"}},
		{"negative history", func(c *batchv1.CronJob) { c.Spec.FailedJobsHistoryLimit = ptr[int32](-1) },
			[]string{"spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0"}},
		{"name too long", func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) },
			[]string{`metadata.name: Invalid value: "` + strings.Repeat("a", 53) + `": must be no more than 52 characters`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cronJob("c", "0 3 * * *")
			tt.change(c)
			got := errStrings(createObj(t, CronJobs(), c))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCronJobUpdateKeepsInlineTimeZone(t *testing.T) {
	old := cronJob("c", "TZ=UTC 0 3 * * *")
	CronJobs().Default(old)
	old.ResourceVersion = "3"
	// A cron job stored with an inline zone may still be updated...
	c := old.DeepCopy()
	c.Spec.Suspend = ptr(true)
	if errs := updateObj(t, CronJobs(), c, old); len(errs) > 0 {
		t.Errorf("update refused: %v", errs)
	}
	// ...but not given a timeZone as well.
	c = old.DeepCopy()
	c.Spec.TimeZone = ptr("UTC")
	want := []string{`spec.schedule: Invalid value: "TZ=UTC 0 3 * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`}
	if diff := cmp.Diff(want, errStrings(updateObj(t, CronJobs(), c, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

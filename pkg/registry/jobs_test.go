package registry

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func job(name string) *batchv1.Job {
	spec := podSpec()
	spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}},
	}
}

func TestJobDefaultsAndGeneratedSelector(t *testing.T) {
	j := job("pi")
	j.Spec.Template.Labels = map[string]string{"app": "pi"}
	if errs := createObj(t, Jobs(), j); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := j.Spec
	if *s.Parallelism != 1 || *s.Completions != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.ManualSelector || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("defaults %+v", s)
	}
	wantLabels := map[string]string{
		"app": "pi", "batch.kubernetes.io/controller-uid": "uid-1", "controller-uid": "uid-1",
		"batch.kubernetes.io/job-name": "pi", "job-name": "pi",
	}
	if diff := cmp.Diff(wantLabels, s.Template.Labels); diff != "" {
		t.Errorf("template labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"batch.kubernetes.io/controller-uid": "uid-1"}, s.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	// The job's own labels default to the template's, which they share as
	// in Kubernetes: they get the generated labels too.
	if diff := cmp.Diff(wantLabels, j.Labels); diff != "" {
		t.Errorf("job labels (-want +got):\n%s", diff)
	}
	_, fs, _ := Jobs().GetAttrs(j)
	if !fields.SelectorFromSet(fields.Set{"status.successful": "0"}).Matches(fs) {
		t.Errorf("fields %v", fs)
	}
}

func TestJobDefaultsVariants(t *testing.T) {
	j := job("j")
	j.Spec.Parallelism = ptr[int32](3)
	j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	j.Spec.Completions = ptr[int32](5)
	j.Spec.BackoffLimitPerIndex = ptr[int32](1)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
	}}}
	Jobs().Default(j)
	if *j.Spec.BackoffLimit != math.MaxInt32 || *j.Spec.PodReplacementPolicy != batchv1.Failed || *j.Spec.Completions != 5 ||
		j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Errorf("defaults %+v", j.Spec)
	}
	only := job("p")
	only.Spec.Parallelism = ptr[int32](4)
	Jobs().Default(only)
	if only.Spec.Completions != nil {
		t.Errorf("completions defaulted to %d with parallelism set", *only.Spec.Completions)
	}
}

func TestJobManualSelector(t *testing.T) {
	j := job("m")
	j.Spec.ManualSelector = ptr(true)
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}
	j.Spec.Template.Labels = map[string]string{"app": "m"}
	if errs := createObj(t, Jobs(), j); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(j.Spec.Template.Labels) != 1 || len(j.Spec.Selector.MatchLabels) != 1 {
		t.Errorf("labels generated with a manual selector: %v %v", j.Spec.Template.Labels, j.Spec.Selector)
	}
}

func TestJobValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(j *batchv1.Job)
		want   []string
	}{
		{"restart policy left to default", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"restart policy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"pod failure policy needs Never", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
		}, []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
		{"negative counts", func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr[int32](-1)
			j.Spec.Completions = ptr[int32](-2)
			j.Spec.BackoffLimit = ptr[int32](-3)
			j.Spec.ActiveDeadlineSeconds = ptr[int64](-4)
			j.Spec.TTLSecondsAfterFinished = ptr[int32](-5)
		}, []string{
			"spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
			"spec.completions: Invalid value: -2: must be greater than or equal to 0",
			"spec.activeDeadlineSeconds: Invalid value: -4: must be greater than or equal to 0",
			"spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
			"spec.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0",
		}},
		{"backoffLimitPerIndex needs Indexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr[int32](1) },
			[]string{"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"}},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr[int32](2)
		}, []string{"spec.completions: Required value: when completion mode is Indexed"}},
		{"wrong generated label", func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"job-name": "other"} },
			[]string{`spec.template.metadata.labels[job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"uid-1","batch.kubernetes.io/job-name":"j","controller-uid":"uid-1","job-name":"other"}: j`}},
		{"selector not matching the template", func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
		}, []string{
			"spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\",\"batch.kubernetes.io/controller-uid\":\"uid-1\"}}: `selector` not auto-generated",
			"spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"uid-1\",\"batch.kubernetes.io/job-name\":\"j\",\"controller-uid\":\"uid-1\",\"job-name\":\"j\"}: `selector` does not match template `labels`",
		}},
		{"bad pod replacement policy", func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr(batchv1.PodReplacementPolicy("Sometimes")) },
			[]string{`spec.podReplacementPolicy: Unsupported value: "Sometimes": supported values: "Failed", "TerminatingOrFailed"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job("j")
			tt.change(j)
			got := errStrings(createObj(t, Jobs(), j))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobUpdate(t *testing.T) {
	stored := func(suspend bool) *batchv1.Job {
		j := job("j")
		j.Spec.Suspend = ptr(suspend)
		if errs := createObj(t, Jobs(), j); len(errs) > 0 {
			t.Fatal(errs)
		}
		j.ResourceVersion = "5"
		return j
	}
	tests := []struct {
		name    string
		suspend bool
		change  func(j *batchv1.Job)
		want    []string
	}{
		{"parallelism may change", false, func(j *batchv1.Job) { j.Spec.Parallelism = ptr[int32](5) }, nil},
		{"completions of a non-indexed job may not", false, func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](5) },
			[]string{"spec.completions: Invalid value: 5: field is immutable"}},
		{"template image may not", false, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" }, []string{"spec.template: Invalid value: "}},
		{"node selector of a running job may not", false, func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} },
			[]string{"spec.template: Invalid value: "}},
		{"node selector of a suspended job may", true, func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"image of a suspended job may not", true, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" },
			[]string{"spec.template: Invalid value: "}},
		{"selector may not", false, func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["x"] = "y" }, []string{
			"spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"uid-1\",\"x\":\"y\"}}: `selector` not auto-generated",
			"spec.template.metadata.labels: Invalid value: {", "spec.selector: Invalid value: ",
		}},
		{"completion mode may not", false, func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
		}, []string{"spec.completionMode: Invalid value: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(tt.suspend)
			j := old.DeepCopy()
			tt.change(j)
			got := errStrings(updateObj(t, Jobs(), j, old))
			if len(got) != len(tt.want) {
				t.Fatalf("errors %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) || (strings.HasSuffix(tt.want[i], "Invalid value: ") && !strings.HasSuffix(got[i], "field is immutable")) {
					t.Errorf("error %q, want %q...field is immutable", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestJobUpdateOfLegacyLabelledJob(t *testing.T) {
	old := job("j")
	createObj(t, Jobs(), old)
	old.ResourceVersion = "5"
	// As jobs were before the prefixed labels: selected by the legacy uid label.
	delete(old.Spec.Template.Labels, "batch.kubernetes.io/job-name")
	delete(old.Spec.Template.Labels, "batch.kubernetes.io/controller-uid")
	old.Spec.Selector.MatchLabels = map[string]string{"controller-uid": "uid-1"}
	j := old.DeepCopy()
	j.Spec.Parallelism = ptr[int32](2)
	if errs := updateObj(t, Jobs(), j, old); len(errs) > 0 {
		t.Errorf("job without the prefixed labels refused: %v", errs)
	}
	// A suspended job may change its template's labels, but not drop the
	// generated ones.
	old = job("s")
	old.Spec.Suspend = ptr(true)
	createObj(t, Jobs(), old)
	old.ResourceVersion = "5"
	j = old.DeepCopy()
	delete(j.Spec.Template.Labels, "job-name")
	want := []string{"spec.template.metadata.labels[job-name]: Required value: s"}
	if diff := cmp.Diff(want, errStrings(updateObj(t, Jobs(), j, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestJobStatusWrites(t *testing.T) {
	st := Jobs()
	old := job("j")
	if errs := createObj(t, st, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	old.Status.Succeeded = 1
	// A write through the main resource keeps the stored status.
	j := old.DeepCopy()
	j.Status.Succeeded = 7
	j.Spec.Parallelism = ptr[int32](2)
	st.PrepareForUpdate(j, old)
	if j.Status.Succeeded != 1 || j.Generation != old.Generation+1 {
		t.Errorf("status %+v generation %d", j.Status, j.Generation)
	}
	// A status write keeps the stored spec.
	s := old.DeepCopy()
	s.Status.Succeeded = 3
	s.Spec.Parallelism = ptr[int32](9)
	out := st.PrepareForStatusUpdate(s, old).(*batchv1.Job)
	if out.Status.Succeeded != 3 || *out.Spec.Parallelism != 1 {
		t.Errorf("status write stored %+v / %+v", out.Status, out.Spec)
	}
	// Create clears the status a client sends.
	n := job("n")
	n.Status.Active = 4
	createObj(t, st, n)
	if n.Status.Active != 0 {
		t.Errorf("status kept on create: %+v", n.Status)
	}
}

func TestJobPodFailurePolicy(t *testing.T) {
	tests := []struct {
		name string
		rule batchv1.PodFailurePolicyRule
		want []string
	}{
		{"valid exit codes", batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}}}, nil},
		{"valid condition", batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}, nil},
		{"neither", batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionCount},
			[]string{"spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"}},
		{"bad exit codes", batchv1.PodFailurePolicyRule{Action: "Retry",
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, ContainerName: ptr("other"), Values: []int32{3, 0, 3}}},
			[]string{
				`spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`,
				`spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "other": must be one of the container or initContainer names in the pod template`,
				"spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
				"spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
				"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,0,3]: must be ordered",
			}},
		{"fail index without per-index limit", batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailIndex,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
			[]string{`spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job("j")
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{tt.rule}}
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, Jobs(), j))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobStatusCountersValidated(t *testing.T) {
	old := job("j")
	createObj(t, Jobs(), old)
	old.ResourceVersion = "5"
	j := old.DeepCopy()
	j.Status.Succeeded = -1
	out := Jobs().PrepareForStatusUpdate(j, old)
	want := []string{"status.succeeded: Invalid value: -1: must be greater than or equal to 0"}
	if diff := cmp.Diff(want, errStrings(Jobs().ValidateUpdate(out, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

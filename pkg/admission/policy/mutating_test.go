package policy

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// mapMerger merges apply configurations as structured-merge-diff does
// without a schema: maps member by member, anything else replaced.
type mapMerger struct{}

func (mapMerger) Merge(_ schema.GroupVersionKind, obj runtime.Object, config map[string]any) (runtime.Object, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	merged := mergeMaps(m, config)
	out := &appsv1.Deployment{}
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(merged, out)
}

func mergeMaps(dst, src map[string]any) map[string]any {
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range src {
		sm, ok1 := v.(map[string]any)
		dm, ok2 := out[k].(map[string]any)
		if ok1 && ok2 {
			out[k] = mergeMaps(dm, sm)
			continue
		}
		out[k] = v
	}
	return out
}

func jsonPatch(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

func applyConfiguration(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
}

func newMutatingPolicy(name string, mutate func(*admissionregistrationv1.MutatingAdmissionPolicySpec), mutations ...admissionregistrationv1.Mutation) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr(admissionregistrationv1.Fail),
			MatchConstraints:   deploymentConstraints(),
			Mutations:          mutations,
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func newMutatingBinding(name, policy string, mutate func(*admissionregistrationv1.MutatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy},
	}
	if mutate != nil {
		mutate(&b.Spec)
	}
	return b
}

func newMutatingPlugin(t testing.TB, src *fakeSource, reg prometheus.Registerer) *Mutating {
	t.Helper()
	p, err := NewMutating(&admission.Config{Source: src, Resolver: fakeResolver{}, Merger: mapMerger{}, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Mutating)
}

func TestMutateAsKubernetes(t *testing.T) {
	ns := newNamespace("default", map[string]string{"env": "prod"})
	ignoreFailures := func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
		s.FailurePolicy = ptr(admissionregistrationv1.Ignore)
	}
	withParams := func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
		s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		// want is the deployment's replicas and labels after admission
		wantReplicas int32
		wantLabels   map[string]string
		wantErr      string
		wantReason   metav1.StatusReason
	}{
		{
			name: "a JSON patch then an apply configuration, in order",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil,
					jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`),
					applyConfiguration(`Object{metadata: Object.metadata{labels: {"replicas": string(object.spec.replicas)}}}`)),
				newMutatingBinding("b", "p", nil),
			},
			wantReplicas: 3, wantLabels: map[string]string{"app": "web", "replicas": "3"},
		},
		{
			name: "variables, namespaceObject and escaped keys",
			objects: []runtime.Object{
				newMutatingPolicy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
					s.Variables = []admissionregistrationv1.Variable{{Name: "env", Expression: "namespaceObject.metadata.labels.env"}}
				}, jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/env"), value: variables.env}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantReplicas: 1, wantLabels: map[string]string{"app": "web", "example.com/env": "prod"},
		},
		{
			name: "params from a ConfigMap",
			objects: []runtime.Object{
				newMutatingPolicy("p", withParams, applyConfiguration(`Object{metadata: Object.metadata{labels: {"team": params.data.team}}}`)),
				newMutatingBinding("b", "p", func(s *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
					s.ParamRef = &admissionregistrationv1.ParamRef{Name: "cfg", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}
				}),
				configMap("cfg", nil, map[string]string{"team": "blue"}),
			},
			wantReplicas: 1, wantLabels: map[string]string{"app": "web", "team": "blue"},
		},
		{
			name: "missing params with Deny refuse",
			objects: []runtime.Object{
				newMutatingPolicy("p", withParams, applyConfiguration(`Object{}`)),
				newMutatingBinding("b", "p", func(s *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
					s.ParamRef = &admissionregistrationv1.ParamRef{Name: "none", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}
				}),
			},
			wantErr:    "policy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
			wantReason: metav1.StatusReasonForbidden,
		},
		{
			name: "a failed test operation changes nothing",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil, jsonPatch(`[JSONPatch{op: "test", path: "/spec/replicas", value: 7}, JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantReplicas: 1, wantLabels: map[string]string{"app": "web"},
		},
		{
			name: "matchConditions that do not hold",
			objects: []runtime.Object{
				newMutatingPolicy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
					s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "big", Expression: "object.spec.replicas > 10"}}
				}, jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantReplicas: 1, wantLabels: map[string]string{"app": "web"},
		},
		{
			name: "a binding whose selector does not match",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil, jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`)),
				newMutatingBinding("b", "p", func(s *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
					s.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
				}),
			},
			wantReplicas: 1, wantLabels: map[string]string{"app": "web"},
		},
		{
			name: "an error under Fail refuses",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil, jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/x", value: object.spec.missing}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantErr:    "policy 'p' with binding 'b' denied request: expression '[JSONPatch{op: \"add\", path: \"/metadata/labels/x\", value: object.spec.missing}]' resulted in error: no such key: missing",
			wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "an error under Ignore is ignored; other policies apply",
			objects: []runtime.Object{
				newMutatingPolicy("a", ignoreFailures, jsonPatch(`[JSONPatch{op: "remove", path: "/spec/absent"}]`)),
				newMutatingBinding("b", "a", nil),
				newMutatingPolicy("z", nil, jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 2}]`)),
				newMutatingBinding("b2", "z", nil),
			},
			wantReplicas: 2, wantLabels: map[string]string{"app": "web"},
		},
		{
			name: "a compile error under Fail refuses",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil, applyConfiguration(`[JSONPatch{op: "add", path: "/x", value: 1}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantErr:    "policy 'p' with binding 'b' denied request: must evaluate to Object but got list(JSONPatch)",
			wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a JSON patch that does not apply",
			objects: []runtime.Object{
				newMutatingPolicy("p", nil, jsonPatch(`[JSONPatch{op: "remove", path: "/spec/absent"}]`)),
				newMutatingBinding("b", "p", nil),
			},
			wantErr:    "policy 'p' with binding 'b' denied request: JSONPath: ",
			wantReason: metav1.StatusReasonInvalid,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(append([]runtime.Object{ns}, tc.objects...)...)
			p := newMutatingPlugin(t, src, nil)
			a := createAttrs(newDeployment("web", 1, map[string]string{"app": "web"}))
			err := p.Admit(context.Background(), a)
			if tc.wantErr != "" {
				status, ok := err.(*apierrors.StatusError)
				if !ok {
					t.Fatalf("got %v (%T), want a StatusError", err, err)
				}
				if got := status.ErrStatus.Message; !strings.HasPrefix(got, tc.wantErr) {
					t.Errorf("message %q, want it to start with %q", got, tc.wantErr)
				}
				if status.ErrStatus.Code != 403 || status.ErrStatus.Reason != tc.wantReason {
					t.Errorf("code %d reason %q, want 403 %q", status.ErrStatus.Code, status.ErrStatus.Reason, tc.wantReason)
				}
				if c := status.ErrStatus.Details.Causes; len(c) != 1 || c[0].Message != status.ErrStatus.Message {
					t.Errorf("causes %v, want the message", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := a.Object.(*appsv1.Deployment)
			if *d.Spec.Replicas != tc.wantReplicas {
				t.Errorf("replicas %d, want %d", *d.Spec.Replicas, tc.wantReplicas)
			}
			if diff := cmp.Diff(tc.wantLabels, d.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// labelAdder is a mutating plugin after the policies: it adds a label
// once and asks for reinvocation, as a mutating webhook would.
type labelAdder struct{ calls int }

func (*labelAdder) Handles(admission.Operation) bool { return true }

func (l *labelAdder) Admit(_ context.Context, a *admission.Attributes) error {
	l.calls++
	d := a.Object.(*appsv1.Deployment)
	if d.Labels["late"] == "" {
		d = d.DeepCopy()
		d.Labels["late"] = "yes"
		a.Object = d
		a.SetReinvocationRequested()
	}
	return nil
}

func TestMutatingReinvocation(t *testing.T) {
	for _, tc := range []struct {
		policy    admissionregistrationv1.ReinvocationPolicyType
		wantCount string
	}{
		{admissionregistrationv1.NeverReinvocationPolicy, "1"},
		{admissionregistrationv1.IfNeededReinvocationPolicy, "2"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			src := newFakeSource(newNamespace("default", nil),
				newMutatingPolicy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.ReinvocationPolicy = tc.policy },
					applyConfiguration(`Object{metadata: Object.metadata{annotations: {"labels": string(size(object.metadata.labels))}}}`)),
				newMutatingBinding("b", "p", nil))
			later := &labelAdder{}
			chain, err := admission.NewChain(
				[]string{admission.MutatingAdmissionPolicy, admission.MutatingAdmissionWebhook},
				admission.Plugins{
					admission.MutatingAdmissionPolicy:  NewMutating,
					admission.MutatingAdmissionWebhook: func(*admission.Config) (admission.Interface, error) { return later, nil },
				},
				&admission.Config{Source: src, Resolver: fakeResolver{}, Merger: mapMerger{}})
			if err != nil {
				t.Fatal(err)
			}
			a := createAttrs(newDeployment("web", 1, map[string]string{"app": "web"}))
			if err := chain.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			d := a.Object.(*appsv1.Deployment)
			if got := d.Annotations["labels"]; got != tc.wantCount {
				t.Errorf("the policy saw %s labels, want %s", got, tc.wantCount)
			}
			if later.calls != 2 {
				t.Errorf("the later plugin ran %d times, want 2 (the policy's change asks for reinvocation)", later.calls)
			}
		})
	}
}

func TestMutatingSkipsItsOwnConfigurationAndDeletes(t *testing.T) {
	src := newFakeSource(newNamespace("default", nil),
		newMutatingPolicy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
		}, jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`)),
		newMutatingBinding("b", "p", nil))
	p := newMutatingPlugin(t, src, nil)
	a := createAttrs(newDeployment("web", 1, nil))
	a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
	if err := p.Admit(context.Background(), a); err != nil || a.Object != nil {
		t.Fatalf("delete: %v, object %v", err, a.Object)
	}
	own := &admission.Attributes{
		Operation: admission.Create,
		Kind:      admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"),
		Resource:  mutatingPoliciesResource,
		Object:    newMutatingPolicy("q", nil),
	}
	if err := p.Admit(context.Background(), own); err != nil {
		t.Fatal(err)
	}
}

func TestMutatingMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := newFakeSource(newNamespace("default", nil),
		newMutatingPolicy("p", nil, jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`)),
		newMutatingBinding("b", "p", nil))
	p := newMutatingPlugin(t, src, reg)
	if err := p.Admit(context.Background(), createAttrs(newDeployment("web", 1, nil))); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP apiserver_mutating_admission_policy_check_total Mutations of admission policies applied, by policy, binding and error type.
# TYPE apiserver_mutating_admission_policy_check_total counter
apiserver_mutating_admission_policy_check_total{error_type="no_error",policy="p",policy_binding="b"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_mutating_admission_policy_check_total"); err != nil {
		t.Error(err)
	}
}

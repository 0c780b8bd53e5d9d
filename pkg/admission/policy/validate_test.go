package policy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/authorization"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const forbiddenPrefix = `deployments.apps "web" is forbidden: `

func replicasAtMost5() admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{Expression: "object.spec.replicas <= 5"}
}

func withValidation(mutate func(*admissionregistrationv1.Validation)) admissionregistrationv1.Validation {
	v := replicasAtMost5()
	mutate(&v)
	return v
}

func actions(as ...admissionregistrationv1.ValidationAction) func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
	return func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.ValidationActions = as }
}

func ignore(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
	s.FailurePolicy = ptr(admissionregistrationv1.Ignore)
}

func configMap(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}, Data: data}
}

func paramsPolicy(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		if mutate != nil {
			mutate(s)
		}
	}, admissionregistrationv1.Validation{Expression: "object.spec.replicas <= int(params.data.max)"})
}

func paramRef(ref admissionregistrationv1.ParamRef) func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
	return func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.ParamRef = &ref }
}

func TestValidateAsKubernetes(t *testing.T) {
	ns := newNamespace("default", map[string]string{"env": "prod"})
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		// replicas of the deployment created; labels on it
		replicas int32
		labels   map[string]string
		authz    func(authorization.Attributes) bool
		// wantErr is the whole message, wantCode/wantReason the status
		wantErr     string
		wantCode    int32
		wantReason  metav1.StatusReason
		wantWarns   []string
		wantAnnots  map[string]string
		errContains string
	}{
		{
			name:     "a failed validation without message is denied with its expression, 422 Invalid",
			objects:  []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name:     "a passing validation admits",
			objects:  []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 3,
		},
		{
			name:     "a policy without binding does nothing",
			objects:  []runtime.Object{newPolicy("p", nil, replicasAtMost5())},
			replicas: 10,
		},
		{
			name:     "a binding to a missing policy does nothing",
			objects:  []runtime.Object{newBinding("b", "missing", nil)},
			replicas: 10,
		},
		{
			name: "message",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) { v.Message = " too many replicas " })),
				newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: too many replicas",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "messageExpression",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) {
				v.Message = "static"
				v.MessageExpression = "'replicas ' + string(object.spec.replicas) + ' > 5'"
			})), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: replicas 10 > 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a messageExpression that fails falls back to message",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) {
				v.Message = "static"
				v.MessageExpression = "object.spec.missing"
			})), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: static",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a multi-line messageExpression result falls back to the expression",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) {
				v.MessageExpression = "'a\\nb'"
			})), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "reason Forbidden is 403",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) { v.Reason = ptr(metav1.StatusReasonForbidden) })),
				newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 403, wantReason: metav1.StatusReasonForbidden,
		},
		{
			name: "reason Unauthorized is 401",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) { v.Reason = ptr(metav1.StatusReasonUnauthorized) })),
				newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 401, wantReason: metav1.StatusReasonUnauthorized,
		},
		{
			name: "reason RequestEntityTooLarge is 413",
			objects: []runtime.Object{newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) {
				v.Reason = ptr(metav1.StatusReasonRequestEntityTooLarge)
			})), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge,
		},
		{
			name:      "Warn warns and admits",
			objects:   []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", actions(admissionregistrationv1.Warn))},
			replicas:  10,
			wantWarns: []string{"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: object.spec.replicas <= 5"},
		},
		{
			name:     "Audit records the failure as Kubernetes' validation_failure annotation",
			objects:  []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", actions(admissionregistrationv1.Audit, admissionregistrationv1.Warn))},
			replicas: 10,
			wantAnnots: map[string]string{
				"validation.policy.admission.k8s.io/validation_failure": `[{"message":"failed expression: object.spec.replicas \u003c= 5","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Audit","Warn"]}]`,
			},
			wantWarns: []string{"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: object.spec.replicas <= 5"},
		},
		{
			name:     "the first denial decides",
			objects:  []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{Expression: "true"}, admissionregistrationv1.Validation{Expression: "false", Message: "second"}, admissionregistrationv1.Validation{Expression: "false", Message: "third"}), newBinding("b", "p", nil)},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: second",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name:     "a runtime error with failurePolicy Fail denies",
			objects:  []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{Expression: "object.spec.missing == 1"}), newBinding("b", "p", nil)},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.spec.missing == 1' resulted in error: no such key: missing",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name:     "a runtime error with failurePolicy Ignore admits",
			objects:  []runtime.Object{newPolicy("p", ignore, admissionregistrationv1.Validation{Expression: "object.spec.missing == 1"}), newBinding("b", "p", nil)},
			replicas: 1,
		},
		{
			name:        "a compile error with failurePolicy Fail denies",
			objects:     []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{Expression: "undeclared > 1"}), newBinding("b", "p", nil)},
			replicas:    1,
			errContains: "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'undeclared'",
			wantCode:    422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name:     "a compile error with failurePolicy Ignore admits",
			objects:  []runtime.Object{newPolicy("p", ignore, admissionregistrationv1.Validation{Expression: "undeclared > 1"}), newBinding("b", "p", nil)},
			replicas: 1,
		},
		{
			name: "variables are composited in order",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.Variables = []admissionregistrationv1.Variable{{Name: "replicas", Expression: "object.spec.replicas"}, {Name: "max", Expression: "variables.replicas > 100 ? 0 : 5"}}
			}, admissionregistrationv1.Validation{Expression: "variables.replicas <= variables.max", MessageExpression: "'max is ' + string(variables.max)"}), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: max is 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a variable that fails to evaluate fails the expressions reading it",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.Variables = []admissionregistrationv1.Variable{{Name: "bad", Expression: "object.spec.missing"}}
			}, admissionregistrationv1.Validation{Expression: "variables.bad == 1"}), newBinding("b", "p", nil)},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: no such key: missing",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "matchConditions that are false skip the policy",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "big", Expression: "object.spec.replicas > 100"}}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
		},
		{
			name: "matchConditions that are true apply the policy",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "user", Expression: "request.userInfo.username == 'alice'"}}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a false matchCondition wins over an erroring one",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "err", Expression: "object.spec.missing"}, {Name: "no", Expression: "false"}}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
		},
		{
			name: "an erroring matchCondition with failurePolicy Fail denies",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "err", Expression: "object.spec.missing == 1"}}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.spec.missing == 1' resulted in error: no such key: missing",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "the binding's objectSelector",
			objects: []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
				s.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
				s.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}}
			})},
			replicas: 10, labels: map[string]string{"checked": "no"},
		},
		{
			name: "the binding's namespaceSelector, with the namespace's labels",
			objects: []runtime.Object{newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
				s.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
				s.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			})},
			replicas: 10,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "the policy's excludeResourceRules",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule()}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
		},
		{
			name: "resourceNames that do not name the object",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.MatchConstraints.ResourceRules[0].ResourceNames = []string{"other"}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 10,
		},
		{
			name:     "params by name",
			objects:  []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "limits"})), configMap("limits", nil, map[string]string{"max": "3"})},
			replicas: 4,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= int(params.data.max)",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name:     "params by name that admit",
			objects:  []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "limits"})), configMap("limits", nil, map[string]string{"max": "30"})},
			replicas: 4,
		},
		{
			name: "params not found with parameterNotFoundAction Deny",
			objects: []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{
				Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}))},
			replicas: 4,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "params not found with parameterNotFoundAction Allow",
			objects: []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{
				Name: "limits", ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)}))},
			replicas: 4,
		},
		{
			name: "params by selector: every param must pass",
			objects: []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"limits": "yes"}}})),
				configMap("loose", map[string]string{"limits": "yes"}, map[string]string{"max": "30"}),
				configMap("strict", map[string]string{"limits": "yes"}, map[string]string{"max": "3"}),
				configMap("ignored", map[string]string{"limits": "no"}, map[string]string{"max": "0"})},
			replicas: 4,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= int(params.data.max)",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "params by selector that all pass",
			objects: []runtime.Object{paramsPolicy(nil), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"limits": "yes"}}})),
				configMap("loose", map[string]string{"limits": "yes"}, map[string]string{"max": "30"}),
				configMap("ignored", map[string]string{"limits": "no"}, map[string]string{"max": "0"})},
			replicas: 4,
		},
		{
			name: "a paramKind that is not served is a misconfiguration of the policy",
			objects: []runtime.Object{paramsPolicy(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Limits"}
			}), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "x"}))},
			replicas: 4,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limits'",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "a paramKind that is not served, with failurePolicy Ignore",
			objects: []runtime.Object{paramsPolicy(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Limits"}
				ignore(s)
			}), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "x"}))},
			replicas: 4,
		},
		{
			name: "a cluster-scoped paramKind with a paramRef namespace",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Namespace"}
			}, replicasAtMost5()), newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "default", Namespace: "default"}))},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "auditAnnotations are published under <policy>/<key>; null is omitted",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
					{Key: "replicas", ValueExpression: "'replicas: ' + string(object.spec.replicas)"},
					{Key: "none", ValueExpression: "null"},
				}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas:   1,
			wantAnnots: map[string]string{"p/replicas": "replicas: 1"},
		},
		{
			name: "an auditAnnotation that fails with failurePolicy Fail denies",
			objects: []runtime.Object{newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
				s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "bad", ValueExpression: "string(object.spec.missing)"}}
			}, replicasAtMost5()), newBinding("b", "p", nil)},
			replicas: 1,
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'string(object.spec.missing)' resulted in error: no such key: missing",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "authorizer checks ask about the requesting user",
			objects: []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{
				Expression: "authorizer.group('apps').resource('deployments').subresource('scale').namespace('default').name('web').check('update').allowed()",
				Message:    "cannot scale",
			}), newBinding("b", "p", nil)},
			replicas: 1,
			authz: func(a authorization.Attributes) bool {
				return a.User.Name == "alice" && a.ResourceRequest && a.APIGroup == "apps" && a.APIVersion == "*" && a.Resource == "deployments" &&
					a.Subresource == "scale" && a.Namespace == "default" && a.Name == "web" && a.Verb == "update"
			},
		},
		{
			// messageExpressions have no authorizer in Kubernetes: the
			// message falls back to the expression
			name: "a denied authorizer check",
			objects: []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{
				Expression:        "authorizer.requestResource.check('delete').allowed()",
				MessageExpression: "'no: ' + authorizer.requestResource.check('delete').reason()",
			}), newBinding("b", "p", nil)},
			replicas: 1,
			authz:    func(authorization.Attributes) bool { return false },
			wantErr:  forbiddenPrefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: authorizer.requestResource.check('delete').allowed()",
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
		},
		{
			name: "authorizer.serviceAccount and path checks",
			objects: []runtime.Object{newPolicy("p", nil, admissionregistrationv1.Validation{
				Expression: "authorizer.serviceAccount('kube-system', 'robot').group('').resource('pods').check('list').allowed() && authorizer.path('/healthz').check('get').allowed()",
			}), newBinding("b", "p", nil)},
			replicas: 1,
			authz: func(a authorization.Attributes) bool {
				if a.ResourceRequest {
					return a.User.Name == "system:serviceaccount:kube-system:robot" && a.User.Groups[1] == "system:serviceaccounts:kube-system"
				}
				return a.Path == "/healthz" && a.Verb == "get" && a.User.Name == "alice"
			},
		},
		{
			name: "namespaceObject, request and oldObject",
			objects: []runtime.Object{newPolicy("p", nil,
				admissionregistrationv1.Validation{Expression: "namespaceObject.metadata.labels.env == 'prod'"},
				admissionregistrationv1.Validation{Expression: "request.operation == 'CREATE' && request.kind.kind == 'Deployment' && request.resource.resource == 'deployments' && request.namespace == 'default' && request.name == 'web' && !request.dryRun"},
				admissionregistrationv1.Validation{Expression: "oldObject == null && object.kind == 'Deployment' && object.apiVersion == 'apps/v1'"},
				admissionregistrationv1.Validation{Expression: "'dev' in request.userInfo.groups"},
			), newBinding("b", "p", nil)},
			replicas: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(append([]runtime.Object{ns}, tc.objects...)...)
			allow := tc.authz
			if allow == nil {
				allow = func(authorization.Attributes) bool { return true }
			}
			p := newPlugin(t, src, &recordingAuthorizer{allow: allow})
			a := createAttrs(newDeployment("web", tc.replicas, tc.labels))
			err := p.Validate(context.Background(), a)
			switch {
			case tc.wantErr == "" && tc.errContains == "":
				if err != nil {
					t.Fatalf("Validate = %v, want admitted", err)
				}
			default:
				var status *apierrors.StatusError
				if !errors.As(err, &status) {
					t.Fatalf("Validate = %v, want a StatusError", err)
				}
				if tc.wantErr != "" && err.Error() != tc.wantErr {
					t.Errorf("message:\n got %s\nwant %s", err.Error(), tc.wantErr)
				}
				if tc.errContains != "" && !strings.Contains(err.Error(), tc.errContains) {
					t.Errorf("message %q does not contain %q", err.Error(), tc.errContains)
				}
				if status.ErrStatus.Code != tc.wantCode || status.ErrStatus.Reason != tc.wantReason {
					t.Errorf("status %d %s, want %d %s", status.ErrStatus.Code, status.ErrStatus.Reason, tc.wantCode, tc.wantReason)
				}
				if d := status.ErrStatus.Details; d == nil || len(d.Causes) != 1 || !strings.HasSuffix(err.Error(), d.Causes[0].Message) {
					t.Errorf("details %+v: want one cause with the policy's message", d)
				}
			}
			if diff := cmp.Diff(tc.wantWarns, a.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			want := tc.wantAnnots
			if want == nil {
				want = map[string]string{}
			}
			if diff := cmp.Diff(want, a.Annotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmissionConfigurationIsExempt(t *testing.T) {
	everything := newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
		}}}
	}, admissionregistrationv1.Validation{Expression: "false"})
	src := newFakeSource(everything, newBinding("b", "p", nil))
	p := newPlugin(t, src, nil)
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		a := &admission.Attributes{
			Operation: admission.Create,
			Kind:      admissionregistrationv1.SchemeGroupVersion.WithKind(kind),
			Resource:  admissionregistrationv1.SchemeGroupVersion.WithResource(strings.ToLower(kind) + "s"),
			Name:      "x",
		}
		if err := p.Validate(context.Background(), a); err != nil {
			t.Errorf("%s: %v, want exempt", kind, err)
		}
	}
	a := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: namespacesResource, Namespace: "x", Name: "x",
		Object: newNamespace("x", nil)}
	if err := p.Validate(context.Background(), a); err == nil {
		t.Error("a namespace was not denied by a policy matching everything")
	}
}

func TestPoliciesCompiledOncePerRevision(t *testing.T) {
	src := newFakeSource(newNamespace("default", nil), newPolicy("p", nil, replicasAtMost5()), newBinding("b", "p", nil))
	p := newPlugin(t, src, nil)
	ctx := context.Background()
	if err := p.Validate(ctx, createAttrs(newDeployment("web", 1, nil))); err != nil {
		t.Fatal(err)
	}
	first := p.set.snap.Load().hooks[0].compiled
	if err := p.Validate(ctx, createAttrs(newDeployment("web", 1, nil))); err != nil {
		t.Fatal(err)
	}
	if p.set.snap.Load().hooks[0].compiled != first {
		t.Fatal("recompiled without a change")
	}
	// a new binding keeps the policy's compilation
	src.add(newBinding("b2", "p", nil))
	if err := p.Validate(ctx, createAttrs(newDeployment("web", 1, nil))); err != nil {
		t.Fatal(err)
	}
	if p.set.snap.Load().hooks[0].compiled != first || len(p.set.snap.Load().hooks[0].bindings) != 2 {
		t.Fatal("a new binding recompiled the policy or was not seen")
	}
	// a changed policy is recompiled and applied
	src.add(newPolicy("p", nil, admissionregistrationv1.Validation{Expression: "false", Message: "changed"}))
	err := p.Validate(ctx, createAttrs(newDeployment("web", 1, nil)))
	if err == nil || !strings.HasSuffix(err.Error(), "denied request: changed") {
		t.Fatalf("after the policy changed: %v", err)
	}
}

// convertingObjects serves v2 and v1 of a resource; converting marks the
// object with the version it was converted to.
type convertingObjects struct {
	equivalent admission.Equivalent
}

func (c convertingObjects) ConvertTo(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "spec": map[string]any{"convertedTo": gvk.Version}}}
	u.SetName(obj.(metav1.Object).GetName())
	return u, nil
}

func (c convertingObjects) EquivalentResources(schema.GroupVersionResource, string) []admission.Equivalent {
	return []admission.Equivalent{c.equivalent}
}

func TestEquivalentMatchEvaluatesTheConvertedObject(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "apps", Version: "v1beta2", Resource: "deployments"}
	p := newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ResourceRules[0].APIVersions = []string{"v1beta2"}
	}, admissionregistrationv1.Validation{
		Expression: "object.spec.convertedTo == 'v1beta2' && request.kind.version == 'v1beta2' && request.requestKind.version == 'v1' && request.resource.version == 'v1beta2'",
	})
	src := newFakeSource(newNamespace("default", nil), p, newBinding("b", "p", nil))
	plugin := newPlugin(t, src, nil)
	a := createAttrs(newDeployment("web", 1, nil))
	a.Objects = convertingObjects{admission.Equivalent{Resource: v1, Kind: v1.GroupVersion().WithKind("Deployment")}}
	if err := plugin.Validate(context.Background(), a); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	// with matchPolicy Exact the policy does not apply at all
	p2 := p.DeepCopy()
	p2.ResourceVersion = ""
	p2.Spec.MatchConstraints.MatchPolicy = ptr(admissionregistrationv1.Exact)
	p2.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false"}}
	src.add(p2)
	if err := plugin.Validate(context.Background(), a); err != nil {
		t.Fatalf("Exact: Validate = %v", err)
	}
}

func TestNamespacedParamsForClusterScopedRequests(t *testing.T) {
	p := paramsPolicy(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ResourceRules[0].APIGroups = []string{""}
		s.MatchConstraints.ResourceRules[0].Resources = []string{"nodes"}
	})
	src := newFakeSource(p, newBinding("b", "p", paramRef(admissionregistrationv1.ParamRef{Name: "limits"})))
	plugin := newPlugin(t, src, nil)
	a := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Node"), Resource: corev1.SchemeGroupVersion.WithResource("nodes"),
		Name: "x", Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}
	err := plugin.Validate(context.Background(), a)
	const want = `nodes "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate = %v\nwant %s", err, want)
	}
}

func TestConcurrentValidate(t *testing.T) {
	src := newFakeSource(newNamespace("default", nil), newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Variables = []admissionregistrationv1.Variable{{Name: "r", Expression: "object.spec.replicas"}}
	}, admissionregistrationv1.Validation{Expression: "variables.r <= 5", MessageExpression: "'too many: ' + string(variables.r)"}), newBinding("b", "p", nil))
	p := newPlugin(t, src, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				replicas := int32((i + j) % 10)
				err := p.Validate(context.Background(), createAttrs(newDeployment("web", replicas, nil)))
				if (replicas > 5) != (err != nil) {
					t.Errorf("replicas %d: %v", replicas, err)
				}
				if j == 10 && i == 0 {
					src.add(newBinding("b2", "p", actions(admissionregistrationv1.Warn)))
				}
			}
		})
	}
	wg.Wait()
}

func TestThroughTheChain(t *testing.T) {
	src := newFakeSource(newNamespace("default", nil), newPolicy("p", nil, withValidation(func(v *admissionregistrationv1.Validation) {
		v.Reason = ptr(metav1.StatusReasonForbidden)
	})), newBinding("b", "p", nil))
	chain, err := admission.NewChain([]string{admission.ValidatingAdmissionPolicy},
		admission.Plugins{admission.ValidatingAdmissionPolicy: NewValidating}, &admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	err = chain.Validate(context.Background(), createAttrs(newDeployment("web", 10, nil)))
	if !apierrors.IsForbidden(err) || !strings.HasSuffix(err.Error(), "denied request: failed expression: object.spec.replicas <= 5") {
		t.Fatalf("chain.Validate = %v", err)
	}
}

func TestNamespaceObjectFollowsTheNamespace(t *testing.T) {
	src := newFakeSource(newNamespace("default", map[string]string{"env": "prod"}),
		newPolicy("p", nil, admissionregistrationv1.Validation{Expression: "namespaceObject.metadata.labels.env == 'prod'"}), newBinding("b", "p", nil))
	p := newPlugin(t, src, nil)
	if err := p.Validate(context.Background(), createAttrs(newDeployment("web", 1, nil))); err != nil {
		t.Fatal(err)
	}
	src.add(newNamespace("default", map[string]string{"env": "dev"}))
	if err := p.Validate(context.Background(), createAttrs(newDeployment("web", 1, nil))); err == nil {
		t.Fatal("the namespace's new labels were not seen")
	}
}

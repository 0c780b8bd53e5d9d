package policy

import (
	"context"
	"fmt"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// fakeSource is the shared fake, told each object's resource by its type
// (resourceOf); with onUpdate set it tells of every status write.
type fakeSource struct {
	admissiontest.Source
	// onUpdate, if set before the source is used, is sent every object
	// a status update stored.
	onUpdate chan runtime.Object
}

func newFakeSource(objs ...runtime.Object) *fakeSource {
	s := &fakeSource{}
	for _, o := range objs {
		s.add(o)
	}
	return s
}

func resourceOf(o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return policiesResource
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return bindingsResource
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return mutatingPoliciesResource
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return mutatingBindingsResource
	case *corev1.Namespace:
		return namespacesResource
	case *corev1.ConfigMap:
		return corev1.SchemeGroupVersion.WithResource("configmaps")
	case *corev1.Pod:
		return corev1.SchemeGroupVersion.WithResource("pods")
	case *appsv1.Deployment:
		return appsv1.SchemeGroupVersion.WithResource("deployments")
	}
	panic(fmt.Sprintf("fakeSource: no resource for %T", o))
}

func (s *fakeSource) add(o runtime.Object) { s.Add(resourceOf(o), o) }

func (s *fakeSource) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	out, err := s.Source.UpdateStatus(ctx, gvr, obj)
	if err == nil && s.onUpdate != nil {
		s.onUpdate <- obj
	}
	return out, err
}

// fakeResolver serves ConfigMaps (namespaced) and Namespaces (cluster);
// Served lists served.
type fakeResolver struct{ served []admission.ServedResource }

func (fakeResolver) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	switch gvk {
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		return corev1.SchemeGroupVersion.WithResource("configmaps"), true, nil
	case corev1.SchemeGroupVersion.WithKind("Namespace"):
		return namespacesResource, false, nil
	}
	return schema.GroupVersionResource{}, false, fmt.Errorf("no resource for %v", gvk)
}

func (r fakeResolver) Served() []admission.ServedResource { return r.served }

// recordingAuthorizer allows what allow says and records what it was asked.
type recordingAuthorizer struct {
	mu    sync.Mutex
	asked []authorization.Attributes
	allow func(authorization.Attributes) bool
}

func (r *recordingAuthorizer) Authorize(_ context.Context, a authorization.Attributes) (authorization.Decision, string, error) {
	r.mu.Lock()
	r.asked = append(r.asked, a)
	r.mu.Unlock()
	if r.allow(a) {
		return authorization.DecisionAllow, "allowed by test", nil
	}
	return authorization.DecisionNoOpinion, "not allowed by test", nil
}

// builders

func ptr[T any](v T) *T { return &v }

func deploymentRule() admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}}
}

// deploymentConstraints match creates and updates of apps/v1
// deployments, everywhere.
func deploymentConstraints() *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
		MatchPolicy:       ptr(admissionregistrationv1.Equivalent),
		ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{deploymentRule()},
	}
}

func newPolicy(name string, mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec), validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr(admissionregistrationv1.Fail),
			MatchConstraints: deploymentConstraints(),
			Validations:      validations,
		},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func newBinding(name, policy string, mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if mutate != nil {
		mutate(&b.Spec)
	}
	return b
}

func newNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func newDeployment(name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
	}
}

var (
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
	deploymentGVK  = appsv1.SchemeGroupVersion.WithKind("Deployment")
)

func createAttrs(obj *appsv1.Deployment) *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create,
		Kind:      deploymentGVK,
		Resource:  deploymentsGVR,
		Namespace: obj.Namespace,
		Name:      obj.Name,
		Object:    obj,
		Options:   &metav1.CreateOptions{},
		User:      &authentication.User{Name: "alice", Groups: []string{"dev", authentication.AllAuthenticated}},
	}
}

func newPlugin(t testing.TB, src *fakeSource, authz authorization.Authorizer) *Validating {
	t.Helper()
	p, err := NewValidating(&admission.Config{Source: src, Authorizer: authz, Resolver: fakeResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Validating)
}

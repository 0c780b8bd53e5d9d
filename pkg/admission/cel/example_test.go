package cel_test

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
	"github.com/kplane/kplane/pkg/authentication"
)

func ExampleNewConditionCompiler() {
	compile := admissioncel.NewConditionCompiler(nil)
	m, err := compile([]admissionregistrationv1.MatchCondition{
		{Name: "not-system", Expression: "!request.userInfo.username.startsWith('system:')"},
		{Name: "labelled", Expression: "has(object.metadata.labels) && 'app' in object.metadata.labels"},
	})
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	a := &admission.Attributes{
		Operation: admission.Create,
		Kind:      corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:  corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "default", Name: "web", Object: pod,
		User: &authentication.User{Name: "alice"},
	}
	inv := admission.Invocation{Resource: a.Resource, Kind: a.Kind}
	matched, failed, err := m.Match(context.Background(), a, pod, nil, admission.NewRequest(a, inv))
	fmt.Println(matched, failed, err)
	// Output:
	// false labelled <nil>
}

package defaulttolerationseconds_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/plugins/defaulttolerationseconds"
)

func ExampleNew() {
	p, err := defaulttolerationseconds.New(&admission.Config{DefaultUnreachableTolerationSeconds: 60})
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{}
	a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: pod}
	if err := p.(admission.MutationInterface).Admit(context.Background(), a); err != nil {
		panic(err)
	}
	for _, t := range pod.Spec.Tolerations {
		fmt.Println(t.Key, t.Operator, t.Effect, *t.TolerationSeconds)
	}
	// Output:
	// node.kubernetes.io/not-ready Exists NoExecute 300
	// node.kubernetes.io/unreachable Exists NoExecute 60
}

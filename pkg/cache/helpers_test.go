package cache_test

import (
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(ns, name, rv string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		k := p.Name
		if p.Namespace != "" {
			k = p.Namespace + "/" + p.Name
		}
		out = append(out, k)
	}
	return out
}

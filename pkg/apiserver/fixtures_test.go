package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.25"}}},
	}
}

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.25"}}},
			},
		},
	}
}

// mustCreate creates obj at path and returns the decoded answer into out.
func (e *testEnv) mustCreate(path string, obj, out any) {
	e.t.Helper()
	r := e.do("POST", path, obj)
	if r.code != 201 {
		e.t.Fatalf("create %s: %d %s", path, r.code, r.body)
	}
	if out != nil {
		r.decode(e.t, out)
	}
}

func podPath(ns, name string) string {
	if name == "" {
		return fmt.Sprintf("/api/v1/namespaces/%s/pods", ns)
	}
	return fmt.Sprintf("/api/v1/namespaces/%s/pods/%s", ns, name)
}

func deployPath(ns, name string) string {
	if name == "" {
		return fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments", ns)
	}
	return fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s", ns, name)
}

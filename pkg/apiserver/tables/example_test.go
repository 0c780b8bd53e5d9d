package tables_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver/tables"
)

// Convert a pod list into the Table kubectl get prints.
func ExampleConvert() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	list := &corev1.PodList{Items: []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-200 * time.Second))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}}}
	table, err := tables.Convert(list, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []any
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	fmt.Println(names...)
	fmt.Println(table.Rows[0].Cells[:5]...)
	// Output:
	// Name Ready Status Restarts Age
	// web 1/1 Running 0 3m20s
}

package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// createObj runs obj through what the server does on create: defaults,
// the uid, PrepareForCreate, Validate.
func createObj(t testing.TB, st Strategy, obj runtime.Object) field.ErrorList {
	t.Helper()
	st.Default(obj)
	obj.(metav1.Object).SetUID(types.UID("uid-1"))
	st.PrepareForCreate(obj)
	return st.Validate(obj)
}

// updateObj runs obj, a changed copy of old, through an update.
func updateObj(t testing.TB, st Strategy, obj, old runtime.Object) field.ErrorList {
	t.Helper()
	st.Default(obj)
	st.PrepareForUpdate(obj, old)
	return st.ValidateUpdate(obj, old)
}

// errStrings renders errors as the API reports them.
func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}
}

package history_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/controller/history"
)

// A revision is named after its parent and the hash of its data; a bumped
// collision count gives the same data another name.
func ExampleNewControllerRevision() {
	parent := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1234"}}
	kind := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	data := runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}
	var collisions int32
	first := history.NewControllerRevision(parent, kind, map[string]string{"app": "web"}, data, 1, &collisions)
	collisions++
	second := history.NewControllerRevision(parent, kind, nil, data, 1, &collisions)
	fmt.Println(first.Name, first.Labels[history.HashLabel], metav1.GetControllerOf(first).Kind)
	fmt.Println(second.Name)
	// Output:
	// web-589f85db5b 589f85db5b StatefulSet
	// web-589f85db5c
}

package priority

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// cached is a Source whose cache and store hold classes.
func cached(classes ...runtime.Object) *admissiontest.Source {
	src := &admissiontest.Source{}
	src.Add(priorityClasses, classes...)
	return src
}

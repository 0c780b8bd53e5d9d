package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/registry"
)

// setRequestor records the caller of r in obj, a new object, when res's
// strategy keeps who asked (registry.RequestorSetter).
func setRequestor(res *resource, obj runtime.Object, r *http.Request) {
	if rs, ok := res.strategy.(registry.RequestorSetter); ok {
		rs.SetRequestor(obj, callerInfo(r))
	}
}

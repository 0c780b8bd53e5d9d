package serviceaccount

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// fakeSource is the shared fake, and ServiceAccounts that reach the store
// only at the appearAt-th Fetch: created while the plugin retries.
type fakeSource struct {
	admissiontest.Source

	mu       sync.Mutex
	fetches  int
	appearAt int
	later    []runtime.Object
}

// cached is a source whose cache and store hold objs.
func cached(objs ...runtime.Object) *fakeSource {
	src := &fakeSource{}
	src.Add(serviceAccounts, objs...)
	return src
}

func (s *fakeSource) Fetch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	s.fetches++
	if s.fetches >= s.appearAt && s.later != nil {
		s.AddUncached(serviceAccounts, s.later...)
		s.later = nil
	}
	s.mu.Unlock()
	return s.Source.Fetch(ctx, gvr, namespace, name)
}

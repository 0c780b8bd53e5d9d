package etcd

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// parseRV reads a resourceVersion; "" and "0" are 0. A malformed one fails
// with storage.ErrCodeInvalidRequest naming key.
func parseRV(key, s string) (uint64, error) {
	rv, err := storage.ParseResourceVersion(s)
	if err != nil {
		if se, ok := err.(*storage.Error); ok {
			se.Key = key
		}
		return 0, err
	}
	return rv, nil
}

// setRV sets obj's metadata.resourceVersion to the etcd revision rev.
func setRV(obj runtime.Object, rev int64) error {
	return storage.SetObjectResourceVersion(obj, uint64(rev))
}

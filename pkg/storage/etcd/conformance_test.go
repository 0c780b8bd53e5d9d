package etcd

import (
	"testing"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/storagetest"
)

// TestConformance runs the storage conformance suite against the etcd
// backend, each check under its own prefix of the shared embedded etcd.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Backend {
		return newTestBackend(t, Config{})
	})
}

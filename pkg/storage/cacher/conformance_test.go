package cacher

import (
	"testing"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/storage/storagetest"
)

// TestConformanceEtcd runs the storage conformance suite against the
// cache in front of the etcd backend.
func TestConformanceEtcd(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Backend {
		return newCacher(t, newEtcdBackend(t), Config{})
	})
}

// TestConformanceMemory runs the suite against the cache in front of the
// memory backend.
func TestConformanceMemory(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Backend {
		b, err := memory.New(memory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return newCacher(t, b, Config{})
	})
}

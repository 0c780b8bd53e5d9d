package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/storage/storagetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newBackend(t testing.TB, cfg memory.Config) *memory.Backend {
	t.Helper()
	b, err := memory.New(cfg)
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Backend { return newBackend(t, memory.Config{}) })
}

func TestConformanceWithoutDecodedCache(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Backend {
		return newBackend(t, memory.Config{DisableDecodedCache: true})
	})
}

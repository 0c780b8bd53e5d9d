package etcd

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kplane/kplane/pkg/storage/etcd"
)

// member is the embedded etcd every benchmark of the package shares,
// started on first use; each benchmark works under its own prefix.
var (
	member    *etcd.Embedded
	memberDir string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if member != nil {
		if err := member.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close embedded etcd:", err)
			code = 1
		}
		os.RemoveAll(memberDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func sharedMember(b testing.TB) *etcd.Embedded {
	b.Helper()
	if member == nil {
		var err error
		if memberDir, err = os.MkdirTemp("", "kplane-bench-etcd-"); err != nil {
			b.Fatal(err)
		}
		// fsync stays on: this is how kplane runs its embedded etcd.
		if member, err = etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{DataDir: memberDir}); err != nil {
			b.Fatal(err)
		}
	}
	return member
}

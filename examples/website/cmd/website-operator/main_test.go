package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/examples/website"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replica is one website-operator process, run in the test's process.
type replica struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error // what run returned; set by the first stop
	mu     sync.Mutex
	log    bytes.Buffer
}

func (r *replica) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

// stop ends the replica as SIGTERM does and returns what run returned.
func (r *replica) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

func startReplica(t *testing.T, env *testenv.Env, ns, identity string) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan error, 1)}
	args := []string{
		"--kubeconfig", env.KubeconfigPath, "--identity", identity, "--leader-elect-namespace", ns,
		// Short leases keep the hand-over quick.
		"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1s", "--leader-elect-retry-period", "100ms",
	}
	go func() { r.done <- run(ctx, args, r) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("replica %s: %v", identity, err)
		}
		if t.Failed() {
			r.mu.Lock()
			t.Logf("replica %s log:\n%s", identity, r.log.String())
			r.mu.Unlock()
		}
	})
	return r
}

func createWebsite(t *testing.T, env *testenv.Env, ns, name string) {
	t.Helper()
	site := &website.Website{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: website.WebsiteSpec{Image: "nginx:1.27"}}
	if _, err := client.NewResource(env.Client, website.Websites).Namespace(ns).Create(t.Context(), site, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Deployments, ns+"/"+name, func(*appsv1.Deployment) bool { return true })
}

// TestLeaderElection: of two replicas one holds the Lease and reconciles;
// when it stops (SIGTERM) it releases the Lease and the other takes over.
func TestLeaderElection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env := testenv.Start(t, testenv.WithCRDsFromDir("../../config/crd"))
	ns := env.Namespace(t)
	replicas := map[string]*replica{"a": startReplica(t, env, ns, "a"), "b": startReplica(t, env, ns, "b")}

	leaseKey := ns + "/" + website.Name
	lease := testenv.WaitFor(t, env, client.Leases, leaseKey, func(l *coordinationv1.Lease) bool {
		return l.Spec.HolderIdentity != nil && replicas[*l.Spec.HolderIdentity] != nil
	})
	leader := *lease.Spec.HolderIdentity
	other := map[string]string{"a": "b", "b": "a"}[leader]
	createWebsite(t, env, ns, "first")

	if err := replicas[leader].stop(); err != nil {
		t.Fatalf("leader %s stopped with %v", leader, err)
	}
	testenv.WaitFor(t, env, client.Leases, leaseKey, func(l *coordinationv1.Lease) bool {
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == other
	})
	createWebsite(t, env, ns, "second")
}

// TestFlags: bad flags and a missing kubeconfig are reported, not run.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined"},
		{"positional", []string{"extra"}, "unexpected arguments"},
		{"no kubeconfig", []string{"--kubeconfig", t.TempDir() + "/absent"}, "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tc.args, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

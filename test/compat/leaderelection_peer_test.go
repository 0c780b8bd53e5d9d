package compat

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	kleaderelection "github.com/kplane/kplane/pkg/leaderelection"
	"github.com/kplane/kplane/pkg/testenv"
)

// Short timings, shared by both implementations, so that a lease expiry
// takes seconds. kplane's lease duration must be whole seconds.
const (
	peerLeaseDuration = 3 * time.Second
	peerRenewDeadline = 2 * time.Second
	peerRetryPeriod   = 250 * time.Millisecond
	peerLease         = "peer-lock"
)

// peerReferee sees every leadership term of either implementation and
// fails the test if one starts while another's context is still live.
type peerReferee struct {
	t       *testing.T
	mu      sync.Mutex
	live    map[string]context.Context
	leaders chan string // identities, in the order they started leading
}

func (r *peerReferee) started(id string, ctx context.Context) {
	r.mu.Lock()
	for other, octx := range r.live {
		if octx.Err() == nil {
			r.t.Errorf("%s started leading while %s still leads", id, other)
		}
	}
	r.live[id] = ctx
	r.mu.Unlock()
	r.leaders <- id
}

// peer is one running candidate of either implementation.
type peer struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{} // closed when its Run returned
}

func (p *peer) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Run did not return", p.id)
	}
}

func (r *peerReferee) run(id string, run func(ctx context.Context)) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{id: id, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		run(ctx)
	}()
	return p
}

func (r *peerReferee) startKplane(t *testing.T, env *testenv.Env, id string, release bool) *peer {
	t.Helper()
	lock, err := kleaderelection.NewLeaseLock(kleaderelection.LeaseLockConfig{
		Client: env.Client, Namespace: "kube-system", Name: peerLease, Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kleaderelection.New(kleaderelection.Config{
		Lock: lock, ReleaseOnCancel: release,
		LeaseDuration: peerLeaseDuration, RenewDeadline: peerRenewDeadline, RetryPeriod: peerRetryPeriod,
		Callbacks: kleaderelection.Callbacks{OnStartedLeading: func(ctx context.Context) {
			r.started(id, ctx)
			<-ctx.Done()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.run(id, func(ctx context.Context) { _ = e.Run(ctx) })
}

func (r *peerReferee) startClientGo(t *testing.T, cs kubernetes.Interface, id string, release bool) *peer {
	t.Helper()
	e, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: peerLease},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		ReleaseOnCancel: release,
		LeaseDuration:   peerLeaseDuration, RenewDeadline: peerRenewDeadline, RetryPeriod: peerRetryPeriod,
		Name: "peer",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				r.started(id, ctx)
				<-ctx.Done()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.run(id, e.Run)
}

// next returns the identity of the next candidate to start leading.
func (r *peerReferee) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-r.leaders:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("nobody started leading")
		return ""
	}
}

// TestLeaderElectionPeer has kplane's elector and client-go's compete for
// one Lease on a kplane API server: hand-overs by release and by lease
// expiry, in both directions, with never two leaders at once.
func TestLeaderElectionPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for lease expiries in real time")
	}
	env := testenv.Start(t)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: env.REST.Host, BearerToken: env.REST.BearerToken})
	if err != nil {
		t.Fatal(err)
	}
	ref := &peerReferee{t: t, live: map[string]context.Context{}, leaders: make(chan string, 16)}
	start := func(id string, release bool) *peer {
		if strings.HasPrefix(id, "kplane") {
			return ref.startKplane(t, env, id, release)
		}
		return ref.startClientGo(t, cs, id, release)
	}
	expect := func(want, why string) {
		t.Helper()
		if got := ref.next(t); got != want {
			t.Fatalf("%s: %s leads, want %s", why, got, want)
		}
	}

	// Release: both start; whoever wins, the other takes over when it
	// releases; then the first, restarted, takes over from the other.
	peers := map[string]*peer{"kplane-1": start("kplane-1", true), "client-go-1": start("client-go-1", true)}
	first := ref.next(t)
	second := map[string]string{"kplane-1": "client-go-1", "client-go-1": "kplane-1"}[first]
	peers[first].stop(t)
	expect(second, first+" released the lease")
	peers[first] = start(first, true)
	peers[second].stop(t)
	expect(first, second+" released the lease")
	peers[first].stop(t)

	// Expiry: a leader stops without releasing; the other waits for the
	// lease to expire and takes over. Both directions.
	k2 := start("kplane-2", false)
	expect("kplane-2", "the lease was free")
	g2 := start("client-go-2", false)
	k2.stop(t)
	expect("client-go-2", "kplane-2's lease expired")
	k3 := start("kplane-3", false)
	g2.stop(t)
	expect("kplane-3", "client-go-2's lease expired")
	k3.stop(t)

	lease, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), peerLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "kplane-3" {
		t.Errorf("holder = %v, want kplane-3", h)
	}
	// Five hand-overs, one acquisition of a fresh lease, counted alike by both.
	if n := lease.Spec.LeaseTransitions; n == nil || *n != 5 {
		t.Errorf("leaseTransitions = %v, want 5", n)
	}
}

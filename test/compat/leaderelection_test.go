package compat

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// candidate is one client-go leader elector and what it observed.
type candidate struct {
	id       string
	elector  *leaderelection.LeaderElector
	started  chan struct{} // closed on OnStartedLeading
	newLead  chan string   // identities from OnNewLeader; buffered so callbacks never block
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run returns
	stopOnce sync.Once
}

func newCandidate(t *testing.T, cs kubernetes.Interface, id string) *candidate {
	t.Helper()
	c := &candidate{id: id, started: make(chan struct{}), newLead: make(chan string, 16), done: make(chan struct{})}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "compat-lock"},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   4 * time.Second,
		RenewDeadline:   2 * time.Second,
		RetryPeriod:     200 * time.Millisecond,
		ReleaseOnCancel: true,
		Name:            "compat",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(c.started) },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				select {
				case c.newLead <- identity:
				default:
				}
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.elector = le
	return c
}

func (c *candidate) run() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		c.elector.Run(ctx)
	}()
}

// stop cancels the candidate and waits for Run to return (it releases the
// lease first when it leads).
func (c *candidate) stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
	})
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestLeaderElection runs client-go's leader election with a Lease lock
// between two candidates on kplane: one leads, the other sees it lead and
// keeps waiting while the leader renews, and takes over when the leader
// releases the lease.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs := srv.clientset(t)

	a := newCandidate(t, cs, "a")
	b := newCandidate(t, cs, "b")
	a.run()
	defer a.stop()
	waitClosed(t, a.started, "a to lead")

	lease, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "compat-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "a" {
		t.Fatalf("lease holder = %v, want a", h)
	}

	// Watch the lease to see a renew it while b competes.
	w, err := cs.CoordinationV1().Leases("kube-system").Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=compat-lock", ResourceVersion: lease.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	b.run()
	defer b.stop()
	select {
	case id := <-b.newLead:
		if id != "a" {
			t.Fatalf("b observed leader %q, want a", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b never observed a leader")
	}
	// a renews at least three times while b is running; b never leads.
	for renewals := 0; renewals < 3; {
		ev := nextEvent(t, w)
		if ev.Type == watch.Bookmark {
			continue
		}
		l, ok := ev.Object.(*coordinationv1.Lease)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("lease watch: %s %T", ev.Type, ev.Object)
		}
		if h := l.Spec.HolderIdentity; h == nil || *h != "a" {
			t.Fatalf("lease taken over by %v while a renews", h)
		}
		renewals++
	}
	select {
	case <-b.started:
		t.Fatal("b leads while a holds the lease")
	default:
	}
	if b.elector.IsLeader() || !a.elector.IsLeader() {
		t.Fatalf("IsLeader: a %v, b %v", a.elector.IsLeader(), b.elector.IsLeader())
	}

	// a steps down and releases; b takes over.
	a.stop()
	waitClosed(t, b.started, "b to lead after a released the lease")
	lease, err = cs.CoordinationV1().Leases("kube-system").Get(ctx, "compat-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "b" {
		t.Errorf("lease holder = %v, want b", h)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("leaseTransitions = %v, want at least 1", lease.Spec.LeaseTransitions)
	}
	b.stop()
}

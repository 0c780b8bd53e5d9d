package replicaset

import (
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
)

// newHandlerController builds a Controller whose informers are never
// started: tests fill the ReplicaSet cache and call the handlers directly.
func newHandlerController(t *testing.T, rss ...*appsv1.ReplicaSet) (*Controller, *clocktesting.FakeClock) {
	t.Helper()
	c, err := client.New(client.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(informers.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	ctrl, err := New(Config{Client: c, Informers: f, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.wakeups.Stop)
	for _, rs := range rss {
		if err := ctrl.rsInformer.Indexer().Add(rs); err != nil {
			t.Fatal(err)
		}
	}
	return ctrl, clk
}

func TestHandlersLowerExpectations(t *testing.T) {
	rs := newRS(2)
	c, _ := newHandlerController(t, rs)
	exp := c.syncer.expectations

	exp.ExpectCreations("ns/web", 1)
	c.addPod(podOf(rs, "new", time.Time{}))
	if !exp.SatisfiedExpectations("ns/web") {
		t.Error("an observed creation left expectations unsatisfied")
	}

	exp.ExpectDeletions("ns/web", []string{"ns/a", "ns/b"})
	c.deletePod(podOf(rs, "a", time.Time{}))
	// A pod known only from a tombstone counts too.
	c.deletePod(cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/b", Obj: podOf(rs, "b", time.Time{})})
	if !exp.SatisfiedExpectations("ns/web") {
		t.Error("observed deletions (one from a tombstone) left expectations unsatisfied")
	}

	// A pod whose controller reference names another uid is not ours.
	exp.ExpectCreations("ns/web", 1)
	impostor := podOf(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "old-uid"}}, "x", time.Time{})
	c.addPod(impostor)
	if exp.SatisfiedExpectations("ns/web") {
		t.Error("a pod of a former ReplicaSet of the same name lowered expectations")
	}
}

func TestGracefulDeletionObservedOnce(t *testing.T) {
	rs := newRS(2)
	c, _ := newHandlerController(t, rs)
	exp := c.syncer.expectations
	exp.ExpectDeletions("ns/web", []string{"ns/a", "ns/b"})
	old := podOf(rs, "a", time.Time{})
	old.ResourceVersion = "1"
	going := old.DeepCopy()
	going.ResourceVersion = "2"
	now := metav1.NewTime(t0)
	going.DeletionTimestamp = &now
	c.updatePod(old, going)
	c.deletePod(going)
	if add, del, _ := exp.GetExpectations("ns/web"); add != 0 || del != 1 {
		t.Errorf("expectations = %d adds, %d deletions; want 0, 1 (b still expected)", add, del)
	}
}

func TestBecomingReadyWakesUpAfterMinReadySeconds(t *testing.T) {
	rs := newRS(1)
	rs.Spec.MinReadySeconds = 5
	c, clk := newHandlerController(t, rs)
	old := podOf(rs, "a", time.Time{})
	old.ResourceVersion = "1"
	ready := podOf(rs, "a", t0)
	ready.ResourceVersion = "2"
	c.updatePod(old, ready)
	if !clk.HasWaiters() {
		t.Fatal("no wake-up armed for minReadySeconds")
	}
	if at, ok := c.wakeups.Pending("ns/web"); !ok || !at.Equal(t0.Add(6*time.Second)) {
		t.Errorf("wake-up = %v %v, want at minReadySeconds+1s", at, ok)
	}
	clk.Step(6 * time.Second)
	if _, ok := c.wakeups.Pending("ns/web"); ok {
		t.Error("wake-up did not fire")
	}
}

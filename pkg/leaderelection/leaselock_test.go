package leaderelection

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestLeaseLock(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	newLock := func(id string) *LeaseLock {
		l, err := NewLeaseLock(LeaseLockConfig{Client: env.Client, Namespace: ns, Name: "lock", Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newLock("a"), newLock("b")
	if got, want := a.Describe(), ns+"/lock"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if a.Identity() != "a" {
		t.Errorf("Identity = %q, want a", a.Identity())
	}

	if _, _, err := a.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing lease = %v, want NotFound", err)
	}
	// Lease times have microsecond precision on the wire.
	now := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
	rec := Record{HolderIdentity: "a", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now, LeaderTransitions: 2}
	v1, err := a.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, rec); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second Create = %v, want AlreadyExists", err)
	}
	equalTimes := cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })
	got, v, err := b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, got, equalTimes); diff != "" || v != v1 {
		t.Errorf("Get = %q (-want +got):\n%s\nversion %q, want %q", v, diff, v, v1)
	}

	// The Lease on the wire has the fields Kubernetes' electors use.
	leases := client.NewResource(env.Client, client.Leases).Namespace(ns)
	lease, err := leases.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ptr.To("a"), lease.Spec.HolderIdentity); diff != "" {
		t.Errorf("holderIdentity (-want +got):\n%s", diff)
	}
	if *lease.Spec.LeaseDurationSeconds != 15 || *lease.Spec.LeaseTransitions != 2 || !lease.Spec.RenewTime.Time.Equal(now) || !lease.Spec.AcquireTime.Time.Equal(now) {
		t.Errorf("lease spec = %+v", lease.Spec)
	}

	// Someone labels the Lease; updates keep the label.
	lease.Labels = map[string]string{"team": "x"}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, v, err = b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	rec2 := rec
	rec2.HolderIdentity, rec2.LeaderTransitions = "b", 3
	v2, err := b.Update(ctx, rec2, v)
	if err != nil {
		t.Fatal(err)
	}
	// a writes on top of a version that is no longer current: Conflict.
	if _, err := a.Update(ctx, rec, v1); !apierrors.IsConflict(err) {
		t.Errorf("Update on a stale version = %v, want Conflict", err)
	}
	got, v, err = a.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec2, got, equalTimes); diff != "" || v != v2 {
		t.Errorf("after the conflict (-want +got):\n%s\nversion %q, want %q", diff, v, v2)
	}
	lease, err = leases.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Labels["team"] != "x" {
		t.Errorf("labels after update = %v, want team=x kept", lease.Labels)
	}

	// A released record: no holder, zero times absent.
	released := Record{LeaseDurationSeconds: 1, LeaderTransitions: 3}
	if _, err := a.Update(ctx, released, v2); err != nil {
		t.Fatal(err)
	}
	got, _, err = b.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(released, got, equalTimes); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
}

func TestNewLeaseLockValidates(t *testing.T) {
	c, err := client.New(client.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  LeaseLockConfig
	}{
		{"no client", LeaseLockConfig{Namespace: "ns", Name: "n", Identity: "a"}},
		{"no namespace", LeaseLockConfig{Client: c, Name: "n", Identity: "a"}},
		{"no name", LeaseLockConfig{Client: c, Namespace: "ns", Identity: "a"}},
		{"no identity", LeaseLockConfig{Client: c, Namespace: "ns", Name: "n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewLeaseLock(tc.cfg); err == nil {
				t.Error("NewLeaseLock succeeded")
			}
		})
	}
}

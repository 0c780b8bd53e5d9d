package etcd

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/storage"
)

// waitForTimer spins until something waits on fc.
func waitForTimer(t testing.TB, fc *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the fake clock after 20s")
		}
		runtime.Gosched()
	}
}

func createCM(t testing.TB, s storage.Interface, name string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if err := s.Create(context.Background(), "/configmaps/ns/"+name, cm, out); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return out
}

func TestKeysLiveUnderThePrefix(t *testing.T) {
	prefix := fmt.Sprintf("/kplane-prefix-test-%d", prefixSeq.Add(1))
	b := newTestBackend(t, Config{Prefix: prefix + "/"})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	c := createCM(t, s, "a")
	resp, err := b.Client().Get(context.Background(), prefix+"/configmaps/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd key %s/configmaps/ns/a not found", prefix)
	}
	if got := fmt.Sprint(resp.Kvs[0].ModRevision); got != c.ResourceVersion {
		t.Errorf("mod revision %s, resourceVersion %s: want equal", got, c.ResourceVersion)
	}
	// The stored bytes do not carry the resourceVersion: etcd does.
	stored := &corev1.ConfigMap{}
	if err := (storage.JSONCodec{}).Decode(resp.Kvs[0].Value, stored); err != nil {
		t.Fatal(err)
	}
	if stored.ResourceVersion != "" {
		t.Errorf("stored object has resourceVersion %q", stored.ResourceVersion)
	}
}

func TestRunCompactsOneIntervalBehind(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	b := newTestBackend(t, Config{Clock: fc, CompactionInterval: time.Minute})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh cluster has no compaction count; earlier tests may have left one.
	if _, err := b.Client().Delete(context.Background(), compactRevKey); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// Each tick writes compactRevKey first; watching it tells when a tick began.
	startRev, err := b.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	ticks := b.Client().Watch(wctx, compactRevKey, clientv3.WithRev(int64(startRev)+1))
	tick := func() int64 {
		t.Helper()
		waitForTimer(t, fc)
		fc.Step(time.Minute)
		select {
		case resp := <-ticks:
			if err := resp.Err(); err != nil || len(resp.Events) != 1 {
				t.Fatalf("compaction key watch: %v, %d events", err, len(resp.Events))
			}
			return resp.Events[0].Kv.ModRevision
		case <-time.After(20 * time.Second):
			t.Fatal("no compaction tick within 20s")
		}
		return 0
	}
	old := createCM(t, s, "old")
	tick() // records the revision to compact to next time
	createCM(t, s, "new")
	tick() // compacts to the revision seen at the first tick
	tick() // begins only after that compaction finished
	err = s.GetList(context.Background(), "/configmaps", storage.ListOptions{
		Recursive: true, ResourceVersion: old.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	}, &corev1.ConfigMapList{})
	if !storage.IsExpired(err) {
		t.Fatalf("exact list at %s after compaction: %v, want expired", old.ResourceVersion, err)
	}
}

func TestCompactionCoordinatesBackends(t *testing.T) {
	b1 := newTestBackend(t, Config{})
	b2 := newTestBackend(t, Config{})
	ctx := context.Background()
	cur, err := b1.Client().Get(ctx, compactRevKey)
	if err != nil {
		t.Fatal(err)
	}
	var v0 int64
	if len(cur.Kvs) > 0 {
		v0 = cur.Kvs[0].Version
	}
	v1, r1, err := b1.compactStep(ctx, v0, 0)
	if err != nil || v1 != v0+1 {
		t.Fatalf("first step: version %d, %v; want %d", v1, err, v0+1)
	}
	// b2 starts from a stale count: it loses and learns the count.
	v2, _, err := b2.compactStep(ctx, v0, 0)
	if err != nil || v2 != v1 {
		t.Fatalf("losing step: version %d, %v; want %d", v2, err, v1)
	}
	// In the next interval b2 wins and compacts to what b1 saw.
	v3, _, err := b2.compactStep(ctx, v2, r1)
	if err != nil || v3 != v2+1 {
		t.Fatalf("winning step: version %d, %v; want %d", v3, err, v2+1)
	}
	_, err = b1.Client().Get(ctx, "x", clientv3.WithRev(r1-1))
	if err == nil {
		t.Errorf("revision %d still readable after compaction to %d", r1-1, r1)
	}
}

func TestRunWithCompactionDisabled(t *testing.T) {
	b := newTestBackend(t, Config{CompactionInterval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestSlowWatcherGetsExpired(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	b := newTestBackend(t, Config{Clock: fc, WatchBufferSize: 2, SlowWatcherTimeout: time.Minute})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 5 {
		createCM(t, s, fmt.Sprintf("c%d", i))
	}
	// The watcher fills its buffer and waits SlowWatcherTimeout for room.
	// Nothing is read until the watcher has given up and exited.
	waitForTimer(t, fc)
	fc.Step(time.Minute)
	select {
	case <-w.(*watcher).done:
	case <-time.After(20 * time.Second):
		t.Fatal("slow watcher still running 20s after its timeout")
	}
	var got []watch.EventType
	var last storage.Event
	for ev := range w.ResultChan() {
		got = append(got, ev.Type)
		last = ev
	}
	if len(got) == 0 || last.Type != watch.Error {
		t.Fatalf("slow watcher got %v, want events then an Error", got)
	}
	if st := last.Object.(*metav1.Status); st.Code != 410 {
		t.Errorf("slow watcher error %d %s, want 410", st.Code, st.Message)
	}
	// The buffer held c0 and c1; c0 made room for the error.
	if want := []watch.EventType{watch.Added, watch.Error}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("slow watcher got %v, want %v", got, want)
	}
}

func TestCloseEndsWatches(t *testing.T) {
	b := newTestBackend(t, Config{})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		t.Errorf("event %s after Close", ev.Type)
	}
	if _, err := b.Storage(cmConfig); err == nil {
		t.Error("Storage after Close succeeded")
	}
	if err := s.Get(context.Background(), "/configmaps/ns/a", storage.GetOptions{}, &corev1.ConfigMap{}); err == nil {
		t.Error("Get after Close succeeded")
	}
}

// A watcher too slow while it still sends the initial state is closed
// with Expired too, and sends nothing after: it must not go on to watch
// (the initial events of objects created before the watch began).
func TestSlowWatcherExpiredDuringInitialEvents(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	b := newTestBackend(t, Config{Clock: fc, WatchBufferSize: 2, SlowWatcherTimeout: time.Minute})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		createCM(t, s, fmt.Sprintf("c%d", i))
	}
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitForTimer(t, fc)
	fc.Step(time.Minute)
	select {
	case <-w.(*watcher).done:
	case <-time.After(20 * time.Second):
		t.Fatal("slow watcher still running 20s after its timeout")
	}
	var got []watch.EventType
	for ev := range w.ResultChan() {
		got = append(got, ev.Type)
	}
	if len(got) != 2 || got[0] != watch.Added || got[1] != watch.Error {
		t.Fatalf("events %v, want one Added then the Expired error", got)
	}
}

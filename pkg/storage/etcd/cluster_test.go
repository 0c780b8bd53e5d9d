package etcd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/cacher"
	"github.com/kplane/kplane/pkg/storage/storagetest"
)

// startCluster starts a 3-member etcd cluster on loopback, each member in
// this process, and stops the members still running at cleanup.
func startCluster(t *testing.T) []*Embedded {
	t.Helper()
	const n = 3
	names := make([]string, n)
	clientURLs := make([]string, n)
	peerURLs := make([]string, n)
	var initial []string
	for i := range n {
		var err error
		names[i] = fmt.Sprintf("m%d", i)
		if clientURLs[i], err = freeLoopbackURL(); err != nil {
			t.Fatal(err)
		}
		if peerURLs[i], err = freeLoopbackURL(); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, names[i]+"="+peerURLs[i])
	}
	members := make([]*Embedded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			members[i], errs[i] = StartEmbedded(context.Background(), EmbeddedConfig{
				DataDir:        t.TempDir(),
				Name:           names[i],
				ClientURL:      clientURLs[i],
				PeerURL:        peerURLs[i],
				InitialCluster: strings.Join(initial, ","),
				ClusterToken:   "kplane-cluster-test",
				UnsafeNoFsync:  true,
			})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, m := range members {
			if m != nil {
				m.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	return members
}

func clientURLs(members []*Embedded) []string {
	var urls []string
	for _, m := range members {
		urls = append(urls, m.ClientURL())
	}
	return urls
}

// TestCluster runs two backends (as two API servers would) on a 3-member
// cluster: writes through one are watched through the other's watch
// cache, and both go on when the leader stops. The conformance suite, linearizability check
// included, passes on the cluster too.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped under -short")
	}
	members := startCluster(t)
	urls := clientURLs(members)
	newBackend := func(t testing.TB, prefix string) *Backend {
		t.Helper()
		b, err := New(Config{Endpoints: urls, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}

	t.Run("Conformance", func(t *testing.T) {
		var seq int
		storagetest.Run(t, func(t testing.TB) storage.Backend {
			seq++
			return newBackend(t, fmt.Sprintf("/conformance-%d", seq))
		})
	})

	t.Run("CRDAcrossAPIServers", func(t *testing.T) { testCRDAcrossAPIServers(t, urls) })

	t.Run("TwoAPIServers", func(t *testing.T) {
		// Its own cluster: it stops a member.
		testTwoAPIServers(t, startCluster(t))
	})

	t.Run("WriteOneWatchOtherSurvivesLeaderStop", func(t *testing.T) {
		// The second API server serves watches from its watch cache, which
		// re-watches etcd when the leader change breaks its etcd watch.
		writer := newBackend(t, "/failover")
		watcher, err := cacher.New(cacher.Config{Backend: newBackend(t, "/failover")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { watcher.Close() })
		ws, err := writer.Storage(cmConfig)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := watcher.Storage(cmConfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		w, err := rs.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		// write creates name, retrying while the cluster elects a leader;
		// it returns the acknowledged object.
		write := func(name string) *corev1.ConfigMap {
			t.Helper()
			var lastErr error
			for range 50 {
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				out := &corev1.ConfigMap{}
				lastErr = ws.Create(wctx, "/configmaps/ns/"+name, newTestCM(name), out)
				cancel()
				if lastErr == nil {
					return out
				}
				if storage.IsExists(lastErr) {
					// An earlier attempt landed without its answer.
					if err := rs.Get(ctx, "/configmaps/ns/"+name, storage.GetOptions{}, out); err == nil {
						return out
					}
				}
			}
			t.Fatalf("create %s: %v", name, lastErr)
			return nil
		}
		var acked []*corev1.ConfigMap
		for i := range 10 {
			acked = append(acked, write(fmt.Sprintf("before-%d", i)))
		}
		leader := -1
		for i, m := range members {
			if m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
				leader = i
			}
		}
		if leader < 0 {
			t.Fatal("no member is the leader")
		}
		t.Logf("stopping leader m%d", leader)
		if err := members[leader].Close(); err != nil {
			t.Fatal(err)
		}
		members[leader] = nil
		for i := range 10 {
			acked = append(acked, write(fmt.Sprintf("after-%d", i)))
		}
		// The watch through the other backend sees every acknowledged
		// write once, in order.
		for _, want := range acked {
			var ev storage.Event
			select {
			case ev = <-w.ResultChan():
			case <-time.After(30 * time.Second):
				t.Fatalf("no event for %s within 30s", want.Name)
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Added || !ok || cm.Name != want.Name || cm.ResourceVersion != want.ResourceVersion {
				t.Fatalf("watch event %s %v, want ADDED %s@%s", ev.Type, ev.Object, want.Name, want.ResourceVersion)
			}
		}
		l := &corev1.ConfigMapList{}
		if err := rs.GetList(ctx, "/configmaps", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != len(acked) {
			t.Errorf("list through the other backend has %d items, want %d", len(l.Items), len(acked))
		}
	})
}

func newTestCM(name string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "ns", name
	cm.Data = map[string]string{"v": name}
	return cm
}

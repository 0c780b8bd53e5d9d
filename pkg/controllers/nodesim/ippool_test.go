package nodesim

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

func TestNodePodCIDRsDistinct(t *testing.T) {
	seen := map[netip.Prefix]int{}
	for i := range 65536 {
		c := nodePodCIDR(i)
		if c.Bits() != 24 || !netip.MustParsePrefix("10.0.0.0/8").Contains(c.Addr()) {
			t.Fatalf("node %d: pod CIDR %s, want a /24 in 10.0.0.0/8", i, c)
		}
		if j, dup := seen[c]; dup {
			t.Fatalf("nodes %d and %d share pod CIDR %s", j, i, c)
		}
		seen[c] = i
	}
	if got := nodePodCIDR(1).String(); got != "10.244.1.0/24" {
		t.Errorf("node 1 pod CIDR = %s, want 10.244.1.0/24", got)
	}
}

func TestIPPool(t *testing.T) {
	cidr := netip.MustParsePrefix("10.244.3.0/24")
	p := newIPPool(cidr)
	p.hold(netip.MustParseAddr("10.244.3.3"), "ns/old")
	got := map[netip.Addr]string{}
	for i := range 253 - 1 {
		key := fmt.Sprintf("ns/p%d", i)
		a, err := p.allocate(key)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if !cidr.Contains(a) || a == cidr.Addr() || a == netip.MustParseAddr("10.244.3.1") || a == netip.MustParseAddr("10.244.3.255") {
			t.Fatalf("allocated %s: network, gateway, broadcast or outside %s", a, cidr)
		}
		if a == netip.MustParseAddr("10.244.3.3") {
			t.Fatalf("allocated %s, held by another pod", a)
		}
		if other, dup := got[a]; dup {
			t.Fatalf("%s handed to %s and %s", a, other, key)
		}
		got[a] = key
	}
	if a, err := p.allocate("ns/extra"); err == nil {
		t.Fatalf("full pool handed out %s", a)
	}
	// A release by a pod that does not hold the address frees nothing.
	p.release(netip.MustParseAddr("10.244.3.3"), "ns/p0")
	if _, err := p.allocate("ns/extra"); err == nil {
		t.Fatal("release by a non-holder freed an address")
	}
	p.release(netip.MustParseAddr("10.244.3.3"), "ns/old")
	p.release(netip.MustParseAddr("10.244.3.100"), got[netip.MustParseAddr("10.244.3.100")])
	// The next address is searched from past the last handed out, wrapping.
	for _, want := range []string{"10.244.3.3", "10.244.3.100"} {
		a, err := p.allocate("ns/new-" + want)
		if err != nil || a != netip.MustParseAddr(want) {
			t.Errorf("allocate = %s, %v, want %s", a, err, want)
		}
	}
}

// TestSyncerIPs checks the pod IP bookkeeping: a pool seeded from the
// cache skips the IPs its pods hold, and IPs come free when pods finish or
// go away.
func TestSyncerIPs(t *testing.T) {
	idx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	cidr := nodePodCIDR(0)
	first := firstPodIP(cidr)
	pod := func(name, ip string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{NodeName: "a"},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
		}
	}
	// From an earlier run: a running pod on the first address, a finished
	// one on the second.
	for _, p := range []*corev1.Pod{pod("live", first.String(), corev1.PodRunning), pod("done", first.Next().String(), corev1.PodSucceeded)} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	s := &syncer{
		podLister: cache.NewLister(idx, schema.GroupResource{Resource: "pods"}),
		nodes:     newNodeSet([]nodeSpec{{name: "a", podCIDR: cidr}}),
		assumed:   map[string]string{}, bound: map[string]string{}, load: map[string]int64{}, states: map[string]*podState{},
	}
	// The informer told of the live pod before the pool was made.
	s.observe(pod("live", first.String(), corev1.PodRunning))
	ipOf := func(name string) string {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		ip, err := s.podIPLocked("ns/"+name, pod(name, "", corev1.PodPending))
		if err != nil {
			t.Fatal(err)
		}
		return ip
	}
	if got, want := ipOf("new1"), first.Next().String(); got != want {
		t.Errorf("first new pod got %s, want %s (the finished pod's, the live one's skipped)", got, want)
	}
	if got := ipOf("new1"); got != first.Next().String() {
		t.Errorf("asked again, new1 got %s, want its own %s", got, first.Next())
	}
	third := first.Next().Next().String()
	if got := ipOf("new2"); got != third {
		t.Errorf("second new pod got %s, want %s", got, third)
	}
	// The live pod finishes and new2 goes away: both addresses come free,
	// and the search wraps around to them once the range is used up.
	s.observe(pod("live", first.String(), corev1.PodSucceeded))
	s.unobserve("ns/new2")
	s.mu.Lock()
	held := len(s.pools["a"].holders)
	s.mu.Unlock()
	if held != 1 {
		t.Errorf("%d addresses held after a finish and a deletion, want 1", held)
	}
	seen := map[string]bool{}
	for i := range 252 {
		ip := ipOf(fmt.Sprintf("fill%d", i))
		if seen[ip] || ip == first.Next().String() {
			t.Fatalf("address %s handed out twice", ip)
		}
		seen[ip] = true
	}
	if !seen[first.String()] || !seen[third] {
		t.Errorf("freed addresses %s and %s were not reused", first, third)
	}
}

package nodesim

import (
	"fmt"
	"net/netip"
)

// ipPool hands out the pod IPs of one simulated node's pod CIDR. It is
// not safe for concurrent use: the syncer guards it with its mutex.
type ipPool struct {
	cidr netip.Prefix
	// holders maps every address held by a pod on the node, inside the
	// CIDR or not, to that pod's key. An address is in it from the moment
	// it is handed out (before the pod's status shows it) or seen in a
	// pod's status, until the pod finishes or goes away.
	holders map[netip.Addr]string
	// next is the address tried first, just past the last one handed out,
	// so that a freed address is not at once reused.
	next netip.Addr
}

func newIPPool(cidr netip.Prefix) *ipPool {
	return &ipPool{cidr: cidr, holders: map[netip.Addr]string{}, next: firstPodIP(cidr)}
}

// firstPodIP skips the network address and the first host address, which
// a bridge network gives its gateway.
func firstPodIP(cidr netip.Prefix) netip.Addr {
	return cidr.Masked().Addr().Next().Next()
}

// usable reports whether a is an address the pool hands out: inside the
// CIDR, past the gateway and before the broadcast address.
func (p *ipPool) usable(a netip.Addr) bool {
	return p.cidr.Contains(a) && a.Compare(firstPodIP(p.cidr)) >= 0 && p.cidr.Contains(a.Next())
}

// allocate hands out the first free address from next on, wrapping
// around, to the pod key; it fails when every address is held.
func (p *ipPool) allocate(key string) (netip.Addr, error) {
	start := p.next
	if !p.usable(start) {
		start = firstPodIP(p.cidr)
	}
	for a := start; ; {
		if _, held := p.holders[a]; !held {
			p.holders[a] = key
			p.next = a.Next()
			return a, nil
		}
		if a = a.Next(); !p.usable(a) {
			a = firstPodIP(p.cidr)
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("no free pod IP in %s", p.cidr)
		}
	}
}

// hold records that the pod key holds a.
func (p *ipPool) hold(a netip.Addr, key string) { p.holders[a] = key }

// release frees a if the pod key holds it.
func (p *ipPool) release(a netip.Addr, key string) {
	if p.holders[a] == key {
		delete(p.holders, a)
	}
}

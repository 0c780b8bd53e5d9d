//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served and maintained, as kube-controller-manager 1.37 still does

package endpoints

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// MaxCapacity is the most addresses an Endpoints object holds, as in
// Kubernetes; beyond it the addresses are truncated and the object
// annotated with corev1.EndpointsOverCapacity.
const MaxCapacity = 1000

// addressKey identifies an address across subsets: IP and pod.
type addressKey struct {
	ip  string
	uid string
}

func keyOf(a *corev1.EndpointAddress) addressKey {
	k := addressKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = string(a.TargetRef.UID)
	}
	return k
}

// noPort stands for "no ports" for subsets of headless Services without
// ports.
var noPort = corev1.EndpointPort{Port: -1}

// repack merges subsets into the fewest subsets the API's N-to-M form
// allows: ports offered by exactly the same addresses (with the same
// readiness) share a subset. The result is sorted: addresses by IP and
// pod, ports by name, number and protocol, subsets by their first address.
func repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	addrs := map[addressKey]corev1.EndpointAddress{}
	// byPort maps each port to its addresses and their readiness.
	byPort := map[corev1.EndpointPort]map[addressKey]bool{}
	var portOrder []corev1.EndpointPort
	mark := func(port corev1.EndpointPort, list []corev1.EndpointAddress, ready bool) {
		set, ok := byPort[port]
		if !ok {
			set = map[addressKey]bool{}
			byPort[port] = set
			portOrder = append(portOrder, port)
		}
		for i := range list {
			k := keyOf(&list[i])
			if _, ok := addrs[k]; !ok {
				addrs[k] = list[i]
			}
			if ready || !set[k] {
				set[k] = ready
			}
		}
	}
	for _, ss := range subsets {
		ports := ss.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPort}
		}
		for _, p := range ports {
			mark(p, ss.Addresses, true)
			mark(p, ss.NotReadyAddresses, false)
		}
	}
	// Group the ports by their address set.
	type group struct {
		set   map[addressKey]bool
		ports []corev1.EndpointPort
	}
	var groups []*group
	bySet := map[string]*group{}
	for _, p := range portOrder {
		set := byPort[p]
		k := setKey(set)
		g, ok := bySet[k]
		if !ok {
			g = &group{set: set}
			bySet[k] = g
			groups = append(groups, g)
		}
		if p != noPort {
			g.ports = append(g.ports, p)
		}
	}
	out := make([]corev1.EndpointSubset, 0, len(groups))
	for _, g := range groups {
		var ss corev1.EndpointSubset
		for k, ready := range g.set {
			if ready {
				ss.Addresses = append(ss.Addresses, addrs[k])
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, addrs[k])
			}
		}
		slices.SortFunc(ss.Addresses, compareAddresses)
		slices.SortFunc(ss.NotReadyAddresses, compareAddresses)
		slices.SortFunc(g.ports, comparePorts)
		ss.Ports = g.ports
		out = append(out, ss)
	}
	slices.SortFunc(out, compareSubsets)
	return out
}

func setKey(set map[addressKey]bool) string {
	parts := make([]string, 0, len(set))
	for k, ready := range set {
		parts = append(parts, k.ip+"/"+k.uid+"/"+strconv.FormatBool(ready))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func compareAddresses(a, b corev1.EndpointAddress) int {
	ka, kb := keyOf(&a), keyOf(&b)
	return cmp.Or(strings.Compare(ka.ip, kb.ip), strings.Compare(ka.uid, kb.uid))
}

func comparePorts(a, b corev1.EndpointPort) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
}

func compareSubsets(a, b corev1.EndpointSubset) int {
	first := func(ss corev1.EndpointSubset) corev1.EndpointAddress {
		if len(ss.Addresses) > 0 {
			return ss.Addresses[0]
		}
		if len(ss.NotReadyAddresses) > 0 {
			return ss.NotReadyAddresses[0]
		}
		return corev1.EndpointAddress{}
	}
	if c := compareAddresses(first(a), first(b)); c != 0 {
		return c
	}
	if len(a.Ports) > 0 && len(b.Ports) > 0 {
		if c := comparePorts(a.Ports[0], b.Ports[0]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a.Ports), len(b.Ports))
}

// truncate cuts subsets to MaxCapacity addresses, as Kubernetes does, and
// reports whether it cut: not-ready addresses go first, each subset
// keeping its share (rounded up, within what is left); when the ready
// addresses alone are too many, every not-ready one goes and the ready
// ones are cut by share.
func truncate(subsets []corev1.EndpointSubset) bool {
	ready, notReady := 0, 0
	for _, ss := range subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	if ready+notReady <= MaxCapacity {
		return false
	}
	cutReady := ready > MaxCapacity
	limit, total := MaxCapacity-ready, notReady
	if cutReady {
		limit, total = MaxCapacity, ready
	}
	left := limit
	for i := range subsets {
		ss := &subsets[i]
		n := len(ss.NotReadyAddresses)
		if cutReady {
			n = len(ss.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(limit))), left)
		if cutReady {
			ss.Addresses = ss.Addresses[:min(share, len(ss.Addresses))]
			ss.NotReadyAddresses = []corev1.EndpointAddress{}
			left -= len(ss.Addresses)
		} else {
			ss.NotReadyAddresses = ss.NotReadyAddresses[:min(share, len(ss.NotReadyAddresses))]
			left -= len(ss.NotReadyAddresses)
		}
	}
	return true
}

// capacityAnnotationCorrect reports whether the over-capacity annotation
// of annotations is as subsets need: they are within MaxCapacity and the
// annotation is not there.
func capacityAnnotationCorrect(annotations map[string]string, subsets []corev1.EndpointSubset) bool {
	n := 0
	for _, ss := range subsets {
		n += len(ss.Addresses) + len(ss.NotReadyAddresses)
	}
	if n > MaxCapacity {
		return false
	}
	_, ok := annotations[corev1.EndpointsOverCapacity]
	return !ok
}

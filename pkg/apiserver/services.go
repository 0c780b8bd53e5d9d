//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// The defaults of Config.ServiceClusterIPRange and Config.ServiceNodePortRange,
// as in kube-apiserver.
const (
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	DefaultServiceNodePortRange  = "30000-32767"
)

// kubernetesServiceName names the Service, Endpoints, EndpointSlice and
// ServiceCIDR of the API server itself.
const kubernetesServiceName = "kubernetes"

// nodePortRoot is the storage key below which each claimed node port has
// one key, nodePortRoot/<port>. No resource serves it: a built-in's root is
// its lower-case plural and a CRD's "/<plural>.<group>", neither of which
// may hold an underscore. It has one segment, as the watch cache expects
// of a resource's root.
const nodePortRoot = "/kplane_servicenodeports"

// The labels Kubernetes puts on the IPAddresses of Services.
const (
	ipFamilyLabel  = "ipaddress.kubernetes.io/ip-family"
	managedByLabel = "ipaddress.kubernetes.io/managed-by"
	managedByValue = "ipallocator.k8s.io"
)

var (
	servicesGVR    = corev1.SchemeGroupVersion.WithResource("services")
	endpointsGVR   = corev1.SchemeGroupVersion.WithResource("endpoints")
	sliceGVR       = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	ipAddressesGVR = networkingv1.SchemeGroupVersion.WithResource("ipaddresses")
	serviceCIDRGVR = networkingv1.SchemeGroupVersion.WithResource("servicecidrs")
)

// writeHook is what a resource does beside storing its objects: Services
// claim cluster IPs and node ports before they are stored and give them
// back once deleted. Claims live in storage, so they hold across API
// servers sharing a backend and across restarts.
type writeHook interface {
	// claim takes what obj, about to be stored, needs beyond what old
	// (nil on create) holds, and fills it into obj. undo gives back what
	// claim took, for a write that then fails; done gives back what old
	// held and obj no longer needs, once the write is stored. Neither is
	// nil when err is nil.
	claim(ctx context.Context, obj, old runtime.Object) (undo, done func(), err error)
	// release gives back what obj, now deleted, held.
	release(ctx context.Context, obj runtime.Object)
	// dryRun returns the hook of dry-run writes: claim fills obj in and
	// fails as a real one would, but takes nothing.
	dryRun() writeHook
}

// hookTxn follows the claims of one update, whose computation storage
// may retry: each attempt first gives back what the previous one took.
// The zero value, and a nil *hookTxn, do nothing.
type hookTxn struct {
	ctx        context.Context
	hook       writeHook
	undo, done func()
}

// updateTxn returns the claims tracker of an update of res, nil when res
// has no hook. A dry run's claims take nothing.
func (res *resource) updateTxn(ctx context.Context, dryRun bool) *hookTxn {
	if res.hook == nil {
		return nil
	}
	if dryRun {
		return &hookTxn{ctx: ctx, hook: res.hook.dryRun()}
	}
	return &hookTxn{ctx: ctx, hook: res.hook}
}

// checkCreate fills in what a dry-run create of obj would claim, failing
// as the create would, and takes nothing.
func (res *resource) checkCreate(ctx context.Context, obj runtime.Object) error {
	if res.hook == nil {
		return nil
	}
	_, _, err := res.hook.dryRun().claim(ctx, obj, nil)
	return err
}

// attempt claims for one computation of the update.
func (t *hookTxn) attempt(obj, old runtime.Object) error {
	if t == nil {
		return nil
	}
	if t.undo != nil {
		t.undo()
	}
	t.undo, t.done = nil, nil
	undo, done, err := t.hook.claim(t.ctx, obj, old)
	if err != nil {
		return err
	}
	t.undo, t.done = undo, done
	return nil
}

// finish gives back the last attempt's claims when the update failed
// (err not nil), or what the old state no longer needs when it succeeded.
func (t *hookTxn) finish(err error) {
	if t == nil {
		return
	}
	if err != nil && t.undo != nil {
		t.undo()
	}
	if err == nil && t.done != nil {
		t.done()
	}
}

// claimCreate claims what a new object of res needs; the returned func
// gives it back and is never nil.
func (res *resource) claimCreate(ctx context.Context, obj runtime.Object) (func(), error) {
	if res.hook == nil {
		return func() {}, nil
	}
	undo, _, err := res.hook.claim(ctx, obj, nil)
	return undo, err
}

// released gives back what a deleted object of res held.
func (res *resource) released(ctx context.Context, obj runtime.Object) {
	if res.hook != nil {
		res.hook.release(context.WithoutCancel(ctx), obj)
	}
}

// deprecation is the warning every request of a deprecated built-in
// resource gets (Endpoints), or "".
func (res *resource) deprecation() string {
	if d, ok := res.strategy.(registry.Deprecated); ok {
		return d.DeprecationWarning()
	}
	return ""
}

// setupServices gives the services resource its allocator and creates
// the ServiceCIDR of the configured range. It does nothing when Services
// or IPAddresses are not served.
func (s *Server) setupServices(ctx context.Context) error {
	svcRes, ipRes := s.lookup(servicesGVR), s.lookup(ipAddressesGVR)
	if svcRes == nil || ipRes == nil {
		return nil
	}
	ipRange := s.cfg.ServiceClusterIPRange
	if ipRange == "" {
		ipRange = DefaultServiceClusterIPRange
	}
	prefix, err := parseServiceCIDR(ipRange)
	if err != nil {
		return err
	}
	portRange := s.cfg.ServiceNodePortRange
	if portRange == "" {
		portRange = DefaultServiceNodePortRange
	}
	first, last, err := parsePortRange(portRange)
	if err != nil {
		return err
	}
	portStore, err := s.cfg.Backend.Storage(storage.ResourceConfig{
		Codec:       s.cfg.Codec,
		NewFunc:     func() runtime.Object { return &networkingv1.IPAddress{} },
		NewListFunc: func() runtime.Object { return &networkingv1.IPAddressList{} },
	})
	if err != nil {
		return fmt.Errorf("apiserver: storage for node ports: %w", err)
	}
	svcRes.hook = &serviceAllocator{
		s: s, svcRes: svcRes, ipRes: ipRes, prefix: prefix,
		ports: portStore, firstPort: first, lastPort: last, portRange: portRange,
	}
	return s.ensureServiceCIDR(ctx, prefix)
}

// parseServiceCIDR parses an IPv4 range of cluster IPs. It must leave room
// for the network and broadcast addresses and the kubernetes Service.
func parseServiceCIDR(v string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("apiserver: service cluster IP range %q: %w", v, err)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("apiserver: service cluster IP range %q: only IPv4 ranges are supported", v)
	}
	if p.Bits() > 30 || p.Bits() < 8 {
		return netip.Prefix{}, fmt.Errorf("apiserver: service cluster IP range %q: the prefix length must be between 8 and 30", v)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("apiserver: service cluster IP range %q: not a network address (%s)", v, p.Masked())
	}
	return p, nil
}

// parsePortRange parses "first-last" (or one port).
func parsePortRange(v string) (int, int, error) {
	lo, hi, found := strings.Cut(v, "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, fmt.Errorf("apiserver: service node port range %q: want first-last, within 1-65535", v)
	}
	return first, last, nil
}

// serviceAllocator claims cluster IPs and node ports for Services.
//
// A cluster IP is claimed by creating the networking.k8s.io/v1 IPAddress
// named by it, a node port by creating the key nodePortRoot/<port>;
// storage refuses a create of an existing key, so of concurrent claims,
// from this server or another on the same backend, exactly one wins.
// Dynamic allocation reads the claims once, then tries free candidates
// from a random start, skipping any another writer took meanwhile.
type serviceAllocator struct {
	s      *Server
	svcRes *resource
	ipRes  *resource
	prefix netip.Prefix
	// ports stores the node port claims, objects of IPAddress shape: the
	// port as the name and the Service as parentRef.
	ports               storage.Interface
	firstPort, lastPort int
	portRange           string
	// dry makes claims only check that they would succeed.
	dry bool
}

func (a *serviceAllocator) dryRun() writeHook {
	c := *a
	c.dry = true
	return &c
}

var _ writeHook = (*serviceAllocator)(nil)

// The allocators' answers, worded as
// Kubernetes words them.
var (
	errIPAllocated   = errors.New("provided IP is already allocated")
	errPortAllocated = errors.New("provided port is already allocated")
	errFull          = errors.New("range is full")
)

// claims is what one claim call took, to give back on undo.
type claims struct {
	ips   []netip.Addr
	ports []int
}

func (a *serviceAllocator) claim(ctx context.Context, obj, oldObj runtime.Object) (undo, done func(), err error) {
	svc := obj.(*corev1.Service)
	var old *corev1.Service
	if oldObj != nil {
		old = oldObj.(*corev1.Service)
	}
	var took claims
	giveBack := func() { a.giveBack(context.WithoutCancel(ctx), svc, took) }
	defer func() {
		if err != nil {
			giveBack()
		}
	}()
	heldIPs, heldPorts := heldBy(old)
	if registry.NeedsClusterIP(svc) {
		if err := a.claimClusterIP(ctx, svc, heldIPs, &took); err != nil {
			return nil, nil, err
		}
	}
	if err := a.claimNodePorts(ctx, svc, heldPorts, &took); err != nil {
		return nil, nil, err
	}
	// What old held and svc does not.
	nowIPs, nowPorts := heldBy(svc)
	var drop claims
	for ip := range heldIPs {
		if !nowIPs[ip] {
			drop.ips = append(drop.ips, ip)
		}
	}
	for p := range heldPorts {
		if !nowPorts[p] {
			drop.ports = append(drop.ports, p)
		}
	}
	done = func() {
		if old != nil {
			a.giveBack(context.WithoutCancel(ctx), old, drop)
		}
	}
	return giveBack, done, nil
}

func (a *serviceAllocator) release(ctx context.Context, obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	ips, ports := heldBy(svc)
	var all claims
	for ip := range ips {
		all.ips = append(all.ips, ip)
	}
	for p := range ports {
		all.ports = append(all.ports, p)
	}
	a.giveBack(ctx, svc, all)
}

// heldBy returns the cluster IPs and node ports a stored Service holds.
func heldBy(svc *corev1.Service) (map[netip.Addr]bool, map[int]bool) {
	ips, ports := map[netip.Addr]bool{}, map[int]bool{}
	if svc == nil {
		return ips, ports
	}
	if registry.NeedsClusterIP(svc) {
		for _, v := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(v); err == nil {
				ips[ip] = true
			}
		}
	}
	if registry.HasNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				ports[int(p.NodePort)] = true
			}
		}
	}
	if registry.NeedsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort != 0 {
		ports[int(svc.Spec.HealthCheckNodePort)] = true
	}
	return ips, ports
}

// giveBack deletes the claims of svc in c, each only while svc still
// holds it (a claim is never taken from another Service).
func (a *serviceAllocator) giveBack(ctx context.Context, svc *corev1.Service, c claims) {
	if a.dry {
		return
	}
	for _, ip := range c.ips {
		out := &networkingv1.IPAddress{}
		err := a.ipRes.store.Delete(ctx, a.ipRes.key("", ip.String()), out, nil, ownedBy(svc))
		if err != nil && !storage.IsNotFound(err) && !errors.Is(err, errNotOwner) {
			a.s.log.Error("release cluster IP", "ip", ip.String(), "service", svc.Namespace+"/"+svc.Name, "error", err)
		}
	}
	for _, p := range c.ports {
		out := &networkingv1.IPAddress{}
		err := a.ports.Delete(ctx, nodePortKey(p), out, nil, ownedBy(svc))
		if err != nil && !storage.IsNotFound(err) && !errors.Is(err, errNotOwner) {
			a.s.log.Error("release node port", "port", p, "service", svc.Namespace+"/"+svc.Name, "error", err)
		}
	}
}

var errNotOwner = errors.New("claimed by another object")

// ownedBy vetoes deleting a claim that does not name svc.
func ownedBy(svc *corev1.Service) storage.ValidateFunc {
	return func(_ context.Context, current runtime.Object) error {
		ref := current.(*networkingv1.IPAddress).Spec.ParentRef
		if ref == nil || ref.Resource != "services" || ref.Namespace != svc.Namespace || ref.Name != svc.Name {
			return errNotOwner
		}
		return nil
	}
}

func nodePortKey(p int) string { return nodePortRoot + "/" + strconv.Itoa(p) }

func parentRef(svc *corev1.Service) *networkingv1.ParentReference {
	return &networkingv1.ParentReference{Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name}
}

// claimClusterIP claims the cluster IP svc asks for, or the next free one
// when it asks for none; held are the addresses svc already holds.
func (a *serviceAllocator) claimClusterIP(ctx context.Context, svc *corev1.Service, held map[netip.Addr]bool, took *claims) error {
	if len(svc.Spec.ClusterIPs) == 0 {
		ip, err := a.nextIP(ctx, svc)
		if err != nil {
			return err
		}
		took.ips = append(took.ips, ip)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip.String(), []string{ip.String()}
		return nil
	}
	for _, v := range svc.Spec.ClusterIPs {
		ip, err := netip.ParseAddr(v)
		if err != nil {
			continue // validation reported it
		}
		if held[ip] {
			continue
		}
		if err := a.checkIPInRange(ip); err != nil {
			return a.invalidIP(svc, v, err)
		}
		switch err := a.createIPAddress(ctx, ip, svc); {
		case err == nil:
			took.ips = append(took.ips, ip)
		case errors.Is(err, errIPAllocated):
			return a.invalidIP(svc, v, err)
		default:
			return err
		}
	}
	return nil
}

func (a *serviceAllocator) invalidIP(svc *corev1.Service, ip string, err error) error {
	return a.svcRes.invalid(svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", ip, err))})
}

// checkIPInRange refuses an address outside the range, or its network or
// broadcast address.
func (a *serviceAllocator) checkIPInRange(ip netip.Addr) error {
	off, ok := a.ipOffset(ip)
	if !ok || off == 0 || off == a.ipSize()-1 {
		return fmt.Errorf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, a.prefix)
	}
	return nil
}

func (a *serviceAllocator) ipSize() uint64 { return 1 << (32 - a.prefix.Bits()) }

func (a *serviceAllocator) ipOffset(ip netip.Addr) (uint64, bool) {
	if !ip.Is4() || !a.prefix.Contains(ip) {
		return 0, false
	}
	return uint64(ipv4(ip) - ipv4(a.prefix.Addr())), true
}

func ipv4(ip netip.Addr) uint32 {
	b := ip.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (a *serviceAllocator) ipAt(off uint64) netip.Addr {
	v := ipv4(a.prefix.Addr()) + uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// createIPAddress claims ip for svc; errIPAllocated when it is taken.
func (a *serviceAllocator) createIPAddress(ctx context.Context, ip netip.Addr, svc *corev1.Service) error {
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{
			ipFamilyLabel: string(corev1.IPv4Protocol), managedByLabel: managedByValue,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: parentRef(svc)},
	}
	if a.dry {
		return a.checkFree(ctx, a.ipRes.store, a.ipRes.key("", ip.String()), errIPAllocated)
	}
	_, err := a.s.createObject(ctx, a.ipRes, "", obj, false)
	if apierrors.IsAlreadyExists(err) {
		return errIPAllocated
	}
	return err
}

// nextIP claims a free address of the range for svc. The first address
// after the network address is the kubernetes Service's and never given
// out here. As in Kubernetes, the low band of a range is kept for
// requested addresses as long as the rest has room.
func (a *serviceAllocator) nextIP(ctx context.Context, svc *corev1.Service) (netip.Addr, error) {
	list := &networkingv1.IPAddressList{}
	if err := a.ipRes.store.GetList(ctx, a.ipRes.prefix(""), storage.ListOptions{Recursive: true}, list); err != nil {
		return netip.Addr{}, err
	}
	used := make(map[uint64]bool, len(list.Items))
	for _, item := range list.Items {
		if ip, err := netip.ParseAddr(item.Name); err == nil {
			if off, ok := a.ipOffset(ip); ok {
				used[off] = true
			}
		}
	}
	size := a.ipSize()
	// Offsets 2 .. size-2: not the network, broadcast or kubernetes address.
	var found netip.Addr
	err := scanBanded(2, size-2, staticBand(size, 16, 256), func(off uint64) (bool, error) {
		if used[off] {
			return false, nil
		}
		ip := a.ipAt(off)
		switch err := a.createIPAddress(ctx, ip, svc); {
		case err == nil:
			found = ip
			return true, nil
		case errors.Is(err, errIPAllocated):
			used[off] = true
			return false, nil
		default:
			return false, err
		}
	})
	if err != nil {
		return netip.Addr{}, err
	}
	if !found.IsValid() {
		return netip.Addr{}, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", errFull))
	}
	return found, nil
}

// staticBand is the size of the low band of a range of n values kept,
// as in Kubernetes, for requested values: n/div, at least 16, at most hi.
func staticBand(n, div, hi uint64) uint64 {
	return min(max(16, n/div), hi)
}

// scanBanded calls try on values of [first, last] until it reports done:
// those from first+band up from a random start, wrapping around, then
// those of the low band likewise.
func scanBanded(first, last, band uint64, try func(uint64) (bool, error)) error {
	if last < first {
		return nil
	}
	split := min(first+band, last+1)
	for _, r := range [][2]uint64{{split, last + 1}, {first, split}} {
		lo, end := r[0], r[1]
		if end <= lo {
			continue
		}
		n := end - lo
		start := rand.Uint64N(n)
		for i := range n {
			done, err := try(lo + (start+i)%n)
			if err != nil || done {
				return err
			}
		}
	}
	return nil
}

// claimNodePorts claims the node ports svc asks for and allocates the
// missing ones; held are those svc already holds. Ports of one Service
// with the same port number (TCP and UDP of DNS) share a node port.
func (a *serviceAllocator) claimNodePorts(ctx context.Context, svc *corev1.Service, held map[int]bool, took *claims) error {
	mine := map[int]bool{}
	for p := range held {
		mine[p] = true
	}
	claimOne := func(p int, fld *field.Path, msgf func(error) string) error {
		if mine[p] {
			return nil
		}
		err := a.checkPortInRange(p)
		if err == nil {
			err = a.createPortClaim(ctx, p, svc)
		}
		if err == nil {
			mine[p] = true
			took.ports = append(took.ports, p)
			return nil
		}
		if !errors.Is(err, errPortAllocated) && !errors.Is(err, errPortRange) {
			return err
		}
		return a.svcRes.invalid(svc.Name, field.ErrorList{field.Invalid(fld, p, msgf(err))})
	}
	if registry.HasNodePorts(svc) {
		byPort := map[int32]int32{}
		ports := field.NewPath("spec", "ports")
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			if sp.NodePort != 0 {
				if err := claimOne(int(sp.NodePort), ports.Index(i).Child("nodePort"), error.Error); err != nil {
					return err
				}
				byPort[sp.Port] = sp.NodePort
			}
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			if sp.NodePort != 0 || !registry.NeedsNodePorts(svc) {
				continue
			}
			if np, ok := byPort[sp.Port]; ok {
				sp.NodePort = np
				continue
			}
			p, err := a.nextPort(ctx, svc)
			if err != nil {
				return err
			}
			mine[p] = true
			took.ports = append(took.ports, p)
			sp.NodePort = int32(p)
			byPort[sp.Port] = int32(p)
		}
	}
	if registry.NeedsHealthCheckNodePort(svc) {
		if hc := int(svc.Spec.HealthCheckNodePort); hc != 0 {
			return claimOne(hc, field.NewPath("spec", "healthCheckNodePort"), func(err error) string {
				return fmt.Sprintf("failed to allocate requested HealthCheck NodePort %d: %v", hc, err)
			})
		}
		p, err := a.nextPort(ctx, svc)
		if err != nil {
			return err
		}
		took.ports = append(took.ports, p)
		svc.Spec.HealthCheckNodePort = int32(p)
	}
	return nil
}

// errPortRange marks a requested node port outside the range.
var errPortRange = errors.New("provided port is not in the valid range")

func (a *serviceAllocator) checkPortInRange(p int) error {
	if p < a.firstPort || p > a.lastPort {
		return fmt.Errorf("%w. The range of valid ports is %s", errPortRange, a.portRange)
	}
	return nil
}

// createPortClaim claims node port p for svc; errPortAllocated when taken.
func (a *serviceAllocator) createPortClaim(ctx context.Context, p int, svc *corev1.Service) error {
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: strconv.Itoa(p), UID: uuid.NewUUID(), CreationTimestamp: metav1.NewTime(a.s.clock.Now())},
		Spec:       networkingv1.IPAddressSpec{ParentRef: parentRef(svc)},
	}
	if a.dry {
		return a.checkFree(ctx, a.ports, nodePortKey(p), errPortAllocated)
	}
	err := a.ports.Create(ctx, nodePortKey(p), obj, &networkingv1.IPAddress{})
	if storage.IsExists(err) {
		return errPortAllocated
	}
	return err
}

// checkFree is a dry-run claim of key: taken when it exists.
func (a *serviceAllocator) checkFree(ctx context.Context, store storage.Interface, key string, taken error) error {
	err := store.Get(ctx, key, storage.GetOptions{}, &networkingv1.IPAddress{})
	switch {
	case err == nil:
		return taken
	case storage.IsNotFound(err):
		return nil
	}
	return err
}

// nextPort claims a free node port for svc.
func (a *serviceAllocator) nextPort(ctx context.Context, svc *corev1.Service) (int, error) {
	list := &networkingv1.IPAddressList{}
	if err := a.ports.GetList(ctx, nodePortRoot, storage.ListOptions{Recursive: true}, list); err != nil {
		return 0, err
	}
	used := map[int]bool{}
	for _, item := range list.Items {
		if p, err := strconv.Atoi(item.Name); err == nil {
			used[p] = true
		}
	}
	size := uint64(a.lastPort - a.firstPort + 1)
	found := 0
	err := scanBanded(uint64(a.firstPort), uint64(a.lastPort), staticBand(size, 32, 128), func(v uint64) (bool, error) {
		p := int(v)
		if used[p] {
			return false, nil
		}
		switch err := a.createPortClaim(ctx, p, svc); {
		case err == nil:
			found = p
			return true, nil
		case errors.Is(err, errPortAllocated):
			used[p] = true
			return false, nil
		default:
			return false, err
		}
	})
	if err != nil {
		return 0, err
	}
	if found == 0 {
		return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", errFull))
	}
	return found, nil
}

// ensureServiceCIDR creates the ServiceCIDR "kubernetes" of the range,
// Ready, when it is missing.
func (s *Server) ensureServiceCIDR(ctx context.Context, prefix netip.Prefix) error {
	res := s.lookup(serviceCIDRGVR)
	if res == nil {
		return nil
	}
	obj := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesServiceName},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{prefix.String()}},
	}
	_, err := s.createObject(ctx, res, "", obj, false)
	if apierrors.IsAlreadyExists(err) {
		cur := &networkingv1.ServiceCIDR{}
		if err := res.store.Get(ctx, res.key("", kubernetesServiceName), storage.GetOptions{}, cur); err != nil {
			return fmt.Errorf("apiserver: get service CIDR: %w", err)
		}
		if len(cur.Spec.CIDRs) == 0 || cur.Spec.CIDRs[0] != prefix.String() {
			s.log.Warn("the stored default ServiceCIDR differs from the configured range; allocating from the configured range",
				"stored", cur.Spec.CIDRs, "configured", prefix.String())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("apiserver: create service CIDR: %w", err)
	}
	now := metav1.NewTime(s.clock.Now().Truncate(1e9))
	err = res.store.GuaranteedUpdate(ctx, res.key("", kubernetesServiceName), &networkingv1.ServiceCIDR{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*networkingv1.ServiceCIDR)
		c.Status.Conditions = []metav1.Condition{{
			Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
			Reason: "", Message: "Kubernetes default Service CIDR is ready", LastTransitionTime: now,
		}}
		return c, nil
	})
	if err != nil {
		return fmt.Errorf("apiserver: service CIDR status: %w", err)
	}
	return nil
}

// ensureKubernetesService creates, or brings up to date, the Service, the
// Endpoints and the EndpointSlice "kubernetes" in namespace default that
// name this server at addr: Config.AdvertiseAddress when set, and the
// port Run listens on. Failures are logged: serving goes on without them.
func (s *Server) ensureKubernetesService(ctx context.Context, addr net.Addr) {
	svcRes := s.lookup(servicesGVR)
	if svcRes == nil || svcRes.hook == nil {
		return
	}
	port := 443
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.Port != 0 {
		port = tcp.Port
	}
	ip := s.cfg.AdvertiseAddress
	if ip == "" {
		ip = "127.0.0.1"
	}
	alloc := svcRes.hook.(*serviceAllocator)
	first := alloc.ipAt(1).String()
	ns := metav1.NamespaceDefault
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesServiceName, Namespace: ns, Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: first, ClusterIPs: []string{first},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(port)}},
		},
	}
	if _, err := s.createObject(ctx, svcRes, ns, svc, false); err != nil && !apierrors.IsAlreadyExists(err) {
		s.log.Error("create the kubernetes Service", "error", err)
	}
	portName, proto := "https", corev1.ProtocolTCP
	p32 := int32(port)
	ready := true
	if err := s.putSystemObject(ctx, s.lookup(endpointsGVR), &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesServiceName, Namespace: ns, Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: p32, Protocol: proto}},
		}},
	}); err != nil {
		s.log.Error("store the kubernetes Endpoints", "error", err)
	}
	if err := s.putSystemObject(ctx, s.lookup(sliceGVR), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: kubernetesServiceName, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p32, Protocol: &proto}},
	}); err != nil {
		s.log.Error("store the kubernetes EndpointSlice", "error", err)
	}
}

// putSystemObject stores obj as the server writes its own objects: without
// validation (the loopback address of a development server is not one a
// client may give), replacing what the stored one says when it differs.
func (s *Server) putSystemObject(ctx context.Context, res *resource, obj runtime.Object) error {
	if res == nil {
		return nil
	}
	m := accessor(obj)
	key := res.key(m.GetNamespace(), m.GetName())
	res.strategy.Default(obj)
	return res.store.GuaranteedUpdate(ctx, key, res.strategy.New(), true, nil, func(cur runtime.Object) (runtime.Object, error) {
		cm := accessor(cur)
		out := obj.DeepCopyObject()
		om := accessor(out)
		if cm.GetResourceVersion() == "" {
			res.strategy.PrepareForCreate(out)
			om.SetUID(uuid.NewUUID())
			om.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(1e9)))
		} else {
			res.strategy.PrepareForUpdate(out, cur)
			om.SetUID(cm.GetUID())
			om.SetCreationTimestamp(cm.GetCreationTimestamp())
			om.SetResourceVersion(cm.GetResourceVersion())
		}
		res.setKind(out)
		return out, nil
	})
}

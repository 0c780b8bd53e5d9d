package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
)

// ControllerName is the value of the endpointslice.kubernetes.io/managed-by
// label on the slices this controller manages, as Kubernetes names it.
// Slices with another value are never touched.
const ControllerName = "endpointslice-controller.k8s.io"

// errStaleCache is returned by a sync that found the slice cache behind
// the controller's own writes; the Service is retried with backoff.
var errStaleCache = errors.New("endpointslice informer cache is out of date")

// sliceWriter writes EndpointSlices.
type sliceWriter interface {
	Create(ctx context.Context, slice *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error)
	Update(ctx context.Context, slice *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, error)
	Delete(ctx context.Context, namespace, name string) error
}

// syncer holds what the reconcile logic reads and writes. It is safe for
// concurrent use by the workers (the queue never hands one key to two).
type syncer struct {
	services *cache.Lister[*corev1.Service]
	pods     *cache.Lister[*corev1.Pod]
	slices   *cache.Lister[*discoveryv1.EndpointSlice]
	nodes    *cache.Lister[*corev1.Node]
	writer   sliceWriter
	tracker  *tracker
	triggers *podendpoint.TriggerTimes
	// maxPerSlice is the most endpoints a slice holds.
	maxPerSlice int
}

// sync brings the EndpointSlices of the Service at key in line with the
// pods its selector selects.
func (s *syncer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return err
	}
	svc, err := s.services.Namespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The slices are owned by the Service: the garbage collector
		// deletes them.
		s.triggers.Forget(key)
		s.tracker.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	// ExternalName Services get no endpoints; Services without a selector
	// get theirs from whoever manages them.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}
	pods, err := s.pods.Namespace(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	existing, err := s.slices.Namespace(ns).List(labels.SelectorFromValidatedSet(labels.Set{
		discoveryv1.LabelServiceName: svc.Name,
		discoveryv1.LabelManagedBy:   ControllerName,
	}))
	if err != nil {
		return err
	}
	existing = slices.DeleteFunc(slices.Clone(existing), func(s *discoveryv1.EndpointSlice) bool { return s.DeletionTimestamp != nil })
	if s.tracker.stale(key, existing) {
		return errStaleCache
	}
	trigger := s.triggers.Compute(svc, pods)
	return s.reconcile(ctx, svc, pods, existing, trigger)
}

// reconcile writes the slices of svc for pods, given its existing slices:
// slices of address types svc no longer has are deleted, and each address
// type is reconciled on its own.
func (s *syncer) reconcile(ctx context.Context, svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, trigger time.Time) error {
	types := addressTypes(svc)
	var errs []error
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	var unsupported []*discoveryv1.EndpointSlice
	for _, sl := range existing {
		if !slices.Contains(types, sl.AddressType) {
			unsupported = append(unsupported, sl)
			continue
		}
		byType[sl.AddressType] = append(byType[sl.AddressType], sl)
	}
	for _, at := range types {
		if err := s.reconcileAddressType(ctx, svc, pods, byType[at], trigger, at); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sl := range unsupported {
		if err := s.delete(ctx, sl); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// addressTypes returns the address types of svc's slices: those of its IP
// families; else the family of its cluster IP; else, for a headless
// Service without families, both.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	add := func(t discoveryv1.AddressType) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			add(discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			add(discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if podendpoint.IsServiceIPSet(svc) {
		if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is6() && !ip.Is4In6() {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

// portSet is the ports of a group of endpoints, with its key.
type portSet struct {
	key   string
	ports []discoveryv1.EndpointPort
}

// portsKey identifies a set of ports regardless of order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		var b strings.Builder
		if p.Name != nil {
			b.WriteString(*p.Name)
		}
		b.WriteByte('/')
		if p.Port != nil {
			b.WriteString(strconv.Itoa(int(*p.Port)))
		}
		b.WriteByte('/')
		if p.Protocol != nil {
			b.WriteString(string(*p.Protocol))
		}
		b.WriteByte('/')
		if p.AppProtocol != nil {
			b.WriteString(*p.AppProtocol)
		}
		parts = append(parts, b.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// endpointKey identifies an endpoint across syncs: its addresses, hostname
// and pod. Endpoints with the same key are the same endpoint, possibly in
// another state.
func endpointKey(ep *discoveryv1.Endpoint) string {
	var b strings.Builder
	b.WriteString(strings.Join(ep.Addresses, ","))
	b.WriteByte('|')
	if ep.Hostname != nil {
		b.WriteString(*ep.Hostname)
	}
	b.WriteByte('|')
	if ep.TargetRef != nil {
		b.WriteString(ep.TargetRef.Namespace + "/" + ep.TargetRef.Name)
	}
	return b.String()
}

// endpointSet is an insertion-ordered set of endpoints by endpointKey.
type endpointSet struct {
	order []string
	byKey map[string]*discoveryv1.Endpoint
}

func newEndpointSet() *endpointSet { return &endpointSet{byKey: map[string]*discoveryv1.Endpoint{}} }

func (e *endpointSet) insert(ep *discoveryv1.Endpoint) {
	k := endpointKey(ep)
	if _, ok := e.byKey[k]; !ok {
		e.order = append(e.order, k)
	}
	e.byKey[k] = ep
}

func (e *endpointSet) get(ep *discoveryv1.Endpoint) *discoveryv1.Endpoint {
	return e.byKey[endpointKey(ep)]
}

func (e *endpointSet) remove(ep *discoveryv1.Endpoint) { delete(e.byKey, endpointKey(ep)) }

func (e *endpointSet) len() int { return len(e.byKey) }

// pop removes and returns the earliest inserted endpoint left; the set
// must not be empty.
func (e *endpointSet) pop() *discoveryv1.Endpoint {
	for len(e.order) > 0 {
		k := e.order[0]
		e.order = e.order[1:]
		if ep, ok := e.byKey[k]; ok {
			delete(e.byKey, k)
			return ep
		}
	}
	return nil
}

// reconcileAddressType reconciles the slices of one address type: the
// desired endpoints are grouped by the ports their pod resolves, and each
// group is packed into the slices of its port set.
func (s *syncer) reconcileAddressType(ctx context.Context, svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, trigger time.Time, at discoveryv1.AddressType) error {
	var errs []error
	var toCreate, toUpdate, toDelete []*discoveryv1.EndpointSlice

	existingByPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, sl := range existing {
		if ownedBy(sl, svc) {
			k := portsKey(sl.Ports)
			existingByPorts[k] = append(existingByPorts[k], sl)
		} else {
			// A slice of an earlier Service of the same name.
			toDelete = append(toDelete, sl)
		}
	}

	var sets []portSet
	desired := map[string]*endpointSet{}
	for _, pod := range pods {
		if !podendpoint.ShouldBeEndpoint(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		k := portsKey(ports)
		if _, ok := desired[k]; !ok {
			desired[k] = newEndpointSet()
			sets = append(sets, portSet{key: k, ports: ports})
		}
		var node *corev1.Node
		if pod.Spec.NodeName != "" {
			n, err := s.nodes.Get(pod.Spec.NodeName)
			switch {
			case err == nil:
				node = n
			case !apierrors.IsNotFound(err):
				return err
			case !svc.Spec.PublishNotReadyAddresses:
				// Left out until its node shows up (or the pod goes);
				// the error retries the Service.
				errs = append(errs, fmt.Errorf("skipping pod %s of service %s/%s: node %s not found", pod.Name, svc.Namespace, svc.Name, pod.Spec.NodeName))
				continue
			}
		}
		ep := podToEndpoint(pod, node, svc, at)
		if len(ep.Addresses) > 0 {
			desired[k].insert(&ep)
		}
	}

	for _, ps := range sets {
		c, u, d := s.reconcilePorts(svc, existingByPorts[ps.key], desired[ps.key], ps.ports, at)
		toCreate, toUpdate, toDelete = append(toCreate, c...), append(toUpdate, u...), append(toDelete, d...)
	}
	// Port sets no pod resolves to any more.
	for k, old := range existingByPorts {
		if _, ok := desired[k]; !ok {
			toDelete = append(toDelete, old...)
		}
	}
	slices.SortFunc(toDelete, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })

	// A Service without endpoints keeps one empty slice, so that readers
	// can tell "no endpoints" from "not yet handled".
	if len(existing) == len(toDelete) && len(toCreate) == 0 {
		placeholder := newSlice(svc, nil, at)
		if len(toDelete) == 1 && isPlaceholder(toDelete[0], placeholder) {
			toDelete = nil
		} else {
			toCreate = append(toCreate, placeholder)
		}
	}

	if err := s.finalize(ctx, svc, toCreate, toUpdate, toDelete, trigger); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// isPlaceholder reports whether existing is the empty slice placeholder
// describes: same namespace, labels, owners, address type, no endpoints
// and no ports.
func isPlaceholder(existing, placeholder *discoveryv1.EndpointSlice) bool {
	return existing.Namespace == placeholder.Namespace &&
		equality.Semantic.DeepEqual(map[string]string(existing.Labels), map[string]string(placeholder.Labels)) &&
		equality.Semantic.DeepEqual(existing.OwnerReferences, placeholder.OwnerReferences) &&
		existing.AddressType == placeholder.AddressType &&
		len(existing.Endpoints) == 0 && len(existing.Ports) == 0
}

// reconcilePorts packs the desired endpoints of one port set into its
// existing slices, keeping churn low as Kubernetes does: endpoints stay
// in the slice they are in (updated in place if changed); slices left
// empty are deleted; new endpoints first fill the slices being updated
// anyway (fullest first), then the unchanged slice that they would fill
// best, and only then new slices.
func (s *syncer) reconcilePorts(svc *corev1.Service, existing []*discoveryv1.EndpointSlice, desired *endpointSet, ports []discoveryv1.EndpointPort, at discoveryv1.AddressType) (toCreate, toUpdate, toDelete []*discoveryv1.EndpointSlice) {
	byName := map[string]*discoveryv1.EndpointSlice{}
	var unchanged, updated []string
	for _, sl := range existing {
		byName[sl.Name] = sl
		var keep []discoveryv1.Endpoint
		changed := false
		for i := range sl.Endpoints {
			want := desired.get(&sl.Endpoints[i])
			if want == nil {
				continue
			}
			keep = append(keep, *want)
			if !equality.Semantic.DeepEqual(*want, sl.Endpoints[i]) {
				changed = true
			}
			desired.remove(&sl.Endpoints[i])
		}
		lbls, labelsChanged := sliceLabels(sl, svc)
		switch {
		case changed || len(keep) != len(sl.Endpoints):
			if len(keep) == 0 {
				toDelete = append(toDelete, sl)
				continue
			}
			out := sl.DeepCopy()
			out.Endpoints = keep
			out.Labels = lbls
			byName[sl.Name] = out
			updated = append(updated, sl.Name)
		case labelsChanged:
			out := sl.DeepCopy()
			out.Labels = lbls
			byName[sl.Name] = out
			updated = append(updated, sl.Name)
		default:
			unchanged = append(unchanged, sl.Name)
		}
	}

	// Fill the slices being written anyway, the fullest first.
	if desired.len() > 0 && len(updated) > 0 {
		fill := make([]*discoveryv1.EndpointSlice, 0, len(updated))
		for _, n := range updated {
			fill = append(fill, byName[n])
		}
		slices.SortStableFunc(fill, func(a, b *discoveryv1.EndpointSlice) int { return len(b.Endpoints) - len(a.Endpoints) })
		for _, sl := range fill {
			for desired.len() > 0 && len(sl.Endpoints) < s.maxPerSlice {
				sl.Endpoints = append(sl.Endpoints, *desired.pop())
			}
		}
	}

	// Then one unchanged slice the rest fits in best, else new slices.
	for desired.len() > 0 {
		var target *discoveryv1.EndpointSlice
		if desired.len() < s.maxPerSlice && len(unchanged) > 0 {
			candidates := make([]*discoveryv1.EndpointSlice, 0, len(unchanged))
			for _, n := range unchanged {
				candidates = append(candidates, byName[n])
			}
			if best := sliceToFill(candidates, desired.len(), s.maxPerSlice); best != nil {
				target = best.DeepCopy()
				byName[target.Name] = target
			}
		}
		if target == nil {
			target = newSlice(svc, ports, at)
		}
		for desired.len() > 0 && len(target.Endpoints) < s.maxPerSlice {
			target.Endpoints = append(target.Endpoints, *desired.pop())
		}
		if target.Name == "" {
			toCreate = append(toCreate, target)
			continue
		}
		updated = append(updated, target.Name)
		unchanged = slices.DeleteFunc(unchanged, func(n string) bool { return n == target.Name })
	}
	for _, n := range updated {
		toUpdate = append(toUpdate, byName[n])
	}
	return toCreate, toUpdate, toDelete
}

// sliceToFill returns the slice that n more endpoints bring closest to
// max without passing it, nil if none has room.
func sliceToFill(candidates []*discoveryv1.EndpointSlice, n, max int) *discoveryv1.EndpointSlice {
	closest := max
	var best *discoveryv1.EndpointSlice
	for _, sl := range candidates {
		diff := max - (n + len(sl.Endpoints))
		if diff >= 0 && diff < closest {
			closest, best = diff, sl
			if diff == 0 {
				break
			}
		}
	}
	return best
}

// finalize writes the changes: creates are first turned into updates of
// slices about to be deleted (same address type, owned by svc), so names
// are reused; nothing is created for a Service being deleted.
func (s *syncer) finalize(ctx context.Context, svc *corev1.Service, toCreate, toUpdate, toDelete []*discoveryv1.EndpointSlice, trigger time.Time) error {
	for i := 0; i < len(toDelete) && len(toCreate) > 0; {
		del, add := toDelete[i], toCreate[len(toCreate)-1]
		if del.AddressType != add.AddressType || !ownedBy(del, svc) {
			i++
			continue
		}
		out := del.DeepCopy()
		out.Labels, out.Ports, out.Endpoints = add.Labels, add.Ports, add.Endpoints
		toCreate = toCreate[:len(toCreate)-1]
		toUpdate = append(toUpdate, out)
		toDelete = slices.Delete(toDelete, i, i+1)
	}
	if svc.DeletionTimestamp == nil {
		for _, sl := range toCreate {
			setTriggerTime(sl, trigger)
			created, err := s.writer.Create(ctx, sl)
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("create endpointslice for service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
			s.tracker.update(created)
		}
	}
	for _, sl := range toUpdate {
		setTriggerTime(sl, trigger)
		updated, err := s.writer.Update(ctx, sl)
		if err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", sl.Namespace, sl.Name, err)
		}
		s.tracker.update(updated)
	}
	for _, sl := range toDelete {
		if err := s.delete(ctx, sl); err != nil {
			return err
		}
	}
	return nil
}

// delete deletes sl, tolerating that it is gone.
func (s *syncer) delete(ctx context.Context, sl *discoveryv1.EndpointSlice) error {
	if err := s.writer.Delete(ctx, sl.Namespace, sl.Name); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete endpointslice %s/%s: %w", sl.Namespace, sl.Name, err)
	}
	s.tracker.expectDeletion(sl)
	return nil
}

// setTriggerTime sets or clears sl's last-change-trigger-time annotation.
func setTriggerTime(sl *discoveryv1.EndpointSlice, trigger time.Time) {
	if sl.Annotations == nil {
		sl.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(sl.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	sl.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
}

// podToEndpoint is pod's endpoint for svc with addresses of type at.
// Serving is the pod's readiness; ready is serving and not terminating,
// or always when svc publishes not-ready addresses.
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, svc *corev1.Service, at discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := podendpoint.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  addresses(pod, at),
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		n := pod.Spec.NodeName
		ep.NodeName = &n
	}
	if node != nil {
		if z := node.Labels[corev1.LabelTopologyZone]; z != "" {
			ep.Zone = &z
		}
	}
	if podendpoint.ShouldSetHostname(pod, svc) {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

// addresses returns pod's IPs of type at, in canonical form.
func addresses(pod *corev1.Pod, at discoveryv1.AddressType) []string {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	out := []string{}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if (a.Is6() && at == discoveryv1.AddressTypeIPv6) || (a.Is4() && at == discoveryv1.AddressTypeIPv4) {
			out = append(out, a.String())
		}
	}
	return out
}

// endpointPorts returns svc's ports as pod resolves them; ports the pod
// does not have are left out.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		num, err := podendpoint.FindPort(pod, sp)
		if err != nil {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &num, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	return out
}

// newSlice returns a new slice of svc, to be created.
func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, at discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	if ports == nil {
		ports = []discoveryv1.EndpointPort{}
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    slicePrefix(svc.Name),
			Namespace:       svc.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: at,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	sl.Labels, _ = sliceLabels(sl, svc)
	return sl
}

// slicePrefix is the generateName of svc's slices: "<name>-" when that is
// a valid prefix, else the name.
func slicePrefix(name string) string {
	if p := name + "-"; len(apimachineryvalidation.NameIsDNSSubdomain(p, true)) == 0 {
		return p
	}
	return name
}

// ownedBy reports whether svc owns sl.
func ownedBy(sl *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range sl.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// isReservedLabel reports whether key is one of the labels the controller
// sets itself rather than copying from the Service.
func isReservedLabel(key string) bool {
	return key == discoveryv1.LabelServiceName || key == discoveryv1.LabelManagedBy || key == corev1.IsHeadlessService
}

// sliceLabels returns the labels sl should have: svc's labels but the
// reserved ones, the headless label for a headless svc, the service name
// and managed-by labels. changed reports whether the copied labels of svc
// differ from sl's.
func sliceLabels(sl *discoveryv1.EndpointSlice, svc *corev1.Service) (map[string]string, bool) {
	have, want := map[string]string{}, map[string]string{}
	for k, v := range sl.Labels {
		if !isReservedLabel(k) {
			have[k] = v
		}
	}
	for k, v := range svc.Labels {
		if !isReservedLabel(k) {
			want[k] = v
		}
	}
	changed := !equality.Semantic.DeepEqual(have, want)
	if !podendpoint.IsServiceIPSet(svc) {
		want[corev1.IsHeadlessService] = ""
	}
	want[discoveryv1.LabelServiceName] = svc.Name
	want[discoveryv1.LabelManagedBy] = ControllerName
	return want, changed
}

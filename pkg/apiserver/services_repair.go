package apiserver

import (
	"context"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kplane/kplane/pkg/storage"
)

// serviceRepairInterval is how often the claims of Services are checked
// for leaks, as Kubernetes' repair loops do (every three minutes).
const serviceRepairInterval = 3 * time.Minute

// repairServiceAllocations gives back, until ctx ends, the claims no
// Service holds: a server that stopped between claiming and storing the
// Service leaves them behind. It returns at once when Services are not
// served with allocation.
func (s *Server) repairServiceAllocations(ctx context.Context) {
	res := s.lookup(servicesGVR)
	if res == nil || res.hook == nil {
		return
	}
	a := res.hook.(*serviceAllocator)
	suspects := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(serviceRepairInterval):
		}
		suspects = a.repair(ctx, suspects)
	}
}

// repair runs one pass: a claim whose Service is missing or does not hold
// it is a suspect; a suspect of the previous pass (given in suspects)
// that is still one is deleted. Two passes, minutes apart, leave alone the
// claims of a create in flight. It returns this pass's suspects.
func (a *serviceAllocator) repair(ctx context.Context, suspects map[string]bool) map[string]bool {
	next := map[string]bool{}
	check := func(id string, obj *networkingv1.IPAddress, holds func(*corev1.Service) bool, store storage.Interface, key string) {
		ref := obj.Spec.ParentRef
		if ref == nil || ref.Group != "" || ref.Resource != "services" {
			return // not ours
		}
		svc := &corev1.Service{}
		err := a.svcRes.store.Get(ctx, a.svcRes.key(ref.Namespace, ref.Name), storage.GetOptions{}, svc)
		if err == nil && holds(svc) {
			return
		}
		if err != nil && !storage.IsNotFound(err) {
			return
		}
		if !suspects[id] {
			next[id] = true
			return
		}
		uid := obj.UID
		// Deleted only in the state seen: a claim taken again meanwhile
		// has another uid.
		err = store.Delete(ctx, key, &networkingv1.IPAddress{}, &storage.Preconditions{UID: &uid}, nil)
		if err == nil {
			a.s.log.Info("released a leaked Service claim", "claim", id, "service", ref.Namespace+"/"+ref.Name)
		}
	}
	ips := &networkingv1.IPAddressList{}
	if err := a.ipRes.store.GetList(ctx, a.ipRes.prefix(""), storage.ListOptions{Recursive: true}, ips); err == nil {
		for i := range ips.Items {
			item := &ips.Items[i]
			if item.Labels[managedByLabel] != managedByValue {
				continue
			}
			ip, err := netip.ParseAddr(item.Name)
			if err != nil {
				continue
			}
			check("ip/"+item.Name, item, func(svc *corev1.Service) bool { held, _ := heldBy(svc); return held[ip] }, a.ipRes.store, a.ipRes.key("", item.Name))
		}
	}
	ports := &networkingv1.IPAddressList{}
	if err := a.ports.GetList(ctx, nodePortRoot, storage.ListOptions{Recursive: true}, ports); err == nil {
		for i := range ports.Items {
			item := &ports.Items[i]
			p, err := strconv.Atoi(item.Name)
			if err != nil {
				continue
			}
			check("port/"+item.Name, item, func(svc *corev1.Service) bool { _, held := heldBy(svc); return held[p] }, a.ports, nodePortKey(p))
		}
	}
	return next
}

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served and maintained, as kube-controller-manager 1.37 still does

package endpoints

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
)

// endpointsWriter writes Endpoints.
type endpointsWriter interface {
	Create(ctx context.Context, ep *corev1.Endpoints) error
	Update(ctx context.Context, ep *corev1.Endpoints) error
	Delete(ctx context.Context, namespace, name string) error
}

// syncer holds what the reconcile logic reads and writes; it is safe for
// concurrent use by the workers.
type syncer struct {
	services  *cache.Lister[*corev1.Service]
	pods      *cache.Lister[*corev1.Pod]
	endpoints *cache.Lister[*corev1.Endpoints]
	writer    endpointsWriter
	triggers  *podendpoint.TriggerTimes
}

// sync brings the Endpoints of the Service at key in line with the pods
// its selector selects, and deletes them when the Service is gone.
func (s *syncer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return err
	}
	svc, err := s.services.Namespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		s.triggers.Forget(key)
		if err := s.writer.Delete(ctx, ns, name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}
	pods, err := s.pods.Namespace(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	trigger := s.triggers.Compute(svc, pods)
	subsets := desiredSubsets(svc, pods)

	current, err := s.endpoints.Namespace(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: svc.Labels}}
	case err != nil:
		return err
	}
	create := current.ResourceVersion == ""
	haveLabels := current.Labels
	if _, ok := haveLabels[corev1.IsHeadlessService]; ok {
		haveLabels = maps.Clone(haveLabels)
		delete(haveLabels, corev1.IsHeadlessService)
	}
	if !create && subsetsEqual(current.Subsets, subsets) &&
		equality.Semantic.DeepEqual(haveLabels, svc.Labels) &&
		capacityAnnotationCorrect(current.Annotations, current.Subsets) {
		return nil
	}

	out := current.DeepCopy()
	out.Subsets = subsets
	out.Labels = maps.Clone(svc.Labels)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if !podendpoint.IsServiceIPSet(svc) {
		out.Labels[corev1.IsHeadlessService] = ""
	} else {
		delete(out.Labels, corev1.IsHeadlessService)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(out.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		out.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	}
	if truncate(out.Subsets) {
		out.Annotations[corev1.EndpointsOverCapacity] = "truncated"
	} else {
		delete(out.Annotations, corev1.EndpointsOverCapacity)
	}

	if create {
		err = s.writer.Create(ctx, out)
	} else {
		err = s.writer.Update(ctx, out)
	}
	switch {
	case err == nil:
		return nil
	case create && apierrors.IsForbidden(err):
		// Most likely the namespace is terminating: nothing to do.
		return nil
	default:
		return fmt.Errorf("write endpoints %s: %w", key, err)
	}
}

// subsetsEqual compares subsets ignoring the pods' resourceVersions.
func subsetsEqual(have, want []corev1.EndpointSubset) bool {
	have = clearVersions(have)
	return equality.Semantic.DeepEqual(have, want)
}

func clearVersions(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	out := make([]corev1.EndpointSubset, len(subsets))
	for i := range subsets {
		ss := subsets[i].DeepCopy()
		for _, list := range [][]corev1.EndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
			for j := range list {
				if list[j].TargetRef != nil {
					list[j].TargetRef.ResourceVersion = ""
				}
			}
		}
		out[i] = *ss
	}
	return out
}

// desiredSubsets returns the repacked subsets of svc for pods: a pod is
// an address of every port of svc it resolves, ready when it is ready or
// svc publishes not-ready addresses; terminating pods only in that case.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	tolerate := svc.Spec.PublishNotReadyAddresses
	var subsets []corev1.EndpointSubset
	add := func(pod *corev1.Pod, addr corev1.EndpointAddress, port *corev1.EndpointPort) {
		ss := corev1.EndpointSubset{}
		if port != nil {
			ss.Ports = []corev1.EndpointPort{*port}
		}
		if tolerate || podendpoint.IsPodReady(pod) {
			ss.Addresses = []corev1.EndpointAddress{addr}
		} else {
			ss.NotReadyAddresses = []corev1.EndpointAddress{addr}
		}
		subsets = append(subsets, ss)
	}
	for _, pod := range pods {
		if !podendpoint.ShouldBeEndpoint(pod, tolerate) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			continue
		}
		if podendpoint.ShouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		if len(svc.Spec.Ports) == 0 {
			// A headless Service may have no ports.
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(pod, addr, nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, err := podendpoint.FindPort(pod, sp)
			if err != nil {
				continue
			}
			add(pod, addr, &corev1.EndpointPort{Name: sp.Name, Port: num, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
	}
	return repack(subsets)
}

// podAddress is pod's address for svc: its IP of svc's (first) family.
func podAddress(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	isV6 := func(s string) bool {
		a, err := netip.ParseAddr(s)
		return err == nil && a.Unmap().Is6()
	}
	v6 := false
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		v6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case podendpoint.IsServiceIPSet(svc):
		v6 = isV6(svc.Spec.ClusterIP)
	default:
		v6 = isV6(pod.Status.PodIP)
	}
	ips := pod.Status.PodIPs
	if len(ips) == 0 {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, ip := range ips {
		if ip.IP != "" && isV6(ip.IP) == v6 {
			node := pod.Spec.NodeName
			return corev1.EndpointAddress{
				IP: ip.IP, NodeName: &node,
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			}, true
		}
	}
	return corev1.EndpointAddress{}, false
}

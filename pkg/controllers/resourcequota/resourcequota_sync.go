package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	usage "github.com/kplane/kplane/internal/quota"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Resource name prefixes of what is charged per pod.
const (
	requestsPrefix = "requests."
	limitsPrefix   = "limits."
)

// quotaWriter writes quota status.
type quotaWriter interface {
	UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error
}

// objectCounter counts the objects of a resource no informer holds.
type objectCounter interface {
	// Count returns how many objects of gr namespace holds; served is
	// false when the server serves no such resource.
	Count(ctx context.Context, gr schema.GroupResource, namespace string) (n int64, served bool, err error)
}

// countFunc counts the objects of one resource in a namespace.
type countFunc func(namespace string) (int64, error)

// listerCount counts through a lister.
func listerCount[T cache.Object](l *cache.Lister[T]) countFunc {
	return func(namespace string) (int64, error) {
		objs, err := l.Namespace(namespace).List(labels.Everything())
		return int64(len(objs)), err
	}
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	quotaLister   *cache.Lister[*corev1.ResourceQuota]
	podLister     *cache.Lister[*corev1.Pod]
	serviceLister *cache.Lister[*corev1.Service]
	pvcLister     *cache.Lister[*corev1.PersistentVolumeClaim]
	// counts counts the resources an informer holds, by group resource.
	counts map[schema.GroupResource]countFunc
	// others counts the rest.
	others objectCounter
	quotas quotaWriter
	clock  clock.PassiveClock
}

// sync writes the status of the quota named by key: hard as spec.hard,
// used as the namespace's usage of each resource in it.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	q, err := s.quotaLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	used, err := s.usage(ctx, q)
	if err != nil {
		return err
	}
	hard := q.Spec.Hard.DeepCopy()
	if hard == nil {
		hard = corev1.ResourceList{}
	}
	if q.Status.Hard != nil && equalLists(q.Status.Hard, hard) && equalLists(q.Status.Used, used) {
		return nil
	}
	next := q.DeepCopy()
	next.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if err := s.quotas.UpdateStatus(ctx, next); err != nil {
		return fmt.Errorf("update status of %s: %w", key, err)
	}
	return nil
}

// usage is q's used: every resource of spec.hard that has an evaluator,
// computed now; one without keeps the value status.used had.
func (s *syncer) usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	scopes := usage.ScopesOf(q)
	used := corev1.ResourceList{}
	var podNames []corev1.ResourceName
	for name := range q.Spec.Hard {
		n, ok, err := s.objectUsage(ctx, q.Namespace, name, scopes)
		switch {
		case err != nil:
			return nil, err
		case ok:
			used[name] = n
		case isPodResource(name):
			podNames = append(podNames, name)
		default:
			if old, ok := q.Status.Used[name]; ok {
				used[name] = old.DeepCopy()
			}
		}
	}
	if len(podNames) > 0 {
		total, err := s.podTotals(q.Namespace, scopes)
		if err != nil {
			return nil, err
		}
		for _, name := range podNames {
			v := total[name]
			used[name] = v
		}
	}
	return used, nil
}

// objectUsage computes the usage of a resource name that is not charged
// per pod: object counts, services and claims. ok is false for the names
// it does not evaluate. Quotas with scopes count none of these objects:
// the scopes are those of pods.
func (s *syncer) objectUsage(ctx context.Context, namespace string, name corev1.ResourceName, scopes []corev1.ScopedResourceSelectorRequirement) (q resource.Quantity, ok bool, err error) {
	str := string(name)
	zero := *resource.NewQuantity(0, resource.DecimalSI)
	var gr schema.GroupResource
	switch {
	case strings.HasPrefix(str, usage.CountPrefix):
		gr = schema.ParseGroupResource(strings.TrimPrefix(str, usage.CountPrefix))
		if gr == (schema.GroupResource{Resource: "pods"}) {
			// Charged per pod, with its scopes.
			return q, false, nil
		}
	case name == corev1.ResourceServices || name == corev1.ResourceServicesLoadBalancers || name == corev1.ResourceServicesNodePorts:
		if len(scopes) > 0 {
			return zero, true, nil
		}
		n, err := s.serviceUsage(namespace, name)
		return *resource.NewQuantity(n, resource.DecimalSI), err == nil, err
	case name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage || strings.Contains(str, usage.StorageClassSuffix):
		if len(scopes) > 0 {
			return zero, true, nil
		}
		v, err := s.claimUsage(namespace, name)
		return v, err == nil, err
	case name == corev1.ResourceConfigMaps || name == corev1.ResourceSecrets ||
		name == corev1.ResourceReplicationControllers || name == corev1.ResourceQuotas:
		gr = schema.GroupResource{Resource: str}
	default:
		return q, false, nil
	}
	if len(scopes) > 0 {
		return zero, true, nil
	}
	if gr == (schema.GroupResource{Resource: "services"}) {
		n, err := s.serviceUsage(namespace, corev1.ResourceServices)
		return *resource.NewQuantity(n, resource.DecimalSI), err == nil, err
	}
	if gr == (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		v, err := s.claimUsage(namespace, corev1.ResourcePersistentVolumeClaims)
		return v, err == nil, err
	}
	if count, ok := s.counts[gr]; ok {
		n, err := count(namespace)
		if err != nil {
			return q, false, err
		}
		return *resource.NewQuantity(n, resource.DecimalSI), true, nil
	}
	n, served, err := s.others.Count(ctx, gr, namespace)
	if err != nil {
		return q, false, fmt.Errorf("count %s: %w", gr, err)
	}
	if !served {
		return q, false, nil
	}
	return *resource.NewQuantity(n, resource.DecimalSI), true, nil
}

// isPodResource reports whether name is charged per pod.
func isPodResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	str := string(name)
	return str == usage.CountPrefix+"pods" || strings.HasPrefix(str, corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(str, requestsPrefix) || strings.HasPrefix(str, limitsPrefix)
}

// podTotals sums the usage of the charged pods of namespace that match
// every scope.
func (s *syncer) podTotals(namespace string, scopes []corev1.ScopedResourceSelectorRequirement) (corev1.ResourceList, error) {
	pods, err := s.podLister.Namespace(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	total := corev1.ResourceList{}
	for _, pod := range pods {
		if !usage.PodCharged(pod, now) || !usage.PodMatchesScopes(pod, scopes) {
			continue
		}
		for name, q := range usage.PodUsage(pod) {
			usage.AddTo(total, name, q)
		}
	}
	return total, nil
}

// serviceUsage computes services, services.loadbalancers or
// services.nodeports for namespace. A NodePort service uses a node port
// per port; so does a LoadBalancer one, unless it allocates none, when
// only the ports given one explicitly count.
func (s *syncer) serviceUsage(namespace string, name corev1.ResourceName) (int64, error) {
	svcs, err := s.serviceLister.Namespace(namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, svc := range svcs {
		v := usage.ServiceUsage(svc)[name]
		n += v.Value()
	}
	return n, nil
}

// claimUsage computes persistentvolumeclaims, requests.storage and their
// per-storage-class forms for namespace. A claim's storage is the larger
// of its request and what has been allocated to it.
func (s *syncer) claimUsage(namespace string, name corev1.ResourceName) (resource.Quantity, error) {
	claims, err := s.pvcLister.Namespace(namespace).List(labels.Everything())
	if err != nil {
		return resource.Quantity{}, err
	}
	var total resource.Quantity
	if name == corev1.ResourceRequestsStorage || strings.HasSuffix(string(name), usage.StorageClassSuffix+string(corev1.ResourceRequestsStorage)) {
		total = *resource.NewQuantity(0, resource.BinarySI)
	} else {
		total = *resource.NewQuantity(0, resource.DecimalSI)
	}
	for _, pvc := range claims {
		if v, ok := usage.ClaimUsage(pvc)[name]; ok {
			total.Add(v)
		}
	}
	return total, nil
}

// equalLists reports whether a and b name the same resources with equal
// quantities.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// errNoMatch reports whether err says the server serves no such resource.
func errNoMatch(err error) bool {
	return apimeta.IsNoMatchError(err) || errors.Is(err, &apimeta.NoResourceMatchError{})
}

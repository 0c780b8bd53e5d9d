package resourcequota

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	usage "github.com/kplane/kplane/internal/quota"
	"github.com/kplane/kplane/pkg/admission"
)

// evaluator measures one resource's objects for quota.
type evaluator struct {
	// tracks reports whether a quota name charges these objects.
	tracks func(name corev1.ResourceName) bool
	// matchesScopes reports whether obj falls under a quota's scopes; nil
	// means a quota with scopes never charges these objects.
	matchesScopes func(obj runtime.Object, scopes []corev1.ScopedResourceSelectorRequirement) (bool, error)
	// usage is what obj uses.
	usage func(obj runtime.Object, now time.Time) (corev1.ResourceList, error)
	// constraints refuses obj when it does not state what the tracked
	// names need; nil for none.
	constraints func(tracked []corev1.ResourceName, obj runtime.Object) error
}

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	servicesGR = schema.GroupResource{Resource: "services"}
	claimsGR   = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// ignored are the resources quota never charges.
var ignored = map[schema.GroupResource]bool{{Resource: "events"}: true}

// aliases are the names object counts of the core group had before
// count/<resource>.
var aliases = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
}

// evaluatorFor returns the evaluator of the request's resource when the
// request can change what quotas charge: creates of any namespaced object,
// updates of services and claims (their type and size can change), of
// pods' resize subresource and of pods that gain or lose an active
// deadline (the Terminating scopes), and claims' status when their
// allocated storage changes. ok is false for requests quota does not look at.
func evaluatorFor(a *admission.Attributes) (ev *evaluator, ok bool) {
	gr := a.Resource.GroupResource()
	if a.Namespace == "" || ignored[gr] {
		return nil, false
	}
	if a.Operation == admission.Create && a.Kind.GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		return nil, false
	}
	op, sub := a.Operation, a.Subresource
	switch gr {
	case podsGR:
		switch {
		case sub == "" && op == admission.Create:
		case sub == "" && op == admission.Update && terminatingChanged(a):
		case sub == "resize" && op == admission.Update:
		default:
			return nil, false
		}
		return podEvaluator, true
	case servicesGR:
		if sub != "" || (op != admission.Create && op != admission.Update) {
			return nil, false
		}
		return serviceEvaluator, true
	case claimsGR:
		switch {
		case sub == "" && (op == admission.Create || op == admission.Update):
		case sub == "status" && op == admission.Update && allocatedChanged(a):
		default:
			return nil, false
		}
		return claimEvaluator, true
	}
	if sub != "" || op != admission.Create {
		return nil, false
	}
	return countEvaluator(gr), true
}

// terminatingChanged reports whether a pod update moves the pod between
// the Terminating and NotTerminating scopes (it sets an active deadline).
func terminatingChanged(a *admission.Attributes) bool {
	cur, ok1 := a.Object.(*corev1.Pod)
	old, ok2 := a.OldObject.(*corev1.Pod)
	return ok1 && ok2 && usage.IsTerminating(cur) != usage.IsTerminating(old)
}

// allocatedChanged reports whether a claim status update changes the
// storage allocated to it.
func allocatedChanged(a *admission.Attributes) bool {
	cur, ok1 := a.Object.(*corev1.PersistentVolumeClaim)
	old, ok2 := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 {
		return false
	}
	c, o := cur.Status.AllocatedResources[corev1.ResourceStorage], old.Status.AllocatedResources[corev1.ResourceStorage]
	return c.Cmp(o) != 0
}

func asPod(obj runtime.Object) (*corev1.Pod, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("expected a pod, got %T", obj)
	}
	return pod, nil
}

var podEvaluator = &evaluator{
	tracks: usage.IsPodName,
	matchesScopes: func(obj runtime.Object, scopes []corev1.ScopedResourceSelectorRequirement) (bool, error) {
		pod, err := asPod(obj)
		if err != nil {
			return false, err
		}
		return usage.PodMatchesScopes(pod, scopes), nil
	},
	usage: func(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
		pod, err := asPod(obj)
		if err != nil {
			return nil, err
		}
		if !usage.PodCharged(pod, now) {
			// The object count follows every stored pod.
			return corev1.ResourceList{usage.CountPrefix + corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}, nil
		}
		return usage.PodUsage(pod), nil
	},
	constraints: func(tracked []corev1.ResourceName, obj runtime.Object) error {
		pod, err := asPod(obj)
		if err != nil {
			return err
		}
		return usage.PodConstraints(tracked, pod)
	},
}

var serviceEvaluator = &evaluator{
	tracks: func(name corev1.ResourceName) bool {
		for _, n := range usage.ServiceNames {
			if n == name {
				return true
			}
		}
		return false
	},
	usage: func(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil, fmt.Errorf("expected a service, got %T", obj)
		}
		return usage.ServiceUsage(svc), nil
	},
}

var claimEvaluator = &evaluator{
	tracks: usage.IsClaimName,
	usage: func(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil, fmt.Errorf("expected a persistent volume claim, got %T", obj)
		}
		return usage.ClaimUsage(pvc), nil
	},
}

// countEvaluator counts the objects of gr, under count/<resource>.<group>
// and the legacy name where there is one.
func countEvaluator(gr schema.GroupResource) *evaluator {
	names := []corev1.ResourceName{usage.ObjectCountName(gr)}
	if alias, ok := aliases[gr]; ok {
		names = append(names, alias)
	}
	return &evaluator{
		tracks: func(name corev1.ResourceName) bool {
			for _, n := range names {
				if n == name {
					return true
				}
			}
			return false
		},
		usage: func(runtime.Object, time.Time) (corev1.ResourceList, error) {
			out := corev1.ResourceList{}
			for _, n := range names {
				out[n] = *resource.NewQuantity(1, resource.DecimalSI)
			}
			return out, nil
		},
	}
}

// matches reports whether quota q charges obj: it tracks one of its names
// in status.hard and obj falls under its scopes.
func (ev *evaluator) matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	if len(ev.tracked(q)) == 0 {
		return false, nil
	}
	scopes := usage.ScopesOf(q)
	if len(scopes) == 0 {
		return true, nil
	}
	if ev.matchesScopes == nil {
		return false, nil
	}
	return ev.matchesScopes(obj, scopes)
}

// tracked is the names of q's status.hard that charge ev's objects.
func (ev *evaluator) tracked(q *corev1.ResourceQuota) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n := range q.Status.Hard {
		if ev.tracks(n) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// check decides the request against quotas (sorted by name). It returns
// the new status.used of every quota the request charges, by index, or the
// error refusing it.
func check(quotas []*corev1.ResourceQuota, a *admission.Attributes, ev *evaluator, now time.Time) (map[int]corev1.ResourceList, error) {
	var charged []int
	for i, q := range quotas {
		ok, err := ev.matches(q, a.Object)
		if err != nil {
			return nil, fmt.Errorf("error matching scopes of quota %s, err: %w", q.Name, err)
		}
		if !ok {
			continue
		}
		tracked := ev.tracked(q)
		if ev.constraints != nil {
			if err := ev.constraints(tracked, a.Object); err != nil {
				return nil, forbidden(a, fmt.Errorf("failed quota: %s: %w", q.Name, err))
			}
		}
		for _, n := range tracked {
			if _, ok := q.Status.Used[n]; !ok {
				return nil, forbidden(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, joinNames(tracked)))
			}
		}
		charged = append(charged, i)
	}
	if len(charged) == 0 {
		return nil, nil
	}
	use, err := ev.usage(a.Object, now)
	if err != nil {
		return nil, err
	}
	if neg := negative(use); len(neg) > 0 {
		return nil, forbidden(a, fmt.Errorf("quota usage is negative for resource(s): %s", joinNames(neg)))
	}
	deltas := make(map[int]corev1.ResourceList, len(charged))
	for _, i := range charged {
		deltas[i] = use
	}
	if a.Operation == admission.Update {
		if a.OldObject == nil {
			return nil, forbidden(a, errors.New("unable to get previous usage since prior version of object was not found"))
		}
		// An update that creates the object is charged in full.
		if m, err := apimeta.Accessor(a.OldObject); err == nil && m.GetResourceVersion() != "" {
			prev, err := ev.usage(a.OldObject, now)
			if err != nil {
				return nil, err
			}
			delta := subtractNonNegative(use, prev)
			for _, i := range charged {
				ok, err := ev.matches(quotas[i], a.OldObject)
				if err != nil {
					return nil, err
				}
				if ok {
					deltas[i] = delta
				}
			}
		}
	}
	out := map[int]corev1.ResourceList{}
	for _, i := range charged {
		q := quotas[i]
		requested := corev1.ResourceList{}
		for n, v := range deltas[i] {
			if _, tracked := q.Status.Hard[n]; tracked && !v.IsZero() {
				requested[n] = v
			}
		}
		if len(requested) == 0 {
			continue
		}
		used := add(q.Status.Used, requested)
		if a.Subresource != "status" {
			var exceeded []corev1.ResourceName
			for n := range requested {
				if v := used[n]; v.Cmp(q.Status.Hard[n]) > 0 {
					exceeded = append(exceeded, n)
				}
			}
			if len(exceeded) > 0 {
				return nil, forbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
					q.Name, pretty(requested, exceeded), pretty(q.Status.Used, exceeded), pretty(q.Status.Hard, exceeded)))
			}
		}
		out[i] = used
	}
	return out, nil
}

// add is a+b, per name, in a new list.
func add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for n, v := range b {
		usage.AddTo(out, n, v)
	}
	return out
}

// subtractNonNegative is a-b per name of a, never below zero.
func subtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, v := range a {
		d := v.DeepCopy()
		if o, ok := b[n]; ok {
			d.Sub(o)
		}
		if d.Sign() < 0 {
			d = *resource.NewQuantity(0, v.Format)
		}
		out[n] = d
	}
	return out
}

func negative(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n, v := range l {
		if v.Sign() < 0 {
			out = append(out, n)
		}
	}
	return out
}

// pretty prints the entries of l named in names as Kubernetes' quota
// messages do: name=value, sorted by name, comma separated.
func pretty(l corev1.ResourceList, names []corev1.ResourceName) string {
	keys := make([]string, 0, len(names))
	for _, n := range names {
		if _, ok := l[n]; ok {
			keys = append(keys, string(n))
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := l[corev1.ResourceName(k)]
		parts = append(parts, k+"="+v.String())
	}
	return strings.Join(parts, ",")
}

func joinNames(names []corev1.ResourceName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, string(n))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// forbidden is Kubernetes' admission refusal: 403 `<resource> "<name>" is
// forbidden: <err>`, the resource named without its subresource (a
// refused resize is `pods "p" is forbidden`), the name the request's, else
// the object's name or generateName, else "Unknown".
func forbidden(a *admission.Attributes, err error) error {
	name := a.Name
	if name == "" {
		name = "Unknown"
		if m, merr := apimeta.Accessor(a.Object); a.Object != nil && merr == nil {
			switch {
			case m.GetName() != "":
				name = m.GetName()
			case m.GetGenerateName() != "":
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}

package deployment

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveFenceposts turns maxSurge and maxUnavailable into replica counts
// for desired replicas: percentages of desired, surge rounded up and
// unavailable rounded down. When both come out 0, unavailable is 1, so a
// rollout can always make progress. A nil value counts as 0.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

func rollingParams(d *appsv1.Deployment) (surge, unavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// MaxSurge is how many replicas above the desired count a rolling update of
// d may run; 0 for other strategies. Invalid values count as 0 (the API
// validates them).
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _, _ := ResolveFenceposts(s, u, replicasOf(d))
	return surge
}

// MaxUnavailable is how many of d's desired replicas may be unavailable
// during a rolling update, never more than the desired count; 0 for other
// strategies or when d wants no replicas.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	desired := replicasOf(d)
	if !isRollingUpdate(d) || desired == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable, _ := ResolveFenceposts(s, u, desired)
	return min(unavailable, desired)
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// newRSNewReplicas is the size the new ReplicaSet should be scaled to now:
// for a rolling update, up by what the surge budget leaves, never past the
// desired count; for Recreate, the desired count.
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	desired := replicasOf(d)
	if !isRollingUpdate(d) {
		return desired
	}
	current := specReplicas(allRSs)
	maxTotal := desired + MaxSurge(d)
	if current >= maxTotal {
		return rsReplicas(newRS)
	}
	up := min(maxTotal-current, desired-rsReplicas(newRS))
	return rsReplicas(newRS) + up
}

// specReplicas sums the desired replicas of the sets, skipping nils.
func specReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += rsReplicas(rs)
		}
	}
	return n
}

// statusSum sums a status field of the sets, skipping nils.
func statusSum(sets []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += f(&rs.Status)
		}
	}
	return n
}

func actualReplicas(sets []*appsv1.ReplicaSet) int32 {
	return statusSum(sets, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas })
}

func availableReplicas(sets []*appsv1.ReplicaSet) int32 {
	return statusSum(sets, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
}

func readyReplicas(sets []*appsv1.ReplicaSet) int32 {
	return statusSum(sets, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas })
}

// activeSets keeps the non-nil sets that want replicas.
func activeSets(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// byCreation orders oldest first, then by name.
type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int      { return len(o) }
func (o byCreation) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// bySizeOlder orders largest first, the older first among equals.
type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if rsReplicas(o[i]) == rsReplicas(o[j]) {
		return byCreation(o).Less(i, j)
	}
	return rsReplicas(o[i]) > rsReplicas(o[j])
}

// bySizeNewer orders largest first, the newer first among equals.
type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if rsReplicas(o[i]) == rsReplicas(o[j]) {
		return o[j].CreationTimestamp.Before(&o[i].CreationTimestamp)
	}
	return rsReplicas(o[i]) > rsReplicas(o[j])
}

// byRevision orders by revision annotation, then by creation.
type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	ri, rj := revision(o[i]), revision(o[j])
	if ri == rj {
		return byCreation(o).Less(i, j)
	}
	return ri < rj
}

// revision is the set's revision annotation, 0 when absent or invalid.
func revision(rs *appsv1.ReplicaSet) int64 {
	v, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(sets []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range sets {
		m = max(m, revision(rs))
	}
	return m
}

func int32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	s, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(v), true
}

// setReplicasAnnotations records desired and max replicas on rs and
// reports whether it changed anything.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{
		DesiredReplicasAnnotation: strconv.Itoa(int(desired)),
		MaxReplicasAnnotation:     strconv.Itoa(int(maxReplicas)),
	} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// isSaturated reports whether rs alone runs all of d's replicas, available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := int32Annotation(rs, DesiredReplicasAnnotation)
	if !ok {
		return false
	}
	return rsReplicas(rs) == replicasOf(d) && desired == replicasOf(d) && rs.Status.AvailableReplicas == replicasOf(d)
}

// activeOrLatest returns the one set that wants replicas, or when none
// does the new set or else the newest old one; nil when several want
// replicas.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(byCreation(oldRSs)))
	all := activeSets(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(all) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return all[0]
	default:
		return nil
	}
}

// proportion is how many replicas rs gains (or loses, negative) when the
// deployment is resized by toAdd, given added already handed out: rs's
// share of the new maximum, scaled from the maximum recorded on it, capped
// by what is left to hand out.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if replicasOf(d) == 0 {
		return -rsReplicas(rs)
	}
	maxNow := replicasOf(d) + MaxSurge(d)
	maxBefore, ok := int32Annotation(rs, MaxReplicasAnnotation)
	if !ok || maxBefore == 0 {
		maxBefore = d.Status.Replicas
		if maxBefore == 0 {
			return 0
		}
	}
	size := float64(maxNow) * float64(rsReplicas(rs)) / float64(maxBefore)
	return int32(math.Round(size)) - rsReplicas(rs)
}

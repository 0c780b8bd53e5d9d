package daemonset

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/controller"
)

// rollingUpdate replaces ds's out-of-date pods, within maxUnavailable or,
// when maxSurge is set, within maxSurge extra pods. Without surge it
// deletes old pods and leaves their replacement to manage; with surge it
// creates a new pod next to an old one and deletes the old one once the
// new one is available. Pods being deleted count as neither available nor
// unavailable, so that a rollout moves on past nodes that went away.
func (s *syncer) rollingUpdate(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := s.nodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("list daemon pods: %w", err)
	}
	nodeByName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		nodeByName[n.Name] = n
	}
	maxSurge, maxUnavailable, desired, err := updatedDesiredNodeCounts(ds, nodes, byNode)
	if err != nil {
		return controller.Terminal(err)
	}
	gen, _ := templateGeneration(ds)
	now := s.clock.Now()
	available := func(p *corev1.Pod) bool { return isPodAvailable(p, ds.Spec.MinReadySeconds, now) }
	log := controller.LoggerFrom(ctx)

	if maxSurge == 0 {
		numUnavailable := 0
		var replacements, candidates []*corev1.Pod
		for _, name := range sortedKeys(byNode) {
			newPod, oldPod, ok := findUpdatedPodsOnNode(byNode[name], hash, gen)
			if !ok {
				// Surplus pods: manage removes them; count the node unavailable.
				numUnavailable++
				continue
			}
			switch {
			case oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				// manage creates or deletes here.
				numUnavailable++
			case newPod != nil:
				if !available(newPod) {
					numUnavailable++
				}
			default:
				switch {
				case !available(oldPod):
					// Not available anyway: replace it at once.
					replacements = append(replacements, oldPod)
					numUnavailable++
				case numUnavailable >= maxUnavailable:
				default:
					candidates = append(candidates, oldPod)
				}
			}
		}
		n := min(max(maxUnavailable-numUnavailable, 0), len(candidates))
		log.Debug("rolling update", "maxUnavailable", maxUnavailable, "unavailable", numUnavailable, "replacing", len(replacements)+n)
		return s.syncNodes(ctx, key, ds, append(replacements, candidates[:n]...), nil, hash)
	}

	var oldToDelete, shouldNotRunToDelete []*corev1.Pod
	var candidateNodes, allowedNodes []string
	numSurge, numAvailable := 0, 0
	for _, name := range sortedKeys(byNode) {
		newPod, oldPod, ok := findUpdatedPodsOnNode(byNode[name], hash, gen)
		if !ok {
			numSurge++
			continue
		}
		switch {
		case oldPod != nil:
			if available(oldPod) {
				numAvailable++
			}
		case newPod != nil:
			if available(newPod) {
				numAvailable++
			}
		}
		switch {
		case oldPod == nil:
			// Up to date or empty: manage handles it.
		case newPod == nil:
			node := nodeByName[name]
			shouldRun := false
			if node != nil {
				shouldRun, _ = NodeShouldRunDaemonPod(node, ds)
			}
			switch {
			case !available(oldPod):
				if !shouldRun {
					oldToDelete = append(oldToDelete, oldPod)
					continue
				}
				allowedNodes = append(allowedNodes, name)
			case !shouldRun:
				shouldNotRunToDelete = append(shouldNotRunToDelete, oldPod)
			case numSurge < maxSurge:
				candidateNodes = append(candidateNodes, name)
			}
		default:
			if !available(newPod) {
				numSurge++
				continue
			}
			oldToDelete = append(oldToDelete, oldPod)
		}
	}
	// With surge the owner wants full availability: a pod on a node that no
	// longer wants it goes only once enough pods elsewhere are available.
	if deletable := min(numAvailable-desired, len(shouldNotRunToDelete)); deletable > 0 {
		oldToDelete = append(oldToDelete, shouldNotRunToDelete[:deletable]...)
	}
	n := min(max(maxSurge-numSurge, 0), len(candidateNodes))
	log.Debug("rolling update with surge", "maxSurge", maxSurge, "surging", numSurge, "creating", len(allowedNodes)+n, "deleting", len(oldToDelete))
	return s.syncNodes(ctx, key, ds, oldToDelete, append(allowedNodes, candidateNodes[:n]...), hash)
}

// findUpdatedPodsOnNode returns the one new and the one old pod among the
// live pods of a node, or ok=false when there are more of either.
func findUpdatedPodsOnNode(pods []*corev1.Pod, hash string, gen *int64) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isPodUpdated(p, hash, gen) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// updatedDesiredNodeCounts returns maxSurge and maxUnavailable scaled to
// the number of nodes that should run ds's pod, and that number; byNode
// gets an empty entry for each such node without pods. Should both be
// zero, maxUnavailable is 1, so that a rollout can move.
func updatedDesiredNodeCounts(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod) (maxSurge, maxUnavailable, desired int, err error) {
	for _, n := range nodes {
		if run, _ := NodeShouldRunDaemonPod(n, ds); !run {
			continue
		}
		desired++
		if _, ok := byNode[n.Name]; !ok {
			byNode[n.Name] = nil
		}
	}
	if maxUnavailable, err = unavailableCount(ds, desired); err != nil {
		return 0, 0, 0, err
	}
	if maxSurge, err = surgeCount(ds, desired); err != nil {
		return 0, 0, 0, err
	}
	if desired > 0 && maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, desired, nil
}

// unavailableCount is maxUnavailable of n nodes, percentages rounded up.
func unavailableCount(ds *appsv1.DaemonSet, n int) (int, error) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxUnavailable == nil {
		return 0, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, true)
	if err != nil {
		return 0, fmt.Errorf("invalid maxUnavailable: %w", err)
	}
	return v, nil
}

// surgeCount is maxSurge of n nodes, percentages rounded up.
func surgeCount(ds *appsv1.DaemonSet, n int) (int, error) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return 0, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, n, true)
	if err != nil {
		return 0, fmt.Errorf("invalid maxSurge: %w", err)
	}
	return v, nil
}

// allowsSurge reports whether ds's update strategy lets a node run an old
// and a new pod at once.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	n, err := surgeCount(ds, 1)
	return err == nil && n > 0
}

func sortedKeys(m map[string][]*corev1.Pod) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

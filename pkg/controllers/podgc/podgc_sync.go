package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Condition fields written on orphaned pods before their deletion.
const (
	// ReasonDeletionByPodGC is the reason of the DisruptionTarget condition.
	ReasonDeletionByPodGC = "DeletionByPodGC"
	// MessageNodeGone is the message of the DisruptionTarget condition.
	MessageNodeGone = "PodGC: node no longer exists"
)

// podAPI is the part of the API a pass writes through.
type podAPI interface {
	// PatchPodStatus applies a strategic merge patch to the status of
	// namespace/name.
	PatchPodStatus(ctx context.Context, namespace, name string, data []byte) error
	// DeletePod deletes namespace/name with gracePeriodSeconds 0, only if
	// its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// NodeExists reads a node past the cache.
	NodeExists(ctx context.Context, name string) (bool, error)
}

// collector holds what one pass reads and writes. Passes run one at a time.
type collector struct {
	podLister  *cache.Lister[*corev1.Pod]
	nodeLister *cache.Lister[*corev1.Node]
	api        podAPI
	clock      clock.PassiveClock
	// threshold is how many terminated pods are kept; <= 0 keeps all.
	threshold  int
	quarantine time.Duration
	// missingSince is when each node some pod names was first found
	// missing from the node cache; a node leaves it when it is seen again
	// or once it has been checked past the cache.
	missingSince map[string]time.Time
}

// gc runs one pass of every rule.
func (c *collector) gc(ctx context.Context) {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		controller.LoggerFrom(ctx).Error("listing pods", "err", err)
		return
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		controller.LoggerFrom(ctx).Error("listing nodes", "err", err)
		return
	}
	if c.threshold > 0 {
		c.gcTerminated(ctx, pods)
	}
	c.gcTerminating(ctx, pods)
	c.gcOrphaned(ctx, pods, nodes)
	c.gcUnscheduledTerminating(ctx, pods)
}

// gcTerminated deletes the terminated pods beyond the threshold.
func (c *collector) gcTerminated(ctx context.Context, pods []*corev1.Pod) {
	var terminated []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	n := len(terminated) - c.threshold
	if n <= 0 {
		return
	}
	sortByEvictionAndAge(terminated)
	controller.LoggerFrom(ctx).Info("garbage collecting terminated pods", "count", n, "threshold", c.threshold)
	for _, p := range terminated[:n] {
		c.delete(ctx, p, nil)
	}
}

// gcTerminating deletes the pods being deleted on nodes that are not ready
// and tainted out of service.
func (c *collector) gcTerminating(ctx context.Context, pods []*corev1.Pod) {
	var victims []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) || p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		node, err := c.nodeLister.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		if !isNodeReady(node) && hasTaint(node, corev1.TaintNodeOutOfService) {
			victims = append(victims, p)
		}
	}
	sortByEvictionAndAge(victims)
	for _, p := range victims {
		c.delete(ctx, p, nil)
	}
}

// gcOrphaned deletes the pods bound to nodes that are gone: missing from
// the cache for the quarantine and not found past it.
func (c *collector) gcOrphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	existing := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		existing[n.Name] = true
	}
	now := c.clock.Now()
	named := map[string]bool{}
	for _, p := range pods {
		if name := p.Spec.NodeName; name != "" && !existing[name] {
			named[name] = true
			if _, ok := c.missingSince[name]; !ok {
				c.missingSince[name] = now
			}
		}
	}
	deleted := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(c.missingSince)) {
		since := c.missingSince[name]
		switch {
		case existing[name] || !named[name]:
			delete(c.missingSince, name)
		case now.Sub(since) >= c.quarantine:
			ok, err := c.api.NodeExists(ctx, name)
			if err != nil {
				// Look again on the next pass.
				controller.LoggerFrom(ctx).Error("checking node", "node", name, "err", err)
				continue
			}
			delete(c.missingSince, name)
			if !ok {
				deleted[name] = true
			}
		}
	}
	if len(deleted) == 0 {
		return
	}
	cond := &corev1.PodCondition{
		Type:    corev1.DisruptionTarget,
		Status:  corev1.ConditionTrue,
		Reason:  ReasonDeletionByPodGC,
		Message: MessageNodeGone,
	}
	for _, p := range pods {
		if deleted[p.Spec.NodeName] {
			controller.LoggerFrom(ctx).Info("garbage collecting orphaned pod", "pod", p.Namespace+"/"+p.Name, "node", p.Spec.NodeName)
			c.delete(ctx, p, cond)
		}
	}
}

// gcUnscheduledTerminating deletes the pods being deleted that were never
// bound to a node: no kubelet will finish them.
func (c *collector) gcUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			c.delete(ctx, p, nil)
		}
	}
}

// delete marks p Failed (with cond, if not nil) unless it has finished,
// then deletes it with grace period 0. Errors are logged: the next pass
// tries again.
func (c *collector) delete(ctx context.Context, p *corev1.Pod, cond *corev1.PodCondition) {
	logger := controller.LoggerFrom(ctx).With("pod", p.Namespace+"/"+p.Name)
	if !isTerminated(p) {
		patch, err := failedPatch(p, cond, c.clock.Now())
		if err == nil {
			err = c.api.PatchPodStatus(ctx, p.Namespace, p.Name, patch)
		}
		if err != nil {
			if !apierrors.IsNotFound(err) {
				logger.Error("marking pod failed", "err", err)
			}
			return
		}
	}
	if err := c.api.DeletePod(ctx, p.Namespace, p.Name, p.UID); err != nil && !apierrors.IsNotFound(err) {
		logger.Error("deleting pod", "err", err)
	}
}

// failedPatch is the status patch that sets phase Failed and, if cond is
// not nil, cond, stamped now unless its status is what p already has.
func failedPatch(p *corev1.Pod, cond *corev1.PodCondition, now time.Time) ([]byte, error) {
	status := map[string]any{"phase": corev1.PodFailed}
	if cond != nil {
		c := cond.DeepCopy()
		c.LastTransitionTime.Time = now.Truncate(time.Second)
		for _, old := range p.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		status["conditions"] = []*corev1.PodCondition{c}
	}
	data, err := json.Marshal(map[string]any{
		// The uid guards the patch against a pod recreated under the name.
		"metadata": map[string]any{"uid": p.UID},
		"status":   status,
	})
	if err != nil {
		return nil, fmt.Errorf("encode status patch: %w", err)
	}
	return data, nil
}

// isTerminated reports whether p has finished: phase Succeeded or Failed.
func isTerminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// isEvicted reports whether p failed by eviction.
func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
}

// sortByEvictionAndAge orders pods evicted first, then oldest first, then
// by name.
func sortByEvictionAndAge(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
			return ea
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
}

func isNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

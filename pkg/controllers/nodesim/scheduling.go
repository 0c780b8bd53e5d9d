package nodesim

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/internal/nodefit"
)

// The filter reasons, in kube-scheduler's words.
const (
	reasonNodeUnschedulable = "node(s) were unschedulable"
	reasonNodeNotReady      = "node(s) were not ready"
	reasonNodeSelector      = "node(s) didn't match Pod's node affinity/selector"
	reasonTaint             = "node(s) had untolerated taint(s)"
	reasonTooManyPods       = "Too many pods"
	reasonNotRegistered     = "node(s) not registered yet"
)

// The preemption verdicts per node, in kube-scheduler's words: the
// simulator preempts nothing, so a node that failed on resources has no
// victims and one that failed otherwise is beyond help.
const (
	preemptionNotHelpful = "Preemption is not helpful for scheduling"
	preemptionNoVictims  = "No preemption victims found for incoming pod"
)

// The taints a cordoned and a not-ready node stand for; a pod that
// tolerates them may go there, as on a cluster where the node lifecycle
// controller sets them.
var (
	unschedulableTaint = corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}
	notReadyTaint      = corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
)

// chooseNode picks the least loaded node pod fits on and assumes the pod
// there, or returns "" and the scheduler's message of why nothing fits.
func (s *syncer) chooseNode(key string, pod *corev1.Pod) (node, why string) {
	s.scheduling.Lock()
	defer s.scheduling.Unlock()
	load, used := s.loads(), s.usage()
	names := s.nodes.names()
	req := podRequestsOf(pod)
	best := ""
	d := diagnosis{total: len(names), reasons: map[string]int{}}
	for _, name := range names {
		spec := s.nodes.get(name)
		node, err := s.nodeLister.Get(name)
		if err != nil || spec == nil {
			d.fail(false, reasonNotRegistered)
			continue
		}
		if why := fits(pod, node); why != "" {
			d.fail(false, why)
			continue
		}
		if why := insufficient(req, used[name], load[name], spec, node); len(why) > 0 {
			d.fail(true, why...)
			continue
		}
		if best == "" || load[name] < load[best] {
			best = name
		}
	}
	if best == "" {
		return "", d.message(pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever)
	}
	s.mu.Lock()
	s.assumed[key] = best
	if s.assumedReq == nil {
		s.assumedReq = map[string]corev1.ResourceList{}
	}
	s.assumedReq[key] = req
	s.mu.Unlock()
	return best, ""
}

// fits returns why pod can not go to node by the scheduler's filters
// before resources, in their order (NodeUnschedulable, TaintToleration,
// NodeAffinity), or "" when it can. A node that is not Ready takes only
// pods that tolerate the not-ready taint.
func fits(pod *corev1.Pod, node *corev1.Node) string {
	if node.Spec.Unschedulable && !nodefit.TaintTolerated(pod.Spec.Tolerations, &unschedulableTaint) {
		return reasonNodeUnschedulable
	}
	if c := nodeCondition(node, corev1.NodeReady); (c == nil || c.Status != corev1.ConditionTrue) &&
		!nodefit.TaintTolerated(pod.Spec.Tolerations, &notReadyTaint) {
		return reasonNodeNotReady
	}
	if nodefit.UntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, nodefit.ScheduleBlocking) != nil {
		return reasonTaint
	}
	if !nodefit.MatchesNodeSelector(&pod.Spec, node) {
		return reasonNodeSelector
	}
	return ""
}

// insufficient returns the NodeResourcesFit reasons pod, requesting req,
// does not fit node for: "Too many pods" at the pod capacity, then
// "Insufficient <resource>" for each requested resource beyond the
// node's allocatable less used, what its unfinished pods request.
func insufficient(req, used corev1.ResourceList, pods int64, spec *nodeSpec, node *corev1.Node) []string {
	var why []string
	if pods >= spec.maxPods {
		why = append(why, reasonTooManyPods)
	}
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		alloc = spec.capacity
	}
	for _, r := range nodefit.Insufficient(req, used, alloc) {
		why = append(why, "Insufficient "+string(r))
	}
	return why
}

// diagnosis gathers why each node failed a pod.
type diagnosis struct {
	total int
	// reasons counts the nodes per reason.
	reasons map[string]int
	// notHelpful and noVictims count the nodes per preemption verdict.
	notHelpful, noVictims int
}

// fail records one node's reasons; resolvable when only resources failed.
func (d *diagnosis) fail(resolvable bool, reasons ...string) {
	for _, r := range reasons {
		d.reasons[r]++
	}
	if resolvable {
		d.noVictims++
	} else {
		d.notHelpful++
	}
}

// message is the PodScheduled=False message kube-scheduler writes: the
// filter reasons as "<nodes> <reason>" sorted, then the post-filter
// plugins' verdicts (no resource claims to free, and preemption's own
// histogram, or its refusal for preemptionPolicy Never).
func (d *diagnosis) message(preemptNever bool) string {
	msg := fmt.Sprintf("0/%d nodes are available", d.total) + histogram(d.reasons) + "."
	if d.total == 0 {
		return msg
	}
	msg += " no new claims to deallocate, preemption: "
	if preemptNever {
		return msg + "not eligible due to preemptionPolicy=Never."
	}
	verdicts := map[string]int{}
	if d.notHelpful > 0 {
		verdicts[preemptionNotHelpful] = d.notHelpful
	}
	if d.noVictims > 0 {
		verdicts[preemptionNoVictims] = d.noVictims
	}
	return msg + fmt.Sprintf("0/%d nodes are available", d.total) + histogram(verdicts) + "."
}

// histogram is ": <n> <reason>, ..." sorted as strings, or "" for none.
func histogram(counts map[string]int) string {
	if len(counts) == 0 {
		return ""
	}
	parts := make([]string, 0, len(counts))
	for why, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	slices.Sort(parts)
	return ": " + strings.Join(parts, ", ")
}

// usage sums per node the requests of the unfinished pods on it, those
// assumed there included.
func (s *syncer) usage() map[string]corev1.ResourceList {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]corev1.ResourceList, len(s.used))
	for node, u := range s.used {
		out[node] = u.DeepCopy()
	}
	for key, node := range s.assumed {
		req, ok := s.assumedReq[key]
		if !ok {
			continue
		}
		if out[node] == nil {
			out[node] = corev1.ResourceList{}
		}
		nodefit.Add(out[node], req)
	}
	return out
}

// bindRequestsLocked counts the requests of pod, now bound to node.
func (s *syncer) bindRequestsLocked(key, node string, pod *corev1.Pod) {
	req := podRequestsOf(pod)
	if s.boundReq == nil {
		s.boundReq = map[string]corev1.ResourceList{}
		s.used = map[string]corev1.ResourceList{}
	}
	s.boundReq[key] = req
	if s.used[node] == nil {
		s.used[node] = corev1.ResourceList{}
	}
	nodefit.Add(s.used[node], req)
}

// unbindRequestsLocked stops counting the requests of key on node.
func (s *syncer) unbindRequestsLocked(key, node string) {
	req, ok := s.boundReq[key]
	if !ok {
		return
	}
	delete(s.boundReq, key)
	if u := s.used[node]; u != nil {
		nodefit.Sub(u, req)
	}
}

// podRequestsOf is what pod holds on its node, "pods" left out.
func podRequestsOf(pod *corev1.Pod) corev1.ResourceList {
	req := nodefit.PodRequests(&pod.Spec)
	delete(req, corev1.ResourcePods)
	return req
}

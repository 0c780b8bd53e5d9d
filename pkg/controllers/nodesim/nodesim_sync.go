package nodesim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// CompleteAfterAnnotation on a pod whose restartPolicy is Never or
// OnFailure, a Go duration such as "30s", makes the pod succeed that long
// after it started running.
const CompleteAfterAnnotation = "nodesim.kplane.io/complete-after"

// Reasons written into pod conditions and container states.
const (
	reasonUnschedulable     = "Unschedulable"
	reasonContainerCreating = "ContainerCreating"
	reasonContainersNotRdy  = "ContainersNotReady"
	reasonPodCompleted      = "PodCompleted"
	reasonCompleted         = "Completed"
)

// podWriter is the part of the API the sync writes pods through.
type podWriter interface {
	// Bind assigns pod to node through the pods/binding subresource.
	Bind(ctx context.Context, pod *corev1.Pod, node string) error
	// UpdatePodStatus writes pod's status through the status subresource.
	UpdatePodStatus(ctx context.Context, pod *corev1.Pod) error
	// DeletePod deletes namespace/name at once if its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
}

// podState is what the simulator remembers of a pod on one of its nodes.
type podState struct {
	uid types.UID
	// ip is the pod's IP, set when it is first started and kept after.
	ip string
	// boundSeen is when the simulator first saw the pod bound.
	boundSeen time.Time
	// stopAt is when the containers of a deleted pod have stopped.
	stopAt time.Time
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	podLister  *cache.Lister[*corev1.Pod]
	nodeLister *cache.Lister[*corev1.Node]
	pods       podWriter
	clock      clock.PassiveClock
	// nodes are the simulated nodes; AddNode and RemoveNode change them.
	nodes            *nodeSet
	startupDelay     time.Duration
	terminationDelay time.Duration
	// runTime is Config.RunTime.
	runTime time.Duration
	// noScheduling is Config.NoScheduling.
	noScheduling bool
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter func(key string, d time.Duration)

	// scheduling serialises the choice of a node and its assumption, so
	// that concurrent workers spread pods as one would.
	scheduling sync.Mutex

	mu sync.Mutex
	// states holds the pods seen on simulated nodes, by key. Guarded by mu.
	states map[string]*podState
	// assumed holds the pods bound by this simulator that the informer has
	// not shown bound yet, by key, with their node. Guarded by mu.
	assumed map[string]string
	// bound holds the unfinished pods the informer shows on a simulated
	// node, by key, and load counts them per node; both are kept by
	// observe and unobserve so that choosing a node costs no pod list.
	// Guarded by mu.
	bound map[string]string
	load  map[string]int64
	// boundReq holds the resource requests of the pods in bound, by key,
	// and used sums them per node; assumedReq holds those of the assumed
	// pods. Guarded by mu; nil until first used.
	boundReq   map[string]corev1.ResourceList
	used       map[string]corev1.ResourceList
	assumedReq map[string]corev1.ResourceList
	// pools hands out pod IPs per simulated node; a node's is made on
	// first use and seeded then from the pod cache. Guarded by mu; nil
	// until the first is made.
	pools map[string]*ipPool
	// podIPs holds the address each pod on a simulated node holds, by
	// key. Guarded by mu; nil until the first is held.
	podIPs map[string]heldIP
}

// heldIP is an address a pod holds in a node's pool.
type heldIP struct {
	node string
	ip   netip.Addr
}

// sync schedules, starts, completes or removes the pod named by key.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	pod, err := s.podLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		if s.noScheduling || pod.DeletionTimestamp != nil || isTerminal(pod) ||
			pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
			return nil
		}
		return s.schedule(ctx, key, pod)
	}
	if s.nodes.get(pod.Spec.NodeName) == nil {
		s.forget(key)
		return nil
	}
	st := s.state(key, pod)
	switch {
	case pod.DeletionTimestamp != nil:
		return s.terminate(ctx, key, pod, st)
	case isTerminal(pod):
		return nil
	case pod.Status.Phase == corev1.PodRunning && (isPodReady(pod) || restarting(pod)):
		return s.run(ctx, key, pod)
	default:
		return s.start(ctx, key, pod, st)
	}
}

// state returns the pod's state, made afresh when the pod is new or was
// replaced under the same name (the replaced pod's IP is then freed).
// Binding is now visible: the pod is no longer assumed.
func (s *syncer) state(key string, pod *corev1.Pod) *podState {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.assumed, key)
	st := s.states[key]
	if st == nil || st.uid != pod.UID {
		if st != nil {
			s.releaseIPLocked(key)
		}
		st = &podState{uid: pod.UID}
		s.states[key] = st
	}
	return st
}

func (s *syncer) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, key)
	delete(s.assumed, key)
	delete(s.assumedReq, key)
	s.releaseIPLocked(key)
}

// podIPLocked returns the IP of pod, on simulated node node: the one its
// status shows (from an earlier run of the simulator, perhaps), the one
// handed out to it already, or a free one of the node's pod CIDR.
func (s *syncer) podIPLocked(key string, pod *corev1.Pod) (string, error) {
	node := pod.Spec.NodeName
	if pod.Status.PodIP != "" {
		s.holdIPLocked(key, node, pod.Status.PodIP)
		return pod.Status.PodIP, nil
	}
	if h, ok := s.podIPs[key]; ok && h.node == node {
		return h.ip.String(), nil
	}
	s.releaseIPLocked(key)
	if s.nodes.get(node) == nil {
		return "", fmt.Errorf("node %s is no longer simulated", node)
	}
	ip, err := s.poolLocked(node).allocate(key)
	if err != nil {
		return "", fmt.Errorf("node %s: %w", node, err)
	}
	s.setHeldLocked(key, heldIP{node: node, ip: ip})
	return ip.String(), nil
}

// poolLocked returns node's pool, made on first use holding the IPs of the
// unfinished pods the pod cache shows on the node. Workers start only once
// that cache has synced, so a new simulator never hands out an IP a pod
// from before it still holds; later pods reach the pool through observe.
func (s *syncer) poolLocked(node string) *ipPool {
	if p := s.pools[node]; p != nil {
		return p
	}
	p := newIPPool(s.nodes.get(node).podCIDR)
	if s.pools == nil {
		s.pools = map[string]*ipPool{}
	}
	s.pools[node] = p
	for key, h := range s.podIPs {
		if h.node == node {
			p.hold(h.ip, key)
		}
	}
	if pods, err := s.podLister.List(labels.Everything()); err == nil {
		for _, pod := range pods {
			if pod.Spec.NodeName == node && pod.Status.PodIP != "" && !isTerminal(pod) {
				s.holdIPLocked(pod.Namespace+"/"+pod.Name, node, pod.Status.PodIP)
			}
		}
	}
	return p
}

// holdIPLocked records that the pod key on node holds ip. An address that
// does not parse is ignored: it can not collide with one handed out.
func (s *syncer) holdIPLocked(key, node, ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	if h, ok := s.podIPs[key]; ok && (h.node != node || h.ip != a) {
		s.releaseIPLocked(key)
	}
	s.setHeldLocked(key, heldIP{node: node, ip: a})
	if p := s.pools[node]; p != nil {
		p.hold(a, key)
	}
}

func (s *syncer) setHeldLocked(key string, h heldIP) {
	if s.podIPs == nil {
		s.podIPs = map[string]heldIP{}
	}
	s.podIPs[key] = h
}

// releaseIPLocked frees the IP the pod key holds, if any.
func (s *syncer) releaseIPLocked(key string) {
	h, ok := s.podIPs[key]
	if !ok {
		return
	}
	delete(s.podIPs, key)
	if p := s.pools[h.node]; p != nil {
		p.release(h.ip, key)
	}
}

// schedule binds pod to the least loaded node it fits on, or marks it
// unschedulable.
func (s *syncer) schedule(ctx context.Context, key string, pod *corev1.Pod) error {
	best, msg := s.chooseNode(key, pod)
	if best == "" {
		return s.markUnschedulable(ctx, pod, msg)
	}
	if err := s.pods.Bind(ctx, pod, best); err != nil {
		s.mu.Lock()
		delete(s.assumed, key)
		s.mu.Unlock()
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, being deleted, or bound by someone else: the informer
			// brings the news.
			return nil
		}
		return fmt.Errorf("bind to %s: %w", best, err)
	}
	controller.LoggerFrom(ctx).Debug("bound pod", "node", best)
	return nil
}

// loads counts the unfinished pods on each simulated node, those bound
// but not yet seen so included.
func (s *syncer) loads() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	load := make(map[string]int64, s.nodes.len())
	for node, n := range s.load {
		load[node] = n
	}
	for _, node := range s.assumed {
		load[node]++
	}
	return load
}

// observe records where the informer shows pod, for the node loads. It
// reports whether the pod stopped counting on a node (it finished).
func (s *syncer) observe(pod *corev1.Pod) (freed bool) {
	key := pod.Namespace + "/" + pod.Name
	node := ""
	if pod.Spec.NodeName != "" && s.nodes.get(pod.Spec.NodeName) != nil && !isTerminal(pod) {
		node = pod.Spec.NodeName
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pod.Spec.NodeName != "" {
		delete(s.assumed, key)
	}
	switch {
	case node != "" && pod.Status.PodIP != "":
		s.holdIPLocked(key, node, pod.Status.PodIP)
	case node == "" && pod.Spec.NodeName != "" && s.nodes.get(pod.Spec.NodeName) != nil:
		// Finished: its IP is free again, as a kubelet frees a finished
		// pod's sandbox network.
		s.releaseIPLocked(key)
	}
	old, had := s.bound[key]
	if had && old == node {
		return false
	}
	if had {
		s.load[old]--
		s.unbindRequestsLocked(key, old)
		delete(s.bound, key)
	}
	if node != "" {
		s.bound[key] = node
		s.load[node]++
		s.bindRequestsLocked(key, node, pod)
	}
	return had
}

// unobserve forgets a deleted pod. It reports whether the pod counted on
// a node.
func (s *syncer) unobserve(key string) (freed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.assumed, key)
	s.releaseIPLocked(key)
	delete(s.assumedReq, key)
	old, ok := s.bound[key]
	if ok {
		s.load[old]--
		s.unbindRequestsLocked(key, old)
		delete(s.bound, key)
	}
	return ok
}

// markUnschedulable records in the pod's PodScheduled condition why it fits
// no node, unless it says so already.
func (s *syncer) markUnschedulable(ctx context.Context, pod *corev1.Pod, msg string) error {
	if c := podCondition(&pod.Status, corev1.PodScheduled); c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == reasonUnschedulable && c.Message == msg {
		return nil
	}
	next := pod.DeepCopy()
	setPodCondition(&next.Status, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reasonUnschedulable, Message: msg,
	}, s.clock.Now())
	controller.LoggerFrom(ctx).Debug("pod fits no node", "message", msg)
	return s.pods.UpdatePodStatus(ctx, next)
}

// start moves a pod bound to a simulated node to running: its containers
// are created at once and run startupDelay after the pod was first seen
// bound.
func (s *syncer) start(ctx context.Context, key string, pod *corev1.Pod, st *podState) error {
	now := s.clock.Now()
	s.mu.Lock()
	if st.boundSeen.IsZero() {
		st.boundSeen = now
	}
	runAt := st.boundSeen.Add(s.startupDelay)
	if st.ip == "" {
		ip, err := s.podIPLocked(key, pod)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		st.ip = ip
	}
	ip := st.ip
	s.mu.Unlock()
	node := s.nodes.get(pod.Spec.NodeName)
	if node == nil {
		// Removed meanwhile: its pods are no longer ours.
		return nil
	}
	next := pod.DeepCopy()
	if remaining := runAt.Sub(now); remaining > 0 {
		// Arm the wake-up before writing, so whoever sees the write knows
		// the wake-up is pending.
		s.enqueueAfter(key, remaining)
		if pod.Status.StartTime != nil {
			return nil
		}
		creatingStatus(&next.Status, pod, node, ip, now)
	} else {
		runningStatus(&next.Status, pod, node, ip, now)
	}
	return s.pods.UpdatePodStatus(ctx, next)
}

// terminate removes a pod being deleted once its containers have stopped.
func (s *syncer) terminate(ctx context.Context, key string, pod *corev1.Pod, st *podState) error {
	now := s.clock.Now()
	s.mu.Lock()
	if st.stopAt.IsZero() {
		var grace time.Duration
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		st.stopAt = now.Add(min(grace, s.terminationDelay))
	}
	stopAt := st.stopAt
	s.mu.Unlock()
	if remaining := stopAt.Sub(now); remaining > 0 {
		s.enqueueAfter(key, remaining)
		return nil
	}
	if err := s.failStopped(ctx, pod); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("fail stopped pod: %w", err)
	}
	err := s.pods.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// creatingStatus is a pod whose containers are being created.
func creatingStatus(st *corev1.PodStatus, pod *corev1.Pod, node *nodeSpec, ip string, now time.Time) {
	st.Phase = corev1.PodPending
	setAddresses(st, node, ip)
	t := metav1.NewTime(now)
	st.StartTime = &t
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotRdy}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonContainersNotRdy}, now)
	no := false
	st.ContainerStatuses = make([]corev1.ContainerStatus, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		st.ContainerStatuses[i] = corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			Started: &no,
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}},
		}
	}
}

// runningStatus is a pod whose containers all run and are ready.
func runningStatus(st *corev1.PodStatus, pod *corev1.Pod, node *nodeSpec, ip string, now time.Time) {
	st.Phase = corev1.PodRunning
	setAddresses(st, node, ip)
	t := metav1.NewTime(now)
	if st.StartTime == nil {
		st.StartTime = &t
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(st, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue}, now)
	}
	yes := true
	st.InitContainerStatuses = make([]corev1.ContainerStatus, len(pod.Spec.InitContainers))
	for i, c := range pod.Spec.InitContainers {
		no := false
		st.InitContainerStatuses[i] = corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod.UID, c.Name),
			Ready: true, Started: &no,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: t, FinishedAt: t, ContainerID: containerID(pod.UID, c.Name),
			}},
		}
	}
	st.ContainerStatuses = make([]corev1.ContainerStatus, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		st.ContainerStatuses[i] = corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     imageID(c.Image),
			ContainerID: containerID(pod.UID, c.Name),
			Ready:       true,
			Started:     &yes,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}
	}
}

// succeededStatus is a pod whose containers all exited with 0.
func succeededStatus(st *corev1.PodStatus, pod *corev1.Pod, now time.Time) {
	st.Phase = corev1.PodSucceeded
	t := metav1.NewTime(now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reasonPodCompleted}, now)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reasonPodCompleted}, now)
	no := false
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		started := t
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready = false
		cs.Started = &no
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: reasonCompleted, StartedAt: started, FinishedAt: t, ContainerID: cs.ContainerID,
		}}
	}
}

func setAddresses(st *corev1.PodStatus, node *nodeSpec, ip string) {
	st.HostIP = node.hostIP
	st.HostIPs = []corev1.HostIP{{IP: node.hostIP}}
	if st.PodIP == "" {
		st.PodIP = ip
		st.PodIPs = []corev1.PodIP{{IP: ip}}
	}
}

// imageID is a stable fake digest of an image reference.
func imageID(image string) string {
	if strings.Contains(image, "@") {
		// Pinned by digest already: that digest is the image's id.
		return image
	}
	name := image
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	sum := sha256.Sum256([]byte(image))
	return name + "@sha256:" + hex.EncodeToString(sum[:])
}

// containerID is a stable fake runtime id of a pod's container.
func containerID(uid types.UID, name string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + name))
	return "kplane://" + hex.EncodeToString(sum[:])
}

// setPodCondition adds or replaces c, keeping the transition time when the
// status did not change.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	st.Conditions = append(st.Conditions, c)
}

func podCondition(st *corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func isPodReady(p *corev1.Pod) bool {
	c := podCondition(&p.Status, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

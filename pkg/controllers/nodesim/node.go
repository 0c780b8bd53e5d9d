package nodesim

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
)

// KubeletVersion is the nodeInfo.kubeletVersion of simulated nodes.
const KubeletVersion = "kplane"

// nodeSpec is what the simulator knows of one of its nodes.
type nodeSpec struct {
	name   string
	hostIP string
	// podCIDR is the node's own /24 of pod IPs, as node IPAM would set.
	podCIDR  netip.Prefix
	labels   map[string]string
	capacity corev1.ResourceList
	maxPods  int64
}

func newNodeSpec(cfg Config, i int) nodeSpec {
	name := cfg.NamePrefix + strconv.Itoa(i)
	lbls := maps.Clone(cfg.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[corev1.LabelHostname] = name
	lbls[corev1.LabelOSStable] = "linux"
	lbls[corev1.LabelArchStable] = runtime.GOARCH
	pods := cfg.Capacity[corev1.ResourcePods]
	return nodeSpec{
		name: name,
		// 172.18.0.0/16, as a container-based cluster's node network.
		hostIP:   fmt.Sprintf("172.18.%d.%d", (i+2)/256, (i+2)%256),
		podCIDR:  nodePodCIDR(i),
		labels:   lbls,
		capacity: cfg.Capacity,
		maxPods:  pods.Value(),
	}
}

// nodePodCIDR is the pod CIDR of the i-th node: the i-th /24 from
// 10.244.0.0, the default cluster CIDR of many distributions, wrapping
// within 10.0.0.0/8, so that 65,536 nodes get distinct ones.
func nodePodCIDR(i int) netip.Prefix {
	n := (244*256 + i) % 65536
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(n >> 8), byte(n), 0}), 24)
}

// object is the Node as first registered.
func (n *nodeSpec) object() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: maps.Clone(n.labels)},
		Spec:       corev1.NodeSpec{PodCIDR: n.podCIDR.String(), PodCIDRs: []string{n.podCIDR.String()}},
	}
}

// status is the node's status at now.
func (n *nodeSpec) status(now time.Time) corev1.NodeStatus {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return corev1.NodeStatus{
		Capacity:    n.capacity.DeepCopy(),
		Allocatable: n.capacity.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.hostIP},
			{Type: corev1.NodeHostName, Address: n.name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               n.name,
			SystemUUID:              n.name,
			BootID:                  n.name,
			KernelVersion:           "simulated",
			OSImage:                 "kplane simulated node",
			ContainerRuntimeVersion: "kplane://simulated",
			KubeletVersion:          KubeletVersion,
			OperatingSystem:         "linux",
			Architecture:            runtime.GOARCH,
		},
	}
}

// heartbeat registers the nodes and renews their Leases.
type heartbeat struct {
	api           clientAPI
	clock         clock.WithTicker
	nodes         *nodeSet
	interval      time.Duration
	leaseDuration time.Duration
	logger        *slog.Logger

	lostMu sync.Mutex
	// lostNodes holds the nodes whose Node object was seen deleted, to
	// register again on the next beat. Guarded by lostMu.
	lostNodes map[string]bool

	// The fields below belong to run's goroutine.

	// nodeUIDs holds the uid of every node registered so far.
	nodeUIDs map[string]types.UID
	// leases holds the last Lease written per node, to renew without a read.
	leases       map[string]*coordinationv1.Lease
	namespaceSet bool
}

// start registers the nodes and renews the Leases once, and returns the
// names of the nodes registered and the ticker of the following beats.
func (h *heartbeat) start(ctx context.Context) ([]string, clock.Ticker) {
	h.nodeUIDs = map[string]types.UID{}
	h.leases = map[string]*coordinationv1.Lease{}
	// The ticker exists before the first beat, so a fake clock stepped
	// after the first Leases appear always ticks it.
	t := h.clock.NewTicker(h.interval)
	h.beat(ctx)
	registered := make([]string, 0, len(h.nodeUIDs))
	for name := range h.nodeUIDs {
		registered = append(registered, name)
	}
	return registered, t
}

// run beats on every tick of t until ctx ends; failures are logged and
// retried on the next tick. It stops t.
func (h *heartbeat) run(ctx context.Context, t clock.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		h.beat(ctx)
	}
}

func (h *heartbeat) beat(ctx context.Context) {
	if !h.namespaceSet {
		if err := h.api.ensureNamespace(ctx, NodeLeaseNamespace); err != nil {
			h.logger.Error("can not create the node lease namespace", "err", err)
		} else {
			h.namespaceSet = true
		}
	}
	h.lostMu.Lock()
	for name := range h.lostNodes {
		delete(h.nodeUIDs, name)
		delete(h.leases, name)
	}
	h.lostNodes = nil
	h.lostMu.Unlock()
	nodes := h.nodes.all()
	if len(h.nodeUIDs) > len(nodes) {
		// Forget the nodes removed.
		for name := range h.nodeUIDs {
			if h.nodes.get(name) == nil {
				delete(h.nodeUIDs, name)
				delete(h.leases, name)
			}
		}
	}
	for _, n := range nodes {
		if _, ok := h.nodeUIDs[n.name]; !ok {
			uid, err := h.register(ctx, n)
			if err != nil {
				h.logger.Error("can not register node", "node", n.name, "err", err)
				continue
			}
			h.nodeUIDs[n.name] = uid
		}
		if h.namespaceSet {
			if err := h.renew(ctx, n); err != nil {
				if apierrors.IsNotFound(err) && ctx.Err() == nil {
					// The node, and with it the Lease, or the namespace may
					// have been deleted: make them again on the next beat.
					delete(h.nodeUIDs, n.name)
					h.namespaceSet = false
				}
				h.logger.Error("can not renew node lease", "node", n.name, "err", err)
			}
		}
	}
}

// lost makes the node named name register again on the next beat.
func (h *heartbeat) lost(name string) {
	h.lostMu.Lock()
	defer h.lostMu.Unlock()
	if h.lostNodes == nil {
		h.lostNodes = map[string]bool{}
	}
	h.lostNodes[name] = true
}

// register creates the node, or takes over an existing one of that name,
// and writes its status; it returns the node's uid.
func (h *heartbeat) register(ctx context.Context, n *nodeSpec) (types.UID, error) {
	node, err := h.api.nodes.Create(ctx, n.object(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = h.api.nodes.Get(ctx, n.name, metav1.GetOptions{})
	}
	if err != nil {
		return "", err
	}
	changed := false
	if node.Spec.PodCIDR == "" {
		// Taken over from before pod CIDRs were set: set it, as node IPAM
		// does once. A different CIDR already set is left alone (it can not
		// change); pods still get IPs from this node's own range.
		node.Spec.PodCIDR = n.podCIDR.String()
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
		changed = true
	} else if node.Spec.PodCIDR != n.podCIDR.String() {
		h.logger.Warn("node has another pod CIDR; pod IPs come from the simulator's", "node", n.name,
			"podCIDR", node.Spec.PodCIDR, "using", n.podCIDR.String())
	}
	// kube-apiserver's TaintNodesByCondition admission taints a new node
	// not-ready, and kube-controller-manager's node lifecycle controller
	// lifts the taint once the node reports Ready, as this one does below.
	// Against an API server without that controller (kplane's controller
	// manager has none) the taint would stay: lift it here.
	if i := slices.IndexFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }); i >= 0 {
		node.Spec.Taints = slices.Delete(slices.Clone(node.Spec.Taints), i, i+1)
		changed = true
	}
	if changed {
		if node, err = h.api.nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("update node: %w", err)
		}
	}
	node.Status = n.status(h.clock.Now())
	if _, err := h.api.nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("write status: %w", err)
	}
	h.logger.Info("registered node", "node", n.name)
	return node.UID, nil
}

// renew sets the node's Lease renewTime to now, creating the Lease when
// there is none.
func (h *heartbeat) renew(ctx context.Context, n *nodeSpec) error {
	leases := h.api.leases.Namespace(NodeLeaseNamespace)
	now := metav1.NewMicroTime(h.clock.Now())
	if l := h.leases[n.name]; l != nil {
		next := l.DeepCopy()
		next.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			h.leases[n.name] = updated
			return nil
		}
		delete(h.leases, n.name)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
		// Changed or gone under us: read it again below.
	}
	l, err := leases.Get(ctx, n.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		holder := n.name
		seconds := int32(h.leaseDuration / time.Second)
		uid := h.nodeUIDs[n.name]
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: NodeLeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &holder,
				LeaseDurationSeconds: &seconds,
				RenewTime:            &now,
			},
		}
		if uid != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: uid}}
		}
		created, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		h.leases[n.name] = created
		return nil
	case err != nil:
		return err
	}
	l.Spec.RenewTime = &now
	updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	h.leases[n.name] = updated
	return nil
}

// clientAPI is the simulator's access to the API server.
type clientAPI struct {
	c      *client.Client
	pods   *client.ResourceClient[*corev1.Pod]
	nodes  *client.ResourceClient[*corev1.Node]
	leases *client.ResourceClient[*coordinationv1.Lease]
	ns     *client.ResourceClient[*corev1.Namespace]
}

func (a clientAPI) ensureNamespace(ctx context.Context, name string) error {
	_, err := a.ns.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	// Forbidden: the nodes may not create namespaces, as kubelets may not;
	// the API server creates this one itself.
	if apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return err
}

func (a clientAPI) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	b := &corev1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	body, err := jsonMarshal(b)
	if err != nil {
		return err
	}
	_, err = a.c.Do(ctx, client.Request{
		Method: "POST",
		Path:   "/api/v1/namespaces/" + pod.Namespace + "/pods/" + pod.Name + "/binding",
		Body:   body,
	})
	return err
}

func (a clientAPI) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) error {
	_, err := a.pods.Namespace(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func (a clientAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	zero := int64(0)
	return a.pods.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
}

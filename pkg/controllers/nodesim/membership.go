package nodesim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddNode starts simulating one more node, named NamePrefix followed by
// the next unused index, registers its Node object and returns its name.
// Its Lease follows on the next heartbeat. It may be called before or
// while Run runs, from any goroutine; it blocks for the writes. If the
// registration fails the node is still simulated and registers on a later
// heartbeat; the error says why.
func (sim *Simulator) AddNode(ctx context.Context) (string, error) {
	n := sim.syncer.nodes.addNext(func(i int) nodeSpec { return newNodeSpec(sim.cfg, i) })
	if _, err := sim.heartbeat.register(ctx, n); err != nil {
		return n.name, fmt.Errorf("nodesim: register node %s: %w", n.name, err)
	}
	sim.retryUnschedulable()
	return n.name, nil
}

// RemoveNode stops simulating the node named name and deletes its Node
// object and Lease, as when a machine leaves the cluster for good. Pods
// bound to it are left as they are, unfinished, for the pod garbage
// collector to delete, as pods of a vanished node on a cluster. Removing
// a node that is not simulated is an error. Safe to call while Run runs.
func (sim *Simulator) RemoveNode(ctx context.Context, name string) error {
	if !sim.syncer.nodes.remove(name) {
		return fmt.Errorf("nodesim: node %s is not simulated", name)
	}
	api := sim.heartbeat.api
	if err := api.nodes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("nodesim: delete node %s: %w", name, err)
	}
	if err := api.leases.Namespace(NodeLeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("nodesim: delete lease of node %s: %w", name, err)
	}
	return nil
}

package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// identity names one object: the coordinates an ownerReference carries plus
// the namespace. It is comparable, so it keys maps and caches.
type identity struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

func (id identity) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", id.APIVersion, id.Kind, id.Namespace, id.Name, id.UID)
}

// ownerIdentity is the identity an ownerReference of an object in namespace
// names. The namespace is a guess: it is right for namespaced owners and
// ignored when the owner turns out to be cluster-scoped.
func ownerIdentity(ref metav1.OwnerReference, namespace string) identity {
	return identity{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: ref.UID}
}

// matchesCoordinates reports whether ref names exactly the object id (the
// namespace is not part of an ownerReference and is not compared).
func matchesCoordinates(ref metav1.OwnerReference, id identity) bool {
	return ref.UID == id.UID && ref.Name == id.Name && ref.Kind == id.Kind && ref.APIVersion == id.APIVersion
}

// node is one object of the dependency graph. All its fields except
// identity are guarded by the graph's mu; identity never changes (a node
// whose identity must change is replaced by a copy).
type node struct {
	identity identity
	// dependents are the nodes whose owners include this node's uid.
	dependents map[*node]struct{}
	// owners are the object's ownerReferences as last observed.
	owners []metav1.OwnerReference
	// beingDeleted: the object has a deletionTimestamp.
	beingDeleted bool
	// deletingDependents: the object is being deleted and carries the
	// foregroundDeletion finalizer.
	deletingDependents bool
	// virtual: the node stands for an owner named by a dependent but not
	// (yet) observed by an informer.
	virtual bool
	// observed: an informer event has shown the object. A virtual node
	// becomes observed when its object is seen.
	observed bool
}

// clone copies n for replacing it under another identity; the dependents
// set is copied, the owners slice shared (it is never modified in place).
func (n *node) clone() *node {
	c := *n
	c.dependents = make(map[*node]struct{}, len(n.dependents))
	for d := range n.dependents {
		c.dependents[d] = struct{}{}
	}
	return &c
}

// graph is the set of nodes by uid. It is safe for concurrent use: the
// graph builder writes under mu, the workers read through its methods.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node // guarded by mu
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

// get returns the node with uid.
func (g *graph) get(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// holds reports whether n is the graph's node for its uid, not one removed
// or replaced.
func (g *graph) holds(n *node) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[n.identity.UID] == n
}

// ofKinds returns the nodes whose identity has one of kinds.
func (g *graph) ofKinds(kinds map[schema.GroupKind]bool) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for _, n := range g.nodes {
		gv, err := schema.ParseGroupVersion(n.identity.APIVersion)
		if err == nil && kinds[schema.GroupKind{Group: gv.Group, Kind: n.identity.Kind}] {
			out = append(out, n)
		}
	}
	return out
}

// len is the number of nodes.
func (g *graph) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// nodeState is a consistent copy of a node's mutable fields, for workers.
type nodeState struct {
	owners             []metav1.OwnerReference
	dependents         []*node
	beingDeleted       bool
	deletingDependents bool
	virtual            bool
	observed           bool
}

// state reads n's fields under the lock.
func (g *graph) state(n *node) nodeState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.stateLocked(n)
}

func (g *graph) stateLocked(n *node) nodeState {
	s := nodeState{
		owners:             n.owners,
		beingDeleted:       n.beingDeleted,
		deletingDependents: n.deletingDependents,
		virtual:            n.virtual,
		observed:           n.observed,
	}
	for d := range n.dependents {
		s.dependents = append(s.dependents, d)
	}
	return s
}

// blockingDependents are the dependents of n whose ownerReference to n has
// blockOwnerDeletion set.
func (g *graph) blockingDependents(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for d := range n.dependents {
		for _, ref := range d.owners {
			if ref.UID == n.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, d)
			}
		}
	}
	return out
}

// isDeletingDependents reads n.deletingDependents under the lock.
func (g *graph) isDeletingDependents(n *node) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return n.deletingDependents
}

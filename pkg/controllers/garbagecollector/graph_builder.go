package garbagecollector

import (
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// eventType is the kind of change an event reports.
type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
	// syncEvent carries no object: processing it closes done, so a waiter
	// knows every event queued before it is in the graph.
	syncEvent
)

// event is one change for the graph builder. Informer handlers make them
// from what they see; the workers make virtual delete events when a live
// read shows an object absent.
type event struct {
	typ     eventType
	virtual bool
	obj     metav1.Object
	old     metav1.Object // update events only
	gvk     schema.GroupVersionKind
	done    chan struct{} // syncEvent only
}

// nodeAdder is what the builder needs of the worker queues.
type nodeAdder interface {
	Add(n *node)
	AddRateLimited(n *node)
}

// graphBuilder turns events into graph changes and queues the nodes that
// need work: attemptToDelete for dependents that may have lost an owner and
// owners deleting in the foreground, attemptToOrphan for owners deleting
// with the orphan finalizer. One goroutine calls processEvent at a time.
type graphBuilder struct {
	graph           *graph
	absent          *absentCache
	attemptToDelete nodeAdder
	attemptToOrphan nodeAdder
	recorder        EventRecorder
	logger          *slog.Logger
}

// identityOf is the identity of an observed object of kind gvk.
func identityOf(obj metav1.Object, gvk schema.GroupVersionKind) identity {
	return identity{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		UID:        obj.GetUID(),
	}
}

func beingDeleted(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }

func hasFinalizer(obj metav1.Object, f string) bool { return slices.Contains(obj.GetFinalizers(), f) }

// startsWaitingFor reports whether the update from old to obj is the one
// that marks obj for deletion with finalizer f (old is nil for adds).
func startsWaitingFor(old, obj metav1.Object, f string) bool {
	if !beingDeleted(obj) || !hasFinalizer(obj, f) {
		return false
	}
	return old == nil || !beingDeleted(old) || !hasFinalizer(old, f)
}

// processEvent applies ev to the graph.
func (gb *graphBuilder) processEvent(ev *event) {
	if ev.typ == syncEvent {
		close(ev.done)
		return
	}
	uid := ev.obj.GetUID()
	if uid == "" {
		gb.logger.Debug("ignoring an object without uid", "kind", ev.gvk.Kind, "name", ev.obj.GetName())
		return
	}
	gb.graph.mu.Lock()
	defer gb.graph.mu.Unlock()

	existing, found := gb.graph.nodes[uid]
	if found && !ev.virtual && !existing.observed {
		existing = gb.observeLocked(existing, identityOf(ev.obj, ev.gvk))
	}
	switch {
	case (ev.typ == addEvent || ev.typ == updateEvent) && !found:
		n := &node{
			identity:           identityOf(ev.obj, ev.gvk),
			dependents:         map[*node]struct{}{},
			owners:             ev.obj.GetOwnerReferences(),
			beingDeleted:       beingDeleted(ev.obj),
			deletingDependents: beingDeleted(ev.obj) && hasFinalizer(ev.obj, metav1.FinalizerDeleteDependents),
			observed:           true,
		}
		gb.graph.nodes[uid] = n
		gb.addDependentToOwnersLocked(n, n.owners)
		gb.processTransitionsLocked(ev.old, ev.obj, n)
	case ev.typ == addEvent || ev.typ == updateEvent:
		owners := ev.obj.GetOwnerReferences()
		added, removed, changed := referencesDiffs(existing.owners, owners)
		if len(added)+len(removed)+len(changed) > 0 {
			gb.addUnblockedOwnersToDeleteQueueLocked(removed, changed)
			existing.owners = owners
			gb.addDependentToOwnersLocked(existing, added)
			gb.removeDependentFromOwnersLocked(existing, removed)
		}
		if beingDeleted(ev.obj) {
			existing.beingDeleted = true
		}
		gb.processTransitionsLocked(ev.old, ev.obj, existing)
	case ev.typ == deleteEvent:
		if !found {
			return
		}
		if ev.virtual && !gb.virtualDeleteRemovesLocked(existing, identityOf(ev.obj, ev.gvk)) {
			return
		}
		gb.removeNodeLocked(existing)
		if len(existing.dependents) > 0 {
			gb.absent.add(identityOf(ev.obj, ev.gvk))
		}
		for dep := range existing.dependents {
			gb.attemptToDelete.Add(dep)
		}
		for _, ref := range existing.owners {
			if owner, ok := gb.graph.nodes[ref.UID]; ok && owner.deletingDependents {
				// The owner may have been waiting for this dependent.
				gb.attemptToDelete.Add(owner)
			}
		}
	}
}

// observeLocked marks a node first seen as virtual as observed under the
// identity the informer reports. When the dependents had guessed other
// coordinates, the node is replaced by a copy with the observed identity,
// and the dependents that named it wrongly are queued: their reference is
// invalid and will be treated as dangling.
func (gb *graphBuilder) observeLocked(n *node, observed identity) *node {
	if observed != n.identity {
		_, invalid := partitionDependents(n.dependents, observed)
		for _, dep := range invalid {
			if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
				gb.reportInvalidNamespaceOwnerRef(dep, observed.UID)
			}
			gb.attemptToDelete.Add(dep)
		}
		// Replace rather than edit: queued work holds the old node and
		// its identity. A virtual node has no owners, so only the uid map
		// refers to it.
		n = n.clone()
		n.identity = observed
		gb.graph.nodes[observed.UID] = n
	}
	n.virtual = false
	n.observed = true
	return n
}

// virtualDeleteRemovesLocked decides what a virtual delete event (a live
// read found the object deleted) for identity deleted does to the node
// existing of the same uid, and reports whether to remove the node.
func (gb *graphBuilder) virtualDeleteRemovesLocked(existing *node, deleted identity) bool {
	if existing.virtual {
		matching, nonmatching := partitionDependents(existing.dependents, deleted)
		if len(nonmatching) == 0 {
			return true
		}
		// Some dependents name the owner with other coordinates: those
		// might still exist, so keep the node.
		if len(matching) > 0 {
			gb.absent.add(deleted)
			for _, dep := range matching {
				gb.attemptToDelete.Add(dep)
			}
		}
		if existing.identity == deleted {
			if alt, ok := alternateOwnerIdentity(nonmatching, deleted); ok {
				// A virtual node has no owners, so only the uid map
				// refers to it.
				replacement := existing.clone()
				replacement.identity = alt
				gb.graph.nodes[alt.UID] = replacement
				gb.attemptToDelete.AddRateLimited(replacement)
			}
		}
		return false
	}
	if existing.identity != deleted {
		// The observed object disagrees with the coordinates that were
		// read as deleted: only the dependents using those are affected.
		_, nonmatching := partitionDependents(existing.dependents, existing.identity)
		if len(nonmatching) > 0 {
			gb.absent.add(deleted)
			for _, dep := range nonmatching {
				gb.attemptToDelete.Add(dep)
			}
		}
		return false
	}
	return true
}

// addDependentToOwnersLocked links n to the owners named by refs, creating
// virtual nodes for owners not in the graph and queueing them, so a live
// read decides whether they exist.
func (gb *graphBuilder) addDependentToOwnersLocked(n *node, refs []metav1.OwnerReference) {
	for _, ref := range refs {
		owner, ok := gb.graph.nodes[ref.UID]
		if !ok {
			owner = &node{
				identity:   ownerIdentity(ref, n.identity.Namespace),
				dependents: map[*node]struct{}{},
				virtual:    true,
			}
			gb.graph.nodes[ref.UID] = owner
		}
		owner.dependents[n] = struct{}{}
		switch {
		case !ok:
			gb.attemptToDelete.Add(owner)
		case owner.observed:
			// A namespaced owner must be in the dependent's namespace;
			// cluster-scoped owners may be named from anywhere.
			if owner.identity.Namespace != "" && owner.identity.Namespace != n.identity.Namespace {
				gb.reportInvalidNamespaceOwnerRef(n, ref.UID)
				gb.attemptToDelete.Add(n)
			} else if !matchesCoordinates(ref, owner.identity) {
				gb.attemptToDelete.Add(n)
			}
		}
	}
}

// removeDependentFromOwnersLocked unlinks n from the owners of refs.
func (gb *graphBuilder) removeDependentFromOwnersLocked(n *node, refs []metav1.OwnerReference) {
	for _, ref := range refs {
		if owner, ok := gb.graph.nodes[ref.UID]; ok {
			delete(owner.dependents, n)
		}
	}
}

// removeNodeLocked takes n out of the graph and out of its owners'
// dependents. Its own dependents keep their references; they are queued by
// the caller.
func (gb *graphBuilder) removeNodeLocked(n *node) {
	if cur, ok := gb.graph.nodes[n.identity.UID]; ok && cur == n {
		delete(gb.graph.nodes, n.identity.UID)
	}
	gb.removeDependentFromOwnersLocked(n, n.owners)
}

// addUnblockedOwnersToDeleteQueueLocked queues the owners deleting in the
// foreground that a dependent stopped blocking, by removing its reference
// or clearing blockOwnerDeletion, so they can finish.
func (gb *graphBuilder) addUnblockedOwnersToDeleteQueueLocked(removed []metav1.OwnerReference, changed []refChange) {
	for _, ref := range removed {
		if isBlocking(ref) {
			if owner, ok := gb.graph.nodes[ref.UID]; ok && owner.deletingDependents {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
	for _, c := range changed {
		if isBlocking(c.old) && !isBlocking(c.new) {
			if owner, ok := gb.graph.nodes[c.new.UID]; ok && owner.deletingDependents {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
}

// processTransitionsLocked queues n when this event starts its deletion
// with the orphan or the foregroundDeletion finalizer.
func (gb *graphBuilder) processTransitionsLocked(old, obj metav1.Object, n *node) {
	if startsWaitingFor(old, obj, metav1.FinalizerOrphanDependents) {
		gb.attemptToOrphan.Add(n)
		return
	}
	if startsWaitingFor(old, obj, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for dep := range n.dependents {
			gb.attemptToDelete.Add(dep)
		}
		gb.attemptToDelete.Add(n)
	}
}

// reportInvalidNamespaceOwnerRef records a Warning event on dep for its
// reference to ownerUID, which names a namespaced owner in another
// namespace. Such references never resolve and are treated as dangling.
func (gb *graphBuilder) reportInvalidNamespaceOwnerRef(dep *node, ownerUID types.UID) {
	var ref metav1.OwnerReference
	for _, r := range dep.owners {
		if r.UID == ownerUID {
			ref = r
			break
		}
	}
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: dep.identity.APIVersion, Kind: dep.identity.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: dep.identity.Namespace, Name: dep.identity.Name, UID: dep.identity.UID},
	}
	gb.logger.Info("ownerReference names an owner in another namespace", "dependent", dep.identity.String(), "owner", ref.UID)
	gb.recorder.Event(obj, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
		fmt.Sprintf("ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
			ref.APIVersion, ref.Kind, dep.identity.Namespace, ref.Name, ref.UID, dep.identity.Namespace))
}

func isBlocking(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// refChange is an ownerReference whose uid stayed and whose other fields
// changed.
type refChange struct {
	old, new metav1.OwnerReference
}

// referencesDiffs compares two ownerReference lists by uid.
func referencesDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []refChange) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, r := range old {
		oldByUID[r.UID] = r
	}
	for _, r := range cur {
		o, ok := oldByUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if !sameRef(o, r) {
			changed = append(changed, refChange{old: o, new: r})
		}
		delete(oldByUID, r.UID)
	}
	for _, r := range old {
		if _, ok := oldByUID[r.UID]; ok {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

func sameRef(a, b metav1.OwnerReference) bool {
	boolEq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolEq(a.Controller, b.Controller) && boolEq(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

// partitionDependents splits deps into those whose reference to owner's uid
// matches owner's coordinates (namespace included, for a namespaced owner)
// and those with a reference that does not. A dependent with both kinds of
// reference is in both.
func partitionDependents(deps map[*node]struct{}, owner identity) (matching, nonmatching []*node) {
	namespaced := owner.Namespace != ""
	for dep := range deps {
		var match, mismatch bool
		if namespaced && dep.identity.Namespace != owner.Namespace {
			mismatch = true
		} else {
			for _, ref := range dep.owners {
				if ref.UID != owner.UID {
					continue
				}
				if matchesCoordinates(ref, owner) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			nonmatching = append(nonmatching, dep)
		}
	}
	sortNodes(matching)
	sortNodes(nonmatching)
	return matching, nonmatching
}

// alternateOwnerIdentity returns another identity the dependents give the
// owner verified absent under absent, the smallest in a fixed order so the
// choice is deterministic.
func alternateOwnerIdentity(deps []*node, absent identity) (identity, bool) {
	clusterScoped := absent.Namespace == ""
	var best identity
	found := false
	for _, dep := range deps {
		for _, ref := range dep.owners {
			if ref.UID != absent.UID {
				continue
			}
			id := ownerIdentity(ref, dep.identity.Namespace)
			if clusterScoped && id.APIVersion == absent.APIVersion && id.Kind == absent.Kind {
				// The kind is known to be cluster-scoped.
				id.Namespace = ""
			}
			if id == absent {
				continue
			}
			if !found || id.String() < best.String() {
				best, found = id, true
			}
		}
	}
	return best, found
}

func sortNodes(ns []*node) {
	slices.SortFunc(ns, func(a, b *node) int {
		switch {
		case a.identity.String() < b.identity.String():
			return -1
		case a.identity.String() > b.identity.String():
			return 1
		}
		return 0
	})
}

package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ObjectAPI reads and writes objects of any monitored resource by name,
// seeing only their metadata. Implementations must be safe for concurrent
// use and return *apierrors.StatusError values for API failures.
type ObjectAPI interface {
	Get(ctx context.Context, res Resource, namespace, name string) (*metav1.PartialObjectMetadata, error)
	Delete(ctx context.Context, res Resource, namespace, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, res Resource, namespace, name string, pt types.PatchType, data []byte) error
}

// errVirtualDeleteQueued means the item was found absent and a virtual
// delete event was queued for the graph builder: there is nothing to retry.
var errVirtualDeleteQueued = errors.New("item absent, virtual delete event queued")

// errNamespacedOwnerOfClusterScoped means a cluster-scoped object names a
// namespaced owner, which can never resolve: retrying does not help.
var errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped object names a namespaced owner")

// collector holds the logic the workers run; it reads the graph and the
// API, and changes the graph only through events.
type collector struct {
	graph *graph
	api   ObjectAPI
	// kinds holds every monitored resource by kind; it changes as
	// discovery finds resources or loses them.
	kinds atomic.Pointer[map[schema.GroupKind]Resource]
	// retired holds the kinds that were monitored and are served no more
	// (their CRD was deleted): their objects are gone. Kinds never
	// monitored are not in it: they may be served later.
	retired atomic.Pointer[map[schema.GroupKind]bool]
	absent  *absentCache
	// missed, if set, is told of a lookup of a kind not monitored (so
	// that discovery looks for it at once).
	missed func()
	// enqueueDelete queues a node for attemptToDelete.
	enqueueDelete func(n *node)
	// enqueueEvent hands a virtual event to the graph builder.
	enqueueEvent func(ev *event)
	recorder     EventRecorder
	logger       *slog.Logger
}

// resourceFor returns the monitored resource of kind apiVersion/kind.
func (c *collector) resourceFor(apiVersion, kind string) (Resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Resource{}, fmt.Errorf("parse apiVersion %q: %w", apiVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	res, ok := (*c.kinds.Load())[gk]
	if !ok {
		if r := c.retired.Load(); r != nil && (*r)[gk] {
			// A NotFound: the callers treat the object as gone.
			return Resource{}, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
				Message: fmt.Sprintf("kind %s is no longer served", gk),
			}}
		}
		if c.missed != nil {
			c.missed()
		}
		return Resource{}, fmt.Errorf("no monitored resource has kind %s", schema.GroupKind{Group: gv.Group, Kind: kind})
	}
	return res, nil
}

// namespaceFor is the namespace to address an object of res in.
func namespaceFor(res Resource, namespace string) string {
	if res.Namespaced {
		return namespace
	}
	return ""
}

// getObject reads the object named by id.
func (c *collector) getObject(ctx context.Context, id identity) (*metav1.PartialObjectMetadata, error) {
	res, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	return c.api.Get(ctx, res, namespaceFor(res, id.Namespace), id.Name)
}

// deleteObject deletes the object named by id, only if it still has id's
// uid, with the given propagation policy.
func (c *collector) deleteObject(ctx context.Context, id identity, policy metav1.DeletionPropagation) error {
	res, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	uid := id.UID
	return c.api.Delete(ctx, res, namespaceFor(res, id.Namespace), id.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
}

// patchObject patches the object named by id.
func (c *collector) patchObject(ctx context.Context, id identity, pt types.PatchType, data []byte) error {
	res, err := c.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	return c.api.Patch(ctx, res, namespaceFor(res, id.Namespace), id.Name, pt, data)
}

// virtualDelete tells the graph builder that the object id is gone.
func (c *collector) virtualDelete(id identity) {
	gv, _ := schema.ParseGroupVersion(id.APIVersion)
	c.enqueueEvent(&event{
		typ:     deleteEvent,
		virtual: true,
		obj:     &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID}},
		gvk:     gv.WithKind(id.Kind),
	})
}

// attemptToDeleteItem decides the fate of item: collected when none of its
// owners exists, stripped of its dangling references when some do, deleted
// in the foreground when its remaining owners wait for it, and, for an
// owner deleting in the foreground, finalized once nothing blocks it.
func (c *collector) attemptToDeleteItem(ctx context.Context, item *node) error {
	st := c.graph.state(item)
	if st.beingDeleted && !st.deletingDependents {
		// Deletion is under way; the delete event will queue the dependents.
		return nil
	}
	latest, err := c.getObject(ctx, item.identity)
	switch {
	case apierrors.IsNotFound(err):
		c.virtualDelete(item.identity)
		return errVirtualDeleteQueued
	case err != nil:
		return err
	}
	if latest.UID != item.identity.UID {
		c.virtualDelete(item.identity)
		return errVirtualDeleteQueued
	}
	if st.deletingDependents {
		return c.processDeletingDependentsItem(ctx, item)
	}
	refs := latest.OwnerReferences
	if len(refs) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classifyReferences(ctx, item, refs)
	if err != nil {
		return err
	}
	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// Some owner exists: the item stays, without the references to
		// owners that are gone or waiting for it.
		var uids []types.UID
		for _, r := range slices.Concat(dangling, waiting) {
			uids = append(uids, r.UID)
		}
		patch, err := deleteOwnerRefsPatch(item.identity.UID, uids...)
		if err != nil {
			return err
		}
		return c.patchObject(ctx, item.identity, types.StrategicMergePatchType, patch)
	case len(waiting) != 0 && len(st.dependents) != 0:
		for _, dep := range st.dependents {
			if c.graph.isDeletingDependents(dep) {
				// A dependent of item waits for item, which waits for
				// its owner: break the cycle by no longer blocking.
				patch, err := unblockOwnerRefsPatch(item.identity.UID, latest.OwnerReferences)
				if err != nil {
					return err
				}
				if patch != nil {
					if err := c.patchObject(ctx, item.identity, types.StrategicMergePatchType, patch); err != nil {
						return err
					}
				}
				break
			}
		}
		return c.deleteObject(ctx, item.identity, metav1.DeletePropagationForeground)
	default:
		// No owner exists: collect the item, honouring its own
		// finalizers' propagation.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		c.logger.Info("deleting object whose owners are gone", "item", item.identity.String(), "propagationPolicy", policy)
		return c.deleteObject(ctx, item.identity, policy)
	}
}

// classifyReferences sorts refs into owners that exist and are not
// waiting (solid), owners that are gone (dangling) and owners deleting in
// the foreground (waiting).
func (c *collector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := c.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reports whether the owner ref names is gone: a live read finds
// nothing by that name, or an object with another uid. Owners of namespaced
// kinds are looked for in the dependent's namespace only.
func (c *collector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node) (bool, *metav1.PartialObjectMetadata, error) {
	key := ownerIdentity(ref, "")
	if c.absent.has(key) {
		return true, nil, nil
	}
	key.Namespace = item.identity.Namespace
	if c.absent.has(key) {
		return true, nil, nil
	}
	res, err := c.resourceFor(ref.APIVersion, ref.Kind)
	switch {
	case apierrors.IsNotFound(err):
		c.absent.add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	if !res.Namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && res.Namespaced {
		c.reportClusterScopedWithNamespacedOwner(item, ref)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	owner, err := c.api.Get(ctx, res, namespaceFor(res, item.identity.Namespace), ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		c.absent.add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	if owner.UID != ref.UID {
		c.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func (c *collector) reportClusterScopedWithNamespacedOwner(item *node, ref metav1.OwnerReference) {
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: item.identity.APIVersion, Kind: item.identity.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: item.identity.Name, UID: item.identity.UID},
	}
	c.recorder.Event(obj, "Warning", "OwnerRefInvalidNamespace",
		fmt.Sprintf("ownerRef [%s/%s, namespace: , name: %s, uid: %s] does not exist in namespace %q", ref.APIVersion, ref.Kind, ref.Name, ref.UID, ""))
}

// processDeletingDependentsItem finishes a foreground deletion: with no
// blocking dependent left the foregroundDeletion finalizer is removed, so
// the API server deletes the owner; otherwise the blocking dependents are
// queued for deletion.
func (c *collector) processDeletingDependentsItem(ctx context.Context, item *node) error {
	blocking := c.graph.blockingDependents(item)
	if len(blocking) == 0 {
		return c.removeFinalizer(ctx, item, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !c.graph.isDeletingDependents(dep) {
			c.enqueueDelete(dep)
		}
	}
	return nil
}

// orphanDependents removes the references to owner from every dependent,
// then the orphan finalizer from owner.
func (c *collector) orphanDependents(ctx context.Context, owner *node) error {
	st := c.graph.state(owner)
	var errs []error
	for _, dep := range st.dependents {
		patch, err := deleteOwnerRefsPatch(dep.identity.UID, owner.identity.UID)
		if err != nil {
			return err
		}
		err = c.patchObject(ctx, dep.identity, types.StrategicMergePatchType, patch)
		// A dependent gone, or replaced (the uid precondition fails with
		// Conflict), no longer refers to owner.
		if err != nil && !apierrors.IsNotFound(err) && !(apierrors.IsConflict(err) && c.replaced(ctx, dep.identity)) {
			errs = append(errs, fmt.Errorf("orphan %s: %w", dep.identity, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

// replaced reports whether the object id names is gone or has another uid.
func (c *collector) replaced(ctx context.Context, id identity) bool {
	obj, err := c.getObject(ctx, id)
	return apierrors.IsNotFound(err) || (err == nil && obj.UID != id.UID)
}

// removeFinalizerAttempts bounds the read-patch cycles of removeFinalizer
// that lose to concurrent writers.
const removeFinalizerAttempts = 5

// removeFinalizer removes finalizer from the object of n, with a merge
// patch carrying the resourceVersion it was read at, retrying conflicts.
func (c *collector) removeFinalizer(ctx context.Context, n *node, finalizer string) error {
	for range removeFinalizerAttempts {
		obj, err := c.getObject(ctx, n.identity)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("remove finalizer %s from %s: %w", finalizer, n.identity, err)
		}
		if obj.UID != n.identity.UID || !slices.Contains(obj.Finalizers, finalizer) {
			return nil
		}
		rest := []string{}
		for _, f := range obj.Finalizers {
			if f != finalizer {
				rest = append(rest, f)
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": obj.ResourceVersion,
			"finalizers":      rest,
		}})
		if err != nil {
			return err
		}
		err = c.patchObject(ctx, n.identity, types.MergePatchType, patch)
		if !apierrors.IsConflict(err) {
			if err == nil {
				c.logger.Info("removed finalizer", "item", n.identity.String(), "finalizer", finalizer)
			}
			return err
		}
	}
	return fmt.Errorf("remove finalizer %s from %s: conflicts in %d attempts", finalizer, n.identity, removeFinalizerAttempts)
}

// deleteOwnerRefsPatch is a strategic merge patch deleting the
// ownerReferences with ownerUIDs from the object with uid; the uid makes
// the API server refuse it if the object was replaced.
func deleteOwnerRefsPatch(uid types.UID, ownerUIDs ...types.UID) ([]byte, error) {
	refs := make([]map[string]string, 0, len(ownerUIDs))
	for _, o := range ownerUIDs {
		refs = append(refs, map[string]string{"$patch": "delete", "uid": string(o)})
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": uid}})
}

// unblockOwnerRefsPatch is a strategic merge patch setting
// blockOwnerDeletion to false on every blocking reference of refs, or nil
// when none blocks.
func unblockOwnerRefsPatch(uid types.UID, refs []metav1.OwnerReference) ([]byte, error) {
	var out []map[string]any
	for _, r := range refs {
		if isBlocking(r) {
			out = append(out, map[string]any{"uid": r.UID, "blockOwnerDeletion": false})
		}
	}
	if out == nil {
		return nil, nil
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": out, "uid": uid}})
}

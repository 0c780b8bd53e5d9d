package namespace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// syncer holds what a sync needs; it is safe for concurrent use by the
// workers (it keeps no per-sync state).
type syncer struct {
	lister     *cache.Lister[*corev1.Namespace]
	namespaces *client.ResourceClient[*corev1.Namespace]
	client     *client.Client
	// resources, when not nil, are the resources to empty; otherwise
	// discovery finds them.
	resources    []schema.GroupVersionResource
	discovery    *client.DiscoveryClient
	clock        clock.Clock
	recheck      time.Duration
	enqueueAfter func(key string, d time.Duration)
}

// sync empties and finalizes the namespace named key if it is being
// deleted.
func (s *syncer) sync(ctx context.Context, key string) error {
	cached, err := s.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp == nil {
		return nil
	}
	// Act on the live state, not the cache: the namespace may be gone or
	// already finalized.
	ns, err := s.namespaces.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	resources, discoveryErr := s.namespacedResources(ctx)
	res := s.deleteAllContent(ctx, ns.Name, resources)
	res.discoveryErr = discoveryErr
	if discoveryErr != nil {
		res.errs = append(res.errs, discoveryErr)
	}
	if err := s.updateStatus(ctx, ns, res.conditions(metav1.NewTime(s.clock.Now()))); err != nil {
		return err
	}
	if len(res.errs) > 0 {
		return fmt.Errorf("namespace %s: %w", ns.Name, errors.Join(res.errs...))
	}
	if len(res.remaining) > 0 {
		s.enqueueAfter(key, s.recheck)
		return nil
	}
	return s.finalize(ctx, ns.Name)
}

// contentResult is what deleting a namespace's content found.
type contentResult struct {
	// errs are the failed deletions and lists, and a failed discovery.
	errs []error
	// discoveryErr is set when discovery failed (for some groups).
	discoveryErr error
	// remaining counts the objects left per resource, and finalizers the
	// objects left that each finalizer holds.
	remaining  map[schema.GroupVersionResource]int
	finalizers map[string]int
}

// namespacedResources returns the resources a namespace's content may be
// of: the configured ones, or those discovery finds. With a discovery that
// failed for some groups, it returns the others and the error.
func (s *syncer) namespacedResources(ctx context.Context) ([]schema.GroupVersionResource, error) {
	if s.resources != nil {
		return s.resources, nil
	}
	lists, err := s.discovery.ServerPreferredResources(ctx)
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Namespaced && !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "delete") && slices.Contains(r.Verbs, "list") {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, err
}

// deleteAllContent deletes the objects of every resource in namespace ns and
// counts what is left.
func (s *syncer) deleteAllContent(ctx context.Context, ns string, resources []schema.GroupVersionResource) contentResult {
	res := contentResult{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	for _, gvr := range resources {
		left, err := s.deleteResource(ctx, gvr, ns)
		if err != nil {
			res.errs = append(res.errs, err)
			continue
		}
		if len(left) > 0 {
			res.remaining[gvr] += len(left)
		}
		for _, m := range left {
			for _, f := range m.Finalizers {
				res.finalizers[f]++
			}
		}
	}
	return res
}

// deleteResource deletes the objects of gvr in ns (deletecollection, or
// list and delete each where it is not served) and returns what remains.
func (s *syncer) deleteResource(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]metav1.PartialObjectMetadata, error) {
	path := client.CollectionPath(gvr, ns)
	_, err := s.client.Do(ctx, client.Request{Method: http.MethodDelete, Path: path})
	switch {
	case apierrors.IsNotFound(err):
		// Not served by this server: nothing of it can be in ns.
		return nil, nil
	case apierrors.IsMethodNotSupported(err):
		items, err := s.list(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		for _, item := range items {
			if item.DeletionTimestamp != nil {
				continue
			}
			_, err := s.client.Do(ctx, client.Request{Method: http.MethodDelete, Path: path + "/" + item.Name})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return nil, fmt.Errorf("delete %s %s: %w", gvr.GroupResource(), item.Name, err)
			}
		}
	case err != nil:
		return nil, fmt.Errorf("delete collection %s: %w", gvr.GroupResource(), err)
	}
	items, err := s.list(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
	}
	return items, nil
}

// list returns the metadata of the objects of a collection.
func (s *syncer) list(ctx context.Context, path string) ([]metav1.PartialObjectMetadata, error) {
	resp, err := s.client.Do(ctx, client.Request{Path: path})
	if err != nil {
		return nil, err
	}
	var list metav1.PartialObjectMetadataList
	if err := json.NewDecoder(bytes.NewReader(resp.Body)).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	return list.Items, nil
}

// Condition reasons and messages, as Kubernetes writes them.
const (
	reasonResourcesDiscovered    = "ResourcesDiscovered"
	reasonParsedGroupVersions    = "ParsedGroupVersions"
	reasonContentDeleted         = "ContentDeleted"
	reasonContentDeletionFailed  = "ContentDeletionFailed"
	reasonContentRemoved         = "ContentRemoved"
	reasonDiscoveryFailed        = "DiscoveryFailed"
	reasonSomeResourcesRemain    = "SomeResourcesRemain"
	reasonContentHasNoFinalizers = "ContentHasNoFinalizers"
	reasonSomeFinalizersRemain   = "SomeFinalizersRemain"
)

// conditions returns the deletion conditions the namespace gets for r,
// stamped now.
func (r contentResult) conditions(now metav1.Time) []corev1.NamespaceCondition {
	cond := func(t corev1.NamespaceConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: t, Status: status, LastTransitionTime: now, Reason: reason, Message: msg}
	}
	discovered := cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, reasonResourcesDiscovered, "All resources successfully discovered")
	if r.discoveryErr != nil {
		discovered = cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, reasonDiscoveryFailed, "Discovery failed for some groups: "+r.discoveryErr.Error())
	}
	out := []corev1.NamespaceCondition{
		discovered,
		cond(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionFalse, reasonParsedGroupVersions, "All legacy kube types successfully parsed"),
	}
	if errs := slices.DeleteFunc(slices.Clone(r.errs), func(err error) bool { return err == r.discoveryErr }); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		out = append(out, cond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, reasonContentDeletionFailed,
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(errs), strings.Join(msgs, ", "))))
	} else {
		out = append(out, cond(corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, reasonContentDeleted, "All content successfully deleted, may be waiting on finalization"))
	}
	if len(r.remaining) > 0 {
		var parts []string
		for gvr, n := range r.remaining {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(parts)
		out = append(out, cond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, reasonSomeResourcesRemain, "Some resources are remaining: "+strings.Join(parts, ", ")))
	} else {
		out = append(out, cond(corev1.NamespaceContentRemaining, corev1.ConditionFalse, reasonContentRemoved, "All content successfully removed"))
	}
	if len(r.finalizers) > 0 {
		var parts []string
		for f, n := range r.finalizers {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		out = append(out, cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, reasonSomeFinalizersRemain, "Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", ")))
	} else {
		out = append(out, cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionFalse, reasonContentHasNoFinalizers, "All content-preserving finalizers finished"))
	}
	return out
}

// mergeConditions returns current with want applied: a condition whose
// status, reason and message did not change keeps its transition time. It
// reports whether anything changed.
func mergeConditions(current, want []corev1.NamespaceCondition) ([]corev1.NamespaceCondition, bool) {
	out := slices.Clone(current)
	changed := false
	for _, w := range want {
		i := slices.IndexFunc(out, func(c corev1.NamespaceCondition) bool { return c.Type == w.Type })
		switch {
		case i < 0:
			out = append(out, w)
			changed = true
		case out[i].Status != w.Status || out[i].Reason != w.Reason || out[i].Message != w.Message:
			out[i] = w
			changed = true
		}
	}
	return out, changed
}

// updateStatus writes the Terminating phase and the conditions when they
// changed, retrying conflicts on a fresh read.
func (s *syncer) updateStatus(ctx context.Context, ns *corev1.Namespace, want []corev1.NamespaceCondition) error {
	for attempt := 0; ; attempt++ {
		conds, changed := mergeConditions(ns.Status.Conditions, want)
		if !changed && ns.Status.Phase == corev1.NamespaceTerminating {
			return nil
		}
		upd := ns.DeepCopy()
		upd.Status.Phase = corev1.NamespaceTerminating
		upd.Status.Conditions = conds
		_, err := s.namespaces.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || attempt >= 5 {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if ns, err = s.namespaces.Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
}

// finalize removes "kubernetes" from the namespace's spec.finalizers
// through the finalize subresource, retrying conflicts on a fresh read.
func (s *syncer) finalize(ctx context.Context, name string) error {
	for attempt := 0; ; attempt++ {
		ns, err := s.namespaces.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
			return nil
		}
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		ns.APIVersion, ns.Kind = "v1", "Namespace"
		body, err := json.Marshal(ns)
		if err != nil {
			return err
		}
		_, err = s.client.Do(ctx, client.Request{Method: http.MethodPut, Path: "/api/v1/namespaces/" + name + "/finalize", Body: body})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < 5:
			continue
		default:
			return fmt.Errorf("finalize namespace %s: %w", name, err)
		}
	}
}

package daemonset

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controllers/deployment"
)

// This file keeps the DaemonSet's ControllerRevisions: one per distinct
// pod template, named <daemonset>-<hash>, labelled with the hash, holding
// in data the patch that puts that template back (what `kubectl rollout
// undo` applies), numbered by revision. The functions without a receiver
// are general to controllers that keep a history.

// templatePatch is the strategic merge patch that replaces spec.template
// of obj (a workload with spec.template) by its current one: the data of
// its ControllerRevisions.
func templatePatch(obj runtime.Object) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	var whole map[string]any
	if err := json.Unmarshal(raw, &whole); err != nil {
		return nil, fmt.Errorf("unmarshal: %w", err)
	}
	spec, _ := whole["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// revisionMatches reports whether rev holds data, the template patch of
// the workload now.
func revisionMatches(rev *appsv1.ControllerRevision, data []byte) bool {
	return bytes.Equal(rev.Data.Raw, data)
}

// maxRevision is the highest revision number of revs, 0 for none.
func maxRevision(revs []*appsv1.ControllerRevision) int64 {
	var m int64
	for _, r := range revs {
		m = max(m, r.Revision)
	}
	return m
}

// sortByRevision sorts revs oldest first: by revision, then creation time,
// then name.
func sortByRevision(revs []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		switch {
		case a.Revision != b.Revision:
			return cmp.Compare(a.Revision, b.Revision)
		case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// revisionHash is the hash that names the revision of template, the
// pod-template-hash algorithm of Deployments.
func revisionHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	return deployment.ComputeHash(template, collisionCount)
}

// controlledRevisions returns the ControllerRevisions ds controls, after
// adopting matching orphans and releasing those that stopped matching.
func (s *syncer) controlledRevisions(ctx context.Context, ds *appsv1.DaemonSet) ([]*appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, controller.Terminal(fmt.Errorf("invalid selector: %w", err))
	}
	all, err := s.revLister.Namespace(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	m, err := controller.NewRefManager(controller.RefManagerConfig[*appsv1.ControllerRevision]{
		Owner: ds, OwnerKind: daemonSetKind, Selector: selector,
		Patcher:  controller.PatcherFunc(s.revisions.PatchRevision),
		GetOwner: s.freshOwner(ds),
		Logger:   controller.LoggerFrom(ctx),
	})
	if err != nil {
		return nil, err
	}
	return m.Claim(ctx, all)
}

// constructHistory returns the revision of ds's current template, made
// when there is none, and the older ones. Revisions without the hash label
// get it (their name); duplicates of the current one are folded into the
// newest; the current one is renumbered past all the others when an older
// template came back.
func (s *syncer) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	revs, err := s.controlledRevisions(ctx, ds)
	if err != nil {
		return nil, nil, err
	}
	data, err := templatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	var current []*appsv1.ControllerRevision
	for _, rev := range revs {
		if _, ok := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			next := rev.DeepCopy()
			if next.Labels == nil {
				next.Labels = map[string]string{}
			}
			next.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = rev.Name
			if rev, err = s.revisions.UpdateRevision(ctx, next); err != nil {
				return nil, nil, fmt.Errorf("label revision %s: %w", next.Name, err)
			}
		}
		if revisionMatches(rev, data) {
			current = append(current, rev)
		} else {
			old = append(old, rev)
		}
	}
	next := maxRevision(old) + 1
	switch len(current) {
	case 0:
		if cur, err = s.snapshot(ctx, ds, next, data); err != nil {
			return nil, nil, err
		}
	case 1:
		cur = current[0]
	default:
		if cur, err = s.dedupRevisions(ctx, ds, current); err != nil {
			return nil, nil, err
		}
	}
	if cur.Revision < next {
		bumped := cur.DeepCopy()
		bumped.Revision = next
		if cur, err = s.revisions.UpdateRevision(ctx, bumped); err != nil {
			return nil, nil, fmt.Errorf("renumber revision %s: %w", bumped.Name, err)
		}
	}
	return cur, old, nil
}

// snapshot creates the revision of ds's current template, numbered
// revision. A revision of that name holding another template is a hash
// collision: status.collisionCount is raised, so that the next sync
// hashes differently, and the sync fails to be retried.
func (s *syncer) snapshot(ctx context.Context, ds *appsv1.DaemonSet, revision int64, data []byte) (*appsv1.ControllerRevision, error) {
	hash := revisionHash(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := maps.Clone(ds.Spec.Template.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ds.Name + "-" + hash,
			Namespace:       ds.Namespace,
			Labels:          lbls,
			Annotations:     maps.Clone(ds.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, daemonSetKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
	created, err := s.revisions.CreateRevision(ctx, rev)
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create revision %s: %w", rev.Name, err)
	}
	existing, gerr := s.revisions.GetRevision(ctx, ds.Namespace, rev.Name)
	if gerr != nil {
		return nil, fmt.Errorf("read revision %s: %w", rev.Name, gerr)
	}
	if revisionMatches(existing, data) {
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == ds.UID {
			return existing, nil
		}
	}
	fresh, gerr := s.daemonSets.GetDaemonSet(ctx, ds.Namespace, ds.Name)
	if gerr != nil {
		return nil, fmt.Errorf("read daemon set: %w", gerr)
	}
	if !ptr.Equal(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("stale collision count %v of daemon set %s, want %v; retrying", ptr.Deref(ds.Status.CollisionCount, 0), ds.Name, ptr.Deref(fresh.Status.CollisionCount, 0))
	}
	fresh.Status.CollisionCount = ptr.To(ptr.Deref(fresh.Status.CollisionCount, 0) + 1)
	if _, uerr := s.daemonSets.UpdateStatus(ctx, fresh); uerr != nil {
		return nil, fmt.Errorf("raise collision count: %w", uerr)
	}
	controller.LoggerFrom(ctx).Info("revision hash collision, raised collisionCount", "collisionCount", *fresh.Status.CollisionCount)
	return nil, fmt.Errorf("create revision %s: %w", rev.Name, err)
}

// dedupRevisions keeps the newest of several revisions of the current
// template, moves the pods labelled with the others' hashes to its hash,
// and deletes the others.
func (s *syncer) dedupRevisions(ctx context.Context, ds *appsv1.DaemonSet, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	sortByRevision(current)
	keep := current[len(current)-1]
	keepHash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	pods, err := s.daemonPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	for _, dup := range current[:len(current)-1] {
		dupHash := dup.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		for _, pod := range pods {
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != dupHash {
				continue
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: keepHash}}})
			if err != nil {
				return nil, err
			}
			if err := s.pods.Patch(ctx, pod.Namespace, pod.Name, types.StrategicMergePatchType, patch); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("relabel pod %s: %w", pod.Name, err)
			}
		}
		if err := s.revisions.DeleteRevision(ctx, dup.Namespace, dup.Name); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete duplicate revision %s: %w", dup.Name, err)
		}
	}
	return keep, nil
}

// cleanupHistory deletes the oldest of old beyond spec.revisionHistoryLimit
// (default 10), sparing any revision a live pod of ds still runs.
func (s *syncer) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision) error {
	limit := int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	pods, err := s.daemonPods(ctx, ds)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			live[h] = true
		}
	}
	old = slices.Clone(old)
	sortByRevision(old)
	for _, rev := range old {
		if toKill <= 0 {
			break
		}
		if live[rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		if err := s.revisions.DeleteRevision(ctx, rev.Namespace, rev.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete revision %s: %w", rev.Name, err)
		}
		toKill--
	}
	return nil
}

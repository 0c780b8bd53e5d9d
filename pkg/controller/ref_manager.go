package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// RefManagerConfig configures NewRefManager.
type RefManagerConfig[T metav1.Object] struct {
	// Owner is the controlling object as the controller last saw it, usually
	// from its cache. Required, with a UID.
	Owner metav1.Object
	// OwnerKind is the group, version and kind written into ownerReferences.
	// Required.
	OwnerKind schema.GroupVersionKind
	// Selector picks the objects the owner wants. Required; labels.Nothing()
	// claims nothing and releases everything the owner holds.
	Selector labels.Selector
	// Patcher writes the ownerReference changes to objects of type T. Required.
	Patcher Patcher
	// GetOwner reads the owner from the API server, bypassing any cache. It
	// is called at most once per RefManager, and only when an adoption is
	// about to happen. Required.
	GetOwner func(ctx context.Context) (metav1.Object, error)
	// Logger receives adoption and release messages. Defaults to the
	// logger from slog.Default().
	Logger *slog.Logger
}

// RefManager claims objects of type T for one owner: it adopts matching
// orphans and releases owned objects that stopped matching, and never
// touches objects another controller owns.
//
// A RefManager is meant for one sync pass: the fresh read of the owner that
// guards adoption is made once and remembered, so build a new one per sync.
// Its methods are safe for concurrent use.
type RefManager[T metav1.Object] struct {
	owner     metav1.Object
	ownerKind schema.GroupVersionKind
	selector  labels.Selector
	patcher   Patcher
	getOwner  func(ctx context.Context) (metav1.Object, error)
	logger    *slog.Logger

	// canAdoptOnce guards canAdoptErr, the result of the single fresh read.
	canAdoptOnce sync.Once
	canAdoptErr  error
}

// NewRefManager returns a RefManager for cfg.Owner.
func NewRefManager[T metav1.Object](cfg RefManagerConfig[T]) (*RefManager[T], error) {
	switch {
	case cfg.Owner == nil:
		return nil, errors.New("ref manager: owner is required")
	case cfg.Owner.GetUID() == "":
		return nil, fmt.Errorf("ref manager: owner %s/%s has no uid", cfg.Owner.GetNamespace(), cfg.Owner.GetName())
	case cfg.OwnerKind.Kind == "" || cfg.OwnerKind.Version == "":
		return nil, errors.New("ref manager: owner kind and version are required")
	case cfg.Selector == nil:
		return nil, errors.New("ref manager: selector is required")
	case cfg.Patcher == nil:
		return nil, errors.New("ref manager: patcher is required")
	case cfg.GetOwner == nil:
		return nil, errors.New("ref manager: GetOwner is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &RefManager[T]{
		owner:     cfg.Owner,
		ownerKind: cfg.OwnerKind,
		selector:  cfg.Selector,
		patcher:   cfg.Patcher,
		getOwner:  cfg.GetOwner,
		logger:    cfg.Logger.With("owner", objectRef(cfg.Owner), "ownerKind", cfg.OwnerKind.Kind),
	}, nil
}

// Claim claims each of objs, as ClaimObject does, for objects that match the
// selector and every filter (filters run only on objects the selector
// matches). It returns the objects the owner now controls, in the order
// given, and the errors of the claims that failed joined together; a failed
// claim does not stop the others.
func (m *RefManager[T]) Claim(ctx context.Context, objs []T, filters ...func(T) bool) ([]T, error) {
	match := func(obj T) bool {
		if !m.selector.Matches(labels.Set(obj.GetLabels())) {
			return false
		}
		for _, f := range filters {
			if !f(obj) {
				return false
			}
		}
		return true
	}
	var claimed []T
	var errs []error
	for _, obj := range objs {
		ok, err := m.ClaimObject(ctx, obj, match)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, obj)
		}
	}
	return claimed, errors.Join(errs...)
}

// ClaimObject decides whether the owner controls obj, changing obj's
// ownerReferences where needed, and reports whether it now does:
//
//   - controlled by another UID: left alone, false;
//   - controlled by the owner and matching: true, with no write (also while
//     the owner is being deleted);
//   - controlled by the owner and not matching: released, false; nothing is
//     written while the owner is being deleted;
//   - an orphan that matches, in the owner's namespace, not being deleted,
//     while the owner is not being deleted: adopted, true;
//   - any other orphan: left alone, false.
//
// An object that vanished (NotFound) or changed identity (Conflict, or
// Invalid on release) under the write is reported as not claimed without an
// error: the informer will deliver that change. Other write failures, and a
// failed fresh read of the owner, are returned so the caller retries.
func (m *RefManager[T]) ClaimObject(ctx context.Context, obj T, match func(T) bool) (bool, error) {
	if isNil(obj) {
		return false, errors.New("ref manager: nil object")
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.owner.GetUID() {
			return false, nil
		}
		if match(obj) {
			return true, nil
		}
		if m.owner.GetDeletionTimestamp() != nil {
			// Releasing takes a write; an owner on its way out leaves its
			// objects to the garbage collector instead.
			return false, nil
		}
		if err := m.Release(ctx, obj); err != nil {
			return false, err
		}
		return false, nil
	}

	if m.owner.GetDeletionTimestamp() != nil || !match(obj) {
		return false, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := m.owner.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		// A namespaced owner may only own objects in its own namespace.
		return false, nil
	}
	if err := m.canAdopt(ctx); err != nil {
		return false, fmt.Errorf("can not adopt %s (%s): %w", objectRef(obj), obj.GetUID(), err)
	}
	if err := m.Adopt(ctx, obj); err != nil {
		// canAdopt has succeeded, so err is the patch's own.
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			m.logger.Debug("object changed during adoption, skipping", "object", objectRef(obj), "err", err)
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// canAdopt makes the fresh read of the owner, once.
func (m *RefManager[T]) canAdopt(ctx context.Context) error {
	m.canAdoptOnce.Do(func() {
		fresh, err := m.getOwner(ctx)
		switch {
		case err != nil:
			m.canAdoptErr = fmt.Errorf("can not recheck owner %s: %w", objectRef(m.owner), err)
		case fresh.GetUID() != m.owner.GetUID():
			m.canAdoptErr = fmt.Errorf("owner %s is gone: found uid %s, want %s", objectRef(m.owner), fresh.GetUID(), m.owner.GetUID())
		case fresh.GetDeletionTimestamp() != nil:
			m.canAdoptErr = fmt.Errorf("owner %s is being deleted since %v", objectRef(m.owner), fresh.GetDeletionTimestamp())
		}
	})
	return m.canAdoptErr
}

// Adopt makes the owner obj's controller by a strategic merge patch that
// adds an ownerReference with controller and blockOwnerDeletion set, with
// obj's uid as a precondition, after the fresh read of the owner allows it.
// The API server rejects the patch if obj already has another controller.
func (m *RefManager[T]) Adopt(ctx context.Context, obj T) error {
	if err := m.canAdopt(ctx); err != nil {
		return fmt.Errorf("can not adopt %s (%s): %w", objectRef(obj), obj.GetUID(), err)
	}
	data, err := adoptPatch(m.owner, m.ownerKind, obj.GetUID())
	if err != nil {
		return err
	}
	m.logger.Info("adopting", "object", objectRef(obj))
	if err := m.patcher.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.StrategicMergePatchType, data); err != nil {
		return fmt.Errorf("adopt %s: %w", objectRef(obj), err)
	}
	return nil
}

// Release removes the owner's ownerReference from obj by a strategic merge
// patch, with obj's uid as a precondition. An object that is gone or no
// longer the one that was owned (NotFound, Conflict, Invalid) counts as
// released.
func (m *RefManager[T]) Release(ctx context.Context, obj T) error {
	data, err := releasePatch(obj.GetUID(), m.owner.GetUID())
	if err != nil {
		return err
	}
	m.logger.Info("releasing", "object", objectRef(obj))
	err = m.patcher.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.StrategicMergePatchType, data)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Deleted, or deleted and recreated with another uid, or the
		// reference is already gone: nothing of ours is left to release.
		m.logger.Debug("object changed during release, skipping", "object", objectRef(obj), "err", err)
		return nil
	default:
		return fmt.Errorf("release %s: %w", objectRef(obj), err)
	}
}

// patchMeta is the metadata part of the adoption and release patches; uid
// makes the API server refuse the patch if the object was replaced.
type patchMeta[R any] struct {
	OwnerReferences []R       `json:"ownerReferences"`
	UID             types.UID `json:"uid"`
}

type patchObject[R any] struct {
	Metadata patchMeta[R] `json:"metadata"`
}

// adoptPatch is the strategic merge patch that adds owner as the controller
// of the object with uid. ownerReferences merge on uid, so other owners
// stay.
func adoptPatch(owner metav1.Object, kind schema.GroupVersionKind, uid types.UID) ([]byte, error) {
	t := true
	return json.Marshal(patchObject[metav1.OwnerReference]{Metadata: patchMeta[metav1.OwnerReference]{
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         kind.GroupVersion().String(),
			Kind:               kind.Kind,
			Name:               owner.GetName(),
			UID:                owner.GetUID(),
			Controller:         &t,
			BlockOwnerDeletion: &t,
		}},
		UID: uid,
	}})
}

// releasePatch is the strategic merge patch that deletes the ownerReference
// with ownerUID from the object with uid.
func releasePatch(uid, ownerUID types.UID) ([]byte, error) {
	return json.Marshal(patchObject[map[string]string]{Metadata: patchMeta[map[string]string]{
		OwnerReferences: []map[string]string{{"$patch": "delete", "uid": string(ownerUID)}},
		UID:             uid,
	}})
}

// objectRef formats an object as namespace/name (or name when cluster-scoped)
// for logs and errors.
func objectRef(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// ClaimPods builds a RefManager for pods from cfg and claims pods with it;
// see RefManager.Claim. Build cfg afresh per sync: the owner is re-read at
// most once per call.
func ClaimPods(ctx context.Context, cfg RefManagerConfig[*corev1.Pod], pods []*corev1.Pod, filters ...func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	return claim(ctx, cfg, pods, filters...)
}

// ClaimReplicaSets builds a RefManager for ReplicaSets from cfg and claims
// sets with it; see RefManager.Claim.
func ClaimReplicaSets(ctx context.Context, cfg RefManagerConfig[*appsv1.ReplicaSet], sets []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	return claim(ctx, cfg, sets)
}

func claim[T metav1.Object](ctx context.Context, cfg RefManagerConfig[T], objs []T, filters ...func(T) bool) ([]T, error) {
	m, err := NewRefManager(cfg)
	if err != nil {
		return nil, err
	}
	return m.Claim(ctx, objs, filters...)
}

package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/controller"
)

// podKind is written into the owner references a PVC gets to its pod.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// objectWriter is the part of the API the sync writes pods and PVCs
// through.
type objectWriter interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name only if its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// Patch patches a pod (adoption and release).
	controller.Patcher
	CreateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error)
	UpdateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error)
}

// recordPodEvent records the outcome of verb ("create", "delete",
// "update") on pod, as Kubernetes words it.
func (s *syncer) recordPodEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		s.recorder.Event(set, corev1.EventTypeNormal, "Successful"+title,
			fmt.Sprintf("%s Pod %s in StatefulSet %s successful", verb, pod.Name, set.Name))
		return
	}
	s.recorder.Event(set, corev1.EventTypeWarning, "Failed"+title,
		fmt.Sprintf("%s Pod %s in StatefulSet %s failed error: %s", verb, pod.Name, set.Name, err))
}

// recordClaimEvent records the outcome of verb on claim for pod.
func (s *syncer) recordClaimEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		s.recorder.Event(set, corev1.EventTypeNormal, "Successful"+title,
			fmt.Sprintf("%s Claim %s Pod %s in StatefulSet %s success", verb, claim.Name, pod.Name, set.Name))
		return
	}
	s.recorder.Event(set, corev1.EventTypeWarning, "Failed"+title,
		fmt.Sprintf("%s Claim %s for Pod %s in StatefulSet %s failed error: %s", verb, claim.Name, pod.Name, set.Name, err))
}

// createPod creates pod's PVCs that do not exist, then pod, then gives the
// PVCs the owner references the retention policy asks for. The creation
// is expected before it is issued.
func (s *syncer) createPod(ctx context.Context, key string, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := s.createMissingClaims(ctx, set, pod); err != nil {
		s.recordPodEvent("create", set, pod, err)
		return err
	}
	s.expectations.RaiseExpectations(key, 1, 0)
	created, err := s.api.CreatePod(ctx, pod)
	if err != nil {
		s.expectations.LowerExpectations(key, 1, 0)
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind, or another object holds the name.
			return err
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		s.recordPodEvent("create", set, pod, err)
		return err
	}
	s.recordPodEvent("create", set, pod, nil)
	if err := s.updateClaimsForRetention(ctx, set, created); err != nil {
		s.recordPodEvent("update", set, pod, err)
		return err
	}
	return nil
}

// deletePod deletes pod, expecting the deletion first.
func (s *syncer) deletePod(ctx context.Context, key string, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	s.expectations.RaiseExpectations(key, 0, 1)
	err := s.api.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		s.expectations.LowerExpectations(key, 0, 1)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or replaced: the informer brings the news.
			return nil
		}
	}
	s.recordPodEvent("delete", set, pod, err)
	return err
}

// updatePod restores pod's identity and storage when they drifted from
// set's, writing the pod only when something changed.
func (s *syncer) updatePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	pod = pod.DeepCopy()
	changed := false
	if !identityMatches(set, pod) {
		updateIdentity(set, pod)
		changed = true
	}
	if !storageMatches(set, pod) {
		updateStorage(set, pod)
		changed = true
		if err := s.createMissingClaims(ctx, set, pod); err != nil {
			s.recordPodEvent("update", set, pod, err)
			return err
		}
	}
	if err := s.updateClaimsForRetention(ctx, set, pod); err != nil {
		s.recordPodEvent("update", set, pod, err)
		return err
	}
	if !changed {
		return nil
	}
	_, err := s.api.UpdatePod(ctx, pod)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// The informer delivers the newer pod and the key comes back.
		return err
	}
	s.recordPodEvent("update", set, pod, err)
	return err
}

// createMissingClaims creates the PVCs of pod's claim templates that do
// not exist yet. A PVC being deleted is an error: the pod must wait for it
// to go.
func (s *syncer) createMissingClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	var errs []error
	for _, claim := range sortedClaims(claimsFor(set, pod)) {
		existing, err := s.pvcLister.Namespace(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			_, err := s.api.CreateClaim(ctx, claim)
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create claim %s for pod %s: %w", claim.Name, pod.Name, err))
			}
			if err == nil {
				s.recordClaimEvent("create", set, pod, claim, nil)
			} else if !apierrors.IsAlreadyExists(err) {
				s.recordClaimEvent("create", set, pod, claim, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("read claim %s for pod %s: %w", claim.Name, pod.Name, err))
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("pvc %s is being deleted", claim.Name))
		}
	}
	return errors.Join(errs...)
}

func sortedClaims(m map[string]*corev1.PersistentVolumeClaim) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// retentionPolicy is set's PVC retention policy with Retain filled in.
func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if set.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		if w := set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted; w != "" {
			p.WhenDeleted = w
		}
		if w := set.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled; w != "" {
			p.WhenScaled = w
		}
	}
	return p
}

// claimOwnersFor edits claim's owner references to what the retention
// policy wants for pod and reports whether it changed anything:
//   - whenDeleted=Delete: the set owns the claim (while the pod is wanted),
//     so deleting the set deletes it;
//   - whenScaled=Delete: the pod owns the claim once its ordinal is
//     scaled away, so deleting the pod deletes it;
//   - Retain: neither.
func claimOwnersFor(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retentionPolicy(set)
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	scaledDown := !inOrdinalRange(pod, set)
	wantSet := p.WhenDeleted == del && !(scaledDown && p.WhenScaled == del)
	wantPod := p.WhenScaled == del && scaledDown
	changed := false
	if wantSet {
		changed = setOwner(claim, set.Name, set.UID, controllerKind.GroupVersion().String(), controllerKind.Kind) || changed
	} else {
		changed = removeOwner(claim, set.UID) || changed
	}
	if wantPod && pod.UID != "" {
		changed = setOwner(claim, pod.Name, pod.UID, podKind.GroupVersion().String(), podKind.Kind) || changed
	} else if !wantPod {
		changed = removeOwner(claim, pod.UID) || changed
	}
	return changed
}

func setOwner(obj metav1.Object, name string, uid types.UID, apiVersion, kind string) bool {
	refs := obj.GetOwnerReferences()
	for _, r := range refs {
		if r.UID == uid {
			return false
		}
	}
	obj.SetOwnerReferences(append(slices.Clone(refs), metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}))
	return true
}

func removeOwner(obj metav1.Object, uid types.UID) bool {
	if uid == "" {
		return false
	}
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == uid })
	if len(kept) == len(refs) {
		return false
	}
	obj.SetOwnerReferences(kept)
	return true
}

// claimsMatchRetention reports whether every existing PVC of pod already
// has the owner references the retention policy wants.
func (s *syncer) claimsMatchRetention(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		// Nothing to build or look up: this runs for every pod of a sync.
		return true, nil
	}
	for _, claim := range claimsFor(set, pod) {
		existing, err := s.pvcLister.Namespace(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			// Created on a later pass.
		case err != nil:
			return false, err
		default:
			if claimOwnersFor(existing.DeepCopy(), set, pod) {
				return false, nil
			}
		}
	}
	return true, nil
}

// updateClaimsForRetention writes the owner references the retention
// policy wants onto pod's existing PVCs.
func (s *syncer) updateClaimsForRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	var errs []error
	for _, claim := range sortedClaims(claimsFor(set, pod)) {
		existing, err := s.pvcLister.Namespace(claim.Namespace).Get(claim.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next := existing.DeepCopy()
		if !claimOwnersFor(next, set, pod) {
			continue
		}
		if _, err := s.api.UpdateClaim(ctx, next); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update owners of claim %s: %w", claim.Name, err))
		}
	}
	return errors.Join(errs...)
}

// podClaimIsStale reports whether a PVC of the pod about to be created is
// still owned by an earlier pod of the same name (the garbage collector is
// about to delete it): the new pod must wait for it to go.
func (s *syncer) podClaimIsStale(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	if retentionPolicy(set).WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return false, nil
	}
	for _, claim := range claimsFor(set, pod) {
		existing, err := s.pvcLister.Namespace(claim.Namespace).Get(claim.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		for _, r := range existing.OwnerReferences {
			if r.Kind == podKind.Kind && r.Name == pod.Name && r.UID != pod.UID {
				return true, nil
			}
		}
	}
	return false, nil
}

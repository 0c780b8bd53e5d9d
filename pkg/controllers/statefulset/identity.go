package statefulset

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kplane/kplane/pkg/controller/history"
)

// parentAndOrdinal returns the set name and ordinal encoded in pod's name
// (<set>-<ordinal>), or "" and -1 when the name does not end in a dash and
// a 32-bit decimal ordinal.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	name := pod.Name
	dash := strings.LastIndexByte(name, '-')
	if dash < 0 || dash == len(name)-1 {
		return "", -1
	}
	digits := name[dash+1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", -1
		}
	}
	i, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return "", -1
	}
	return name[:dash], int(i)
}

// ordinalOf is the ordinal of pod, -1 when it has none.
func ordinalOf(pod *corev1.Pod) int {
	_, ord := parentAndOrdinal(pod)
	return ord
}

// isMemberOf reports whether pod's name makes it one of set's pods.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, ord := parentAndOrdinal(pod)
	return ord >= 0 && parent == set.Name
}

// replicasOf is spec.replicas, 1 when unset as the API defaults it.
func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// startOrdinal is the first ordinal of set (spec.ordinals.start, else 0).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// endOrdinal is the last ordinal of set, start-1 when it has no replicas.
func endOrdinal(set *appsv1.StatefulSet) int {
	return startOrdinal(set) + replicasOf(set) - 1
}

// inOrdinalRange reports whether pod's ordinal is one set wants now.
func inOrdinalRange(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	ord := ordinalOf(pod)
	return ord >= startOrdinal(set) && ord <= endOrdinal(set)
}

// podName is the name of set's pod with ordinal.
func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// claimName is the name of the PVC of template claim for set's pod with
// ordinal: <claim>-<set>-<ordinal>.
func claimName(set *appsv1.StatefulSet, claim *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", claim.Name, set.Name, ordinal)
}

// identityMatches reports whether pod has the name, namespace and identity
// labels of a member of set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, ord := parentAndOrdinal(pod)
	if ord < 0 || parent != set.Name || pod.Namespace != set.Namespace {
		return false
	}
	// The name is podName's <set>-<ordinal> when its digits are the
	// ordinal's canonical form (no leading zeros); this runs for every pod
	// of every sync, so it compares instead of formatting the name.
	index := strconv.Itoa(ord)
	return pod.Name[len(parent)+1:] == index &&
		pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name &&
		pod.Labels[appsv1.PodIndexLabel] == index
}

// storageMatches reports whether pod mounts the PVCs of every one of set's
// claim templates.
func storageMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	ord := ordinalOf(pod)
	if ord < 0 {
		return false
	}
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return true
	}
	volumes := make(map[string]corev1.Volume, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		v, ok := volumes[t.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claimName(set, t, ord) {
			return false
		}
	}
	return true
}

// claimsFor returns the PVCs pod needs, by template name: each template
// named for the pod, in set's namespace, labelled with the template's
// labels and set's selector's matchLabels.
func claimsFor(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]*corev1.PersistentVolumeClaim {
	ord := ordinalOf(pod)
	out := make(map[string]*corev1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		c := t.DeepCopy()
		c.Name = claimName(set, t, ord)
		c.Namespace = set.Namespace
		if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
			if c.Labels == nil {
				c.Labels = make(map[string]string, len(set.Spec.Selector.MatchLabels))
			}
			maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
		}
		c.ResourceVersion, c.UID = "", ""
		out[t.Name] = c
	}
	return out
}

// updateStorage points pod's volumes named after set's claim templates at
// the pod's PVCs, keeping its other volumes.
func updateStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	claims := claimsFor(set, pod)
	volumes := make([]corev1.Volume, 0, len(pod.Spec.Volumes)+len(claims))
	for i := range set.Spec.VolumeClaimTemplates {
		name := set.Spec.VolumeClaimTemplates[i].Name
		volumes = append(volumes, corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: claims[name].Name,
			}},
		})
	}
	for _, v := range pod.Spec.Volumes {
		if _, ok := claims[v.Name]; !ok {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// updateIdentity gives pod the name, namespace and identity labels of its
// ordinal in set.
func updateIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	ord := ordinalOf(pod)
	pod.Name = podName(set, ord)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ord)
}

// newPod is set's pod with ordinal as set's template describes it:
// controlled by set, with its identity (hostname <set>-<ordinal>,
// subdomain spec.serviceName) and its PVC volumes.
func newPod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(set, ordinal),
			Namespace:       set.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)},
		},
		Spec: t.Spec,
	}
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	updateStorage(set, pod)
	return pod
}

// newVersionedPod is the pod to create for ordinal: at the current
// revision when the rolling update keeps that ordinal back (below the
// partition), else at the update revision.
func newVersionedPod(currentSet, updateSet *appsv1.StatefulSet, currentRevision, updateRevision string, ordinal int) *corev1.Pod {
	if currentSet.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType || currentSet.Spec.UpdateStrategy.Type == "" {
		ru := currentSet.Spec.UpdateStrategy.RollingUpdate
		keepBack := 0
		if ru == nil {
			keepBack = int(currentSet.Status.CurrentReplicas)
		} else if ru.Partition != nil {
			keepBack = int(*ru.Partition)
		}
		if ordinal < startOrdinal(currentSet)+keepBack {
			pod := newPod(currentSet, ordinal)
			pod.Labels[appsv1.StatefulSetRevisionLabel] = currentRevision
			return pod
		}
	}
	pod := newPod(updateSet, ordinal)
	pod.Labels[appsv1.StatefulSetRevisionLabel] = updateRevision
	return pod
}

// podRevision is the name of the revision pod was made from.
func podRevision(pod *corev1.Pod) string { return pod.Labels[appsv1.StatefulSetRevisionLabel] }

// templatePatch is the revision data of set: a strategic merge patch that
// replaces spec.template with set's, as Kubernetes stores it (the
// template's JSON with sorted keys and "$patch":"replace"), so that
// `kubectl rollout undo` can apply it to the set as it is.
func templatePatch(set *appsv1.StatefulSet) ([]byte, error) {
	js, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, err
	}
	var template map[string]any
	if err := json.Unmarshal(js, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// newRevision is the revision that records set's template as number
// revision, carrying set's annotations (kubernetes.io/change-cause among
// them, for `kubectl rollout history`).
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := templatePatch(set)
	if err != nil {
		return nil, fmt.Errorf("encode template of %s/%s: %w", set.Namespace, set.Name, err)
	}
	cr := history.NewControllerRevision(set, controllerKind, set.Spec.Template.Labels, runtime.RawExtension{Raw: patch}, revision, collisionCount)
	if len(set.Annotations) > 0 {
		cr.Annotations = maps.Clone(set.Annotations)
	}
	return cr, nil
}

// applyRevision returns set with its template replaced by the one revision
// records.
func applyRevision(set *appsv1.StatefulSet, revision *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	js, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(js, revision.Data.Raw, &appsv1.StatefulSet{})
	if err != nil {
		return nil, fmt.Errorf("apply revision %s: %w", revision.Name, err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, fmt.Errorf("apply revision %s: %w", revision.Name, err)
	}
	return out, nil
}

// Pod states, as the StatefulSet controller reads them.

func isCreated(p *corev1.Pod) bool { return p.Status.Phase != "" }
func isPending(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending }
func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}
func isTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func isRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && isPodReady(p)
}

func isPodReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// isRunningAndAvailable reports whether pod is running and has been ready
// for minReadySeconds at now.
func isRunningAndAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !isRunningAndReady(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	c := readyCondition(p)
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

func isHealthy(p *corev1.Pod) bool { return isRunningAndReady(p) && !isTerminating(p) }

// isUnavailable reports whether pod does not count as available: not
// running and ready, being deleted, or not ready for minReadySeconds.
func isUnavailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return !isHealthy(p) || !isRunningAndAvailable(p, minReadySeconds, now)
}

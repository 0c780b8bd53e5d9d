package deployment

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestRollingUpdateEndToEnd(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	h.create(testDeployment("web", 3, "nginx:1"))

	// 1. Created: one ReplicaSet <name>-<hash> with 3 ready pods.
	d := h.waitRolledOut("web")
	sets := ownedBy(h.replicaSets(), d)
	if len(sets) != 1 {
		t.Fatalf("replica sets:%s, want one", describe(sets))
	}
	first := sets[0]
	hash := ComputeHash(&d.Spec.Template, nil)
	if first.Name != "web-"+hash || first.Labels[PodTemplateHashLabel] != hash ||
		first.Spec.Selector.MatchLabels[PodTemplateHashLabel] != hash || first.Spec.Template.Labels[PodTemplateHashLabel] != hash {
		t.Errorf("first replica set %s with labels %v, selector %v: want name web-%s and the hash label everywhere", first.Name, first.Labels, first.Spec.Selector, hash)
	}
	if got := first.Annotations[RevisionAnnotation]; got != "1" {
		t.Errorf("first revision = %q, want 1", got)
	}
	if first.Annotations[DesiredReplicasAnnotation] != "3" || first.Annotations[MaxReplicasAnnotation] != "4" {
		t.Errorf("replicas annotations %v, want desired 3 and max 4", first.Annotations)
	}
	if d.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision = %q, want 1", d.Annotations[RevisionAnnotation])
	}
	if n := h.readyPods(map[string]string{"app": "web"}); n != 3 {
		t.Errorf("%d running pods, want 3", n)
	}

	// 2. New image: a second set takes over within maxSurge 1 and
	// maxUnavailable 1 at every observed state.
	steps := 0
	owner := d
	stop := h.watchReplicaSets(func(all map[string]*appsv1.ReplicaSet) {
		sets := ownedBy(all, owner)
		var spec, available int32
		for _, rs := range sets {
			spec += *rs.Spec.Replicas
			available += rs.Status.AvailableReplicas
		}
		steps++
		if spec > 4 {
			t.Errorf("%d replicas desired, above replicas+maxSurge 4:%s", spec, describe(sets))
		}
		if available < 2 {
			t.Errorf("%d replicas available, below replicas-maxUnavailable 2:%s", available, describe(sets))
		}
	})
	h.update("web", setImage("nginx:2"))
	d = h.waitRolledOut("web")
	stop()
	if steps < 4 {
		t.Errorf("observed %d replica set states during the rollout, want several", steps)
	}
	sets = ownedBy(h.replicaSets(), d)
	if len(sets) != 2 {
		t.Fatalf("replica sets:%s, want two", describe(sets))
	}
	second := findNewReplicaSet(d, sets)
	if second == nil || second.Name == first.Name {
		t.Fatalf("no new replica set among%s", describe(sets))
	}
	old := h.replicaSets()[first.Name]
	if *old.Spec.Replicas != 0 || *second.Spec.Replicas != 3 {
		t.Errorf("after the rollout:%s, want old 0 and new 3", describe(sets))
	}
	if second.Annotations[RevisionAnnotation] != "2" || d.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("revisions: new set %q, deployment %q, want 2", second.Annotations[RevisionAnnotation], d.Annotations[RevisionAnnotation])
	}

	// 3. Rollback as kubectl rollout undo does it: the template of
	// revision 1, without its hash label. The old set is reused.
	h.update("web", func(d *appsv1.Deployment) {
		tpl := old.Spec.Template.DeepCopy()
		delete(tpl.Labels, PodTemplateHashLabel)
		d.Spec.Template = *tpl
	})
	d = h.waitRolledOut("web")
	sets = ownedBy(h.replicaSets(), d)
	if len(sets) != 2 {
		t.Fatalf("after rollback replica sets:%s, want the same two", describe(sets))
	}
	reused := h.replicaSets()[first.Name]
	if *reused.Spec.Replicas != 3 || reused.Annotations[RevisionAnnotation] != "3" || reused.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Errorf("rolled-back set %s: replicas %d, annotations %v; want 3 replicas, revision 3, history 1", reused.Name, *reused.Spec.Replicas, reused.Annotations)
	}
	if d.Annotations[RevisionAnnotation] != "3" {
		t.Errorf("deployment revision = %q, want 3", d.Annotations[RevisionAnnotation])
	}
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	h.create(testDeployment("app", 2, "img:1"))
	d := h.waitRolledOut("app")

	d = h.update("app", func(d *appsv1.Deployment) { d.Spec.Paused = true })
	testenv.WaitFor(t, h.env, client.Deployments, h.key("app"), func(got *appsv1.Deployment) bool {
		return got.Status.ObservedGeneration >= d.Generation && conditionReason(got, appsv1.DeploymentProgressing) == ReasonDeploymentPaused
	})

	// A template change while paused rolls nothing out; scaling applies.
	h.update("app", setImage("img:2"))
	d = h.update("app", func(d *appsv1.Deployment) { *d.Spec.Replicas = 4 })
	d = testenv.WaitFor(t, h.env, client.Deployments, h.key("app"), func(got *appsv1.Deployment) bool {
		return got.Status.ObservedGeneration >= d.Generation && got.Status.AvailableReplicas == 4
	})
	sets := ownedBy(h.replicaSets(), d)
	if len(sets) != 1 || sets[0].Spec.Template.Spec.Containers[0].Image != "img:1" || *sets[0].Spec.Replicas != 4 {
		t.Fatalf("while paused:%s, want only the img:1 set, scaled to 4", describe(sets))
	}
	if d.Status.UpdatedReplicas != 0 {
		t.Errorf("updatedReplicas = %d while paused, want 0", d.Status.UpdatedReplicas)
	}

	h.update("app", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	d = h.waitRolledOut("app")
	sets = ownedBy(h.replicaSets(), d)
	nw := findNewReplicaSet(d, sets)
	if nw == nil || nw.Spec.Template.Spec.Containers[0].Image != "img:2" || *nw.Spec.Replicas != 4 {
		t.Fatalf("after resume:%s, want an img:2 set with 4 replicas", describe(sets))
	}
}

func TestRecreate(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	d := testDeployment("batch", 2, "img:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	h.create(d)
	d = h.waitRolledOut("batch")

	owner := d
	stop := h.watchReplicaSets(func(all map[string]*appsv1.ReplicaSet) {
		sets := ownedBy(all, owner)
		var newWants, oldHas bool
		for _, rs := range sets {
			if rs.Spec.Template.Spec.Containers[0].Image == "img:2" {
				newWants = newWants || *rs.Spec.Replicas > 0
			} else {
				oldHas = oldHas || *rs.Spec.Replicas > 0 || rs.Status.Replicas > 0
			}
		}
		if newWants && oldHas {
			t.Errorf("new pods wanted while old ones run:%s", describe(sets))
		}
	})
	podsChecked := 0
	stopPods := h.watchPods(func(pods map[string]*corev1.Pod) {
		podsChecked++
		var oldPods, newPods int
		for _, p := range pods {
			if p.Labels["app"] != "batch" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if p.Spec.Containers[0].Image == "img:2" {
				newPods++
			} else {
				oldPods++
			}
		}
		if newPods > 0 && oldPods > 0 {
			t.Errorf("%d new pods exist while %d old ones have not terminated", newPods, oldPods)
		}
	})
	h.update("batch", setImage("img:2"))
	d = h.waitRolledOut("batch")
	stop()
	stopPods()
	if podsChecked < 5 {
		t.Errorf("observed %d pod states, want the old pods going and the new ones coming", podsChecked)
	}
	sets := ownedBy(h.replicaSets(), d)
	if len(sets) != 2 {
		t.Fatalf("replica sets:%s, want two", describe(sets))
	}
	for _, rs := range sets {
		want := int32(0)
		if rs.Spec.Template.Spec.Containers[0].Image == "img:2" {
			want = 2
		}
		if *rs.Spec.Replicas != want {
			t.Errorf("%s has %d replicas, want %d", rs.Name, *rs.Spec.Replicas, want)
		}
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	d := testDeployment("hist", 1, "img:0")
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	h.create(d)
	d = h.waitRolledOut("hist")
	names := []string{findNewReplicaSet(d, ownedBy(h.replicaSets(), d)).Name}
	for i := 1; i <= 3; i++ {
		h.update("hist", setImage("img:"+strconv.Itoa(i)))
		d = h.waitRolledOut("hist")
		names = append(names, findNewReplicaSet(d, ownedBy(h.replicaSets(), d)).Name)
	}
	// Revisions 1 and 2 go once a rollout is complete; 3 stays as the one
	// old set the limit keeps.
	testenv.WaitForDeletion(t, h.env, client.ReplicaSets, h.key(names[0]))
	testenv.WaitForDeletion(t, h.env, client.ReplicaSets, h.key(names[1]))
	sets := ownedBy(h.replicaSets(), d)
	revs := map[string]bool{}
	for _, rs := range sets {
		revs[rs.Annotations[RevisionAnnotation]] = true
	}
	if len(sets) != 2 || !revs["4"] || !revs["3"] {
		t.Errorf("kept revisions %v, want 3 and 4:%s", revs, describe(sets))
	}
}

func TestProportionalScalingMidRollout(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	d := testDeployment("prop", 4, "img:1")
	h.create(d)
	h.waitRolledOut("prop")
	// Pods of the new template never become ready, so the rollout stalls
	// with both sets active; then the deployment is scaled up.
	h.update("prop", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "img:2"
		d.Spec.Template.Labels[neverReadyLabel] = "true"
	})
	d = testenv.WaitFor(t, h.env, client.Deployments, h.key("prop"), func(got *appsv1.Deployment) bool {
		sets := ownedBy(h.replicaSets(), got)
		return len(sets) == 2 && got.Status.Replicas == 5 && got.Status.UpdatedReplicas == 2
	})
	// Old 3 and new 2 (max 5); scaling to 8 (max 9) gives old
	// round(9*3/5)=5, new round(9*2/5)=4.
	h.update("prop", func(d *appsv1.Deployment) { *d.Spec.Replicas = 8 })
	testenv.WaitFor(t, h.env, client.Deployments, h.key("prop"), func(got *appsv1.Deployment) bool {
		return got.Status.Replicas == 9
	})
	sets := ownedBy(h.replicaSets(), d)
	nw := findNewReplicaSet(d, sets)
	for _, rs := range sets {
		want := int32(5)
		if nw != nil && rs.Name == nw.Name {
			want = 4
		}
		if *rs.Spec.Replicas != want {
			t.Errorf("%s has %d replicas, want %d:%s", rs.Name, *rs.Spec.Replicas, want, describe(sets))
		}
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	t.Parallel()
	fake := newFakeClock()
	h := startHarness(t, fake)
	d := testDeployment("slow", 2, "img:1")
	deadline := int32(30)
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Spec.Template.Labels[neverReadyLabel] = "true"
	h.create(d)
	testenv.WaitFor(t, h.env, client.Deployments, h.key("slow"), func(got *appsv1.Deployment) bool {
		r := conditionReason(got, appsv1.DeploymentProgressing)
		return got.Status.Replicas == 2 && (r == ReasonNewReplicaSetCreated || r == ReasonReplicaSetUpdated) &&
			conditionReason(got, appsv1.DeploymentAvailable) == ReasonMinimumReplicasUnavailable
	})
	fake.Step(31 * time.Second)
	// Any change makes the controller look again; it compares the
	// condition's lastUpdateTime with its clock.
	h.update("slow", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"poke": "1"}
	})
	got := testenv.WaitFor(t, h.env, client.Deployments, h.key("slow"), func(got *appsv1.Deployment) bool {
		return conditionReason(got, appsv1.DeploymentProgressing) == ReasonProgressDeadlineExceeded
	})
	if c := getCondition(got.Status, appsv1.DeploymentProgressing); c.Status != corev1.ConditionFalse {
		t.Errorf("Progressing = %s, want False", c.Status)
	}
}

func TestAdoptsOrphanWithSameTemplate(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	d := testDeployment("adopt", 2, "img:1")
	// An orphan set left behind by an orphaning delete of the same
	// Deployment: same template plus a hash label.
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt-old", Labels: map[string]string{"app": "adopt", PodTemplateHashLabel: "old"}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: d.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "adopt", PodTemplateHashLabel: "old"}},
			Template: *d.Spec.Template.DeepCopy(),
		},
	}
	orphan.Spec.Template.Labels = map[string]string{"app": "adopt", PodTemplateHashLabel: "old"}
	if _, err := h.rss.Create(t.Context(), orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server fills in template defaults; the Deployment's template
	// gets the same ones, so they compare equal.
	h.create(d)
	d = h.waitRolledOut("adopt")
	sets := h.replicaSets()
	if len(sets) != 1 {
		t.Fatalf("replica sets %v, want only the adopted one", sets)
	}
	rs := sets["adopt-old"]
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
		t.Fatalf("controller of the orphan = %+v, want the Deployment", ref)
	}
	if rs.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("adopted set revision %q, want 1", rs.Annotations[RevisionAnnotation])
	}
}

func TestAdoptsLateOrphanAndReleasesNonMatching(t *testing.T) {
	t.Parallel()
	h := startHarness(t, clock.RealClock{})
	h.create(testDeployment("late", 1, "img:1"))
	d := h.waitRolledOut("late")

	// An orphan that appears later, with the selector's labels and another
	// template: adopted as an old set.
	zero := int32(0)
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "late-stray", Labels: map[string]string{"app": "late", "v": "0"}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "late", "v": "0"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "late", "v": "0"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img:0"}}},
			},
		},
	}
	if _, err := h.rss.Create(t.Context(), orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, h.env, client.ReplicaSets, h.key("late-stray"), func(rs *appsv1.ReplicaSet) bool {
		ref := metav1.GetControllerOf(rs)
		return ref != nil && ref.UID == d.UID
	})

	// Its labels stop matching: released.
	for {
		rs, err := h.rss.Get(t.Context(), "late-stray", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs.Labels = map[string]string{"app": "elsewhere"}
		if _, err = h.rss.Update(t.Context(), rs, metav1.UpdateOptions{}); err == nil {
			break
		} else if !isConflict(err) {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, h.env, client.ReplicaSets, h.key("late-stray"), func(rs *appsv1.ReplicaSet) bool {
		return metav1.GetControllerOf(rs) == nil
	})
}

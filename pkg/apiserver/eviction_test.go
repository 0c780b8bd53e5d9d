package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// evictionEnv is a server with running pods and a way to set a budget's
// status as the disruption controller would.
type evictionEnv struct {
	*testEnv
	t *testing.T
}

func (e evictionEnv) runningPod(name string, ready bool, phase corev1.PodPhase) {
	e.t.Helper()
	p := testPod(name, map[string]string{"app": "web"})
	p.Spec.NodeName = "node-1" // bound: deleted gracefully, so it can be read back
	var created corev1.Pod
	e.mustCreate(podPath("default", ""), p, &created)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	created.Status = corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	e.do("PUT", podPath("default", name)+"/status", &created).expect(e.t, 200, "")
}

func (e evictionEnv) budget(name string, allowed, healthy, desired int32, stale bool) {
	e.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{IntVal: desired},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	var created policyv1.PodDisruptionBudget
	e.mustCreate("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb, &created)
	created.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: created.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy,
	}
	if stale {
		created.Status.ObservedGeneration = created.Generation - 1
	}
	e.do("PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/"+name+"/status", &created).expect(e.t, 200, "")
}

func (e evictionEnv) getBudget(name string) policyv1.PodDisruptionBudget {
	e.t.Helper()
	var pdb policyv1.PodDisruptionBudget
	e.do("GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/"+name, nil).decode(e.t, &pdb)
	return pdb
}

func (e evictionEnv) evict(name string, query string, opts *metav1.DeleteOptions) response {
	e.t.Helper()
	return e.do("POST", podPath("default", name)+"/eviction"+query, &policyv1.Eviction{
		TypeMeta:      metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta:    metav1.ObjectMeta{Name: name},
		DeleteOptions: opts,
	})
}

// evicted reports whether the pod is being deleted, and checks that it got
// the DisruptionTarget condition first.
func (e evictionEnv) evicted(name string) bool {
	e.t.Helper()
	r := e.do("GET", podPath("default", name), nil)
	if r.code == 404 {
		return true
	}
	var p corev1.Pod
	r.decode(e.t, &p)
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
			return true
		}
	}
	e.t.Errorf("evicted pod %s has no DisruptionTarget condition: %+v", name, p.Status.Conditions)
	return true
}

func newEvictionEnv(t *testing.T) evictionEnv {
	return evictionEnv{testEnv: newTestEnv(t), t: t}
}

func TestEvictionWithoutBudget(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("a", true, corev1.PodRunning)
	r := e.evict("a", "", nil)
	r.expect(t, 201, "")
	if st := r.status(t); st.Status != metav1.StatusSuccess || st.Code != 201 || st.Kind != "Status" {
		t.Errorf("eviction status %+v, want Success 201", st)
	}
	if !e.evicted("a") {
		t.Error("pod a was not deleted by its eviction")
	}
	// The Eviction's own delete options apply: grace 0 removes it at once.
	e.runningPod("b", true, corev1.PodRunning)
	zero := int64(0)
	e.evict("b", "", &metav1.DeleteOptions{GracePeriodSeconds: &zero}).expect(t, 201, "")
	e.do("GET", podPath("default", "b"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestEvictionBudget(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("a", true, corev1.PodRunning)
	e.runningPod("b", true, corev1.PodRunning)
	e.budget("web", 1, 2, 1, false)

	// A dry run changes nothing.
	e.evict("a", "?dryRun=All", nil).expect(t, 201, "")
	if e.evicted("a") || e.getBudget("web").Status.DisruptionsAllowed != 1 {
		t.Fatal("a dry-run eviction deleted the pod or used the budget")
	}

	e.evict("a", "", nil).expect(t, 201, "")
	if !e.evicted("a") {
		t.Fatal("pod a was not evicted")
	}
	pdb := e.getBudget("web")
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("disruptionsAllowed = %d after an eviction, want 0", pdb.Status.DisruptionsAllowed)
	}
	if _, ok := pdb.Status.DisruptedPods["a"]; !ok {
		t.Errorf("disruptedPods = %v, want a", pdb.Status.DisruptedPods)
	}
	if len(pdb.Status.Conditions) != 1 || pdb.Status.Conditions[0].Type != policyv1.DisruptionAllowedCondition ||
		pdb.Status.Conditions[0].Status != metav1.ConditionFalse || pdb.Status.Conditions[0].Reason != policyv1.InsufficientPodsReason {
		t.Errorf("conditions = %+v, want DisruptionAllowed False InsufficientPods", pdb.Status.Conditions)
	}

	r := e.evict("b", "", nil)
	r.expect(t, 429, metav1.StatusReasonTooManyRequests)
	st := r.status(t)
	if st.Message != "Cannot evict pod as it would violate the pod's disruption budget." || st.Details == nil ||
		len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause ||
		st.Details.Causes[0].Message != "The disruption budget web needs 1 healthy pods and has 2 currently" {
		t.Errorf("429 status %+v", st)
	}
	if e.evicted("b") {
		t.Error("pod b was deleted although its budget allows no disruption")
	}

	// A pod that has not started, or has finished, goes whatever the budget.
	e.runningPod("pending", false, corev1.PodPending)
	e.evict("pending", "", nil).expect(t, 201, "")
	e.runningPod("done", false, corev1.PodSucceeded)
	e.evict("done", "", nil).expect(t, 201, "")
	if !e.evicted("pending") || !e.evicted("done") {
		t.Error("a pending or finished pod was not evicted")
	}
}

func TestEvictionUnreadyPodAndStaleBudget(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("ready", true, corev1.PodRunning)
	e.runningPod("sick", false, corev1.PodRunning)
	// A healthy budget with no disruption left: an unready pod still goes,
	// without using the budget.
	e.budget("web", 0, 1, 1, false)
	e.evict("sick", "", nil).expect(t, 201, "")
	if !e.evicted("sick") {
		t.Error("an unready pod under a healthy budget was not evicted")
	}
	if got := e.getBudget("web").Status.DisruptedPods; len(got) != 0 {
		t.Errorf("an unready pod's eviction used the budget: disruptedPods %v", got)
	}

	// A budget the disruption controller has not seen yet: 429, retry in 10s.
	e2 := newEvictionEnv(t)
	e2.runningPod("p", true, corev1.PodRunning)
	e2.budget("web", 5, 1, 1, true)
	r := e2.evict("p", "", nil)
	r.expect(t, 429, metav1.StatusReasonTooManyRequests)
	if r.header.Get("Retry-After") != "10" || r.status(t).Details.Causes[0].Message != "The disruption budget web is still being processed by the server." {
		t.Errorf("stale budget: Retry-After %q, %s", r.header.Get("Retry-After"), r.body)
	}
}

func TestEvictionTwoBudgets(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("a", true, corev1.PodRunning)
	e.budget("one", 1, 1, 0, false)
	e.budget("two", 1, 1, 0, false)
	r := e.evict("a", "", nil)
	r.expect(t, 201, "")
	if st := r.status(t); st.Status != metav1.StatusFailure || st.Code != 500 {
		t.Errorf("two budgets: status %+v, want kube-apiserver's Failure with code 500", st)
	}
	if e.evicted("a") {
		t.Error("a pod under two budgets was evicted")
	}
}

func TestEvictionBadRequests(t *testing.T) {
	e := newEvictionEnv(t)
	e.runningPod("a", true, corev1.PodRunning)
	e.do("POST", podPath("default", "a")+"/eviction", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other"}}).expect(t, 400, metav1.StatusReasonBadRequest)
	e.do("POST", podPath("default", "a")+"/eviction", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "kube-system"}}).expect(t, 400, metav1.StatusReasonBadRequest)
	e.evict("a", "?dryRun=All", &metav1.DeleteOptions{DryRun: []string{"Other"}}).expect(t, 400, metav1.StatusReasonBadRequest)
	e.do("GET", podPath("default", "a")+"/eviction", nil).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	e.evict("missing", "", nil).expect(t, 404, metav1.StatusReasonNotFound)
	e.do("POST", deployPath("default", "d")+"/eviction", `{}`).expect(t, 404, metav1.StatusReasonNotFound)
	// A resourceVersion precondition that no longer holds is a conflict.
	stale := "1"
	e.evict("a", "", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}}).expect(t, 409, metav1.StatusReasonConflict)
	if e.evicted("a") {
		t.Error("a bad eviction deleted the pod")
	}
}

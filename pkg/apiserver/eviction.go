package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/storage"
)

// The pods/eviction subresource: a POST of a policy/v1 Eviction deletes
// the pod unless that would take more pods of a PodDisruptionBudget than it
// allows, as kube-apiserver's eviction does:
//
//   - Pods that are Pending, Succeeded, Failed or already being deleted
//     are deleted without a budget check.
//   - Otherwise the one budget in the pod's namespace whose selector matches
//     the pod decides; more than one is refused (kube-apiserver answers
//     that 201 with a Failure Status of code 500, and so does this). An
//     unready pod is deleted without using the budget when the budget is
//     healthy (currentHealthy >= desiredHealthy > 0) or its
//     unhealthyPodEvictionPolicy is AlwaysAllow; a ready one takes one of
//     status.disruptionsAllowed, which the eviction writes back, with the
//     pod recorded in status.disruptedPods until the disruption controller
//     sees it gone. A budget whose controller has not seen its latest
//     generation, or with no disruption left, is a 429 TooManyRequests
//     with a DisruptionBudget cause (kubectl drain retries those).
//   - A pod deleted by eviction first gets a DisruptionTarget condition
//     (reason EvictionByEvictionAPI), and its deletion uses the Eviction's
//     deleteOptions (grace period, preconditions). When the budget was
//     consulted, the deletion is conditional on the resourceVersion read,
//     so a pod that became ready meanwhile is not deleted (429 again).
//
// The request goes through admission as a create of pods/eviction with the
// Eviction as the object; the budget and pod writes that follow are the
// server's own. Only policy/v1 Eviction bodies are read (kube-apiserver
// also reads policy/v1beta1 ones).

var (
	evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")
	pdbGVR      = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// maxDisruptedPods bounds a budget's status.disruptedPods: past it,
// evictions wait for the disruption controller to catch up.
const maxDisruptedPods = 2000

// servesEviction reports whether the resource has pods/eviction.
func servesEviction(res *resource) bool { return servesBinding(res) }

func (s *Server) serveEviction(w http.ResponseWriter, r *http.Request, q *request) {
	ev := &policyv1.Eviction{}
	f, opts, warnings, ok := s.readSubresourceCreate(w, r, q, ev, evictionGVK)
	if !ok {
		return
	}
	if ev.Name != q.name {
		s.writeError(w, r, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	if ev.Namespace == "" {
		ev.Namespace = q.namespace
	} else if ev.Namespace != q.namespace {
		s.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	// The delete options are taken from the Eviction as admission left it
	// (a mutating plugin may change them), as kube-apiserver does.
	ev, err := admitSubresourceCreate(s, w, r, q, "eviction", evictionGVK, ev, opts)
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	delOpts, err := evictionDeleteOptions(ev, r.URL.Query()["dryRun"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.evict(r.Context(), q, delOpts)
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	addWarnings(w, warnings)
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Code == 0 {
		st.Code = http.StatusCreated
	}
	s.writeObject(w, r, http.StatusCreated, f, st)
}

// evictionDeleteOptions merges the request's dryRun into the Eviction's
// deleteOptions; the two may not disagree.
func evictionDeleteOptions(ev *policyv1.Eviction, dryRun []string) (*metav1.DeleteOptions, error) {
	if ev.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: dryRun}, nil
	}
	o := ev.DeleteOptions.DeepCopy()
	switch {
	case len(o.DryRun) == 0:
		o.DryRun = dryRun
	case len(dryRun) > 0 && !slices.Equal(o.DryRun, dryRun):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", dryRun, o.DryRun))
	}
	return o, nil
}

// evict carries out an admitted eviction of q's pod.
func (s *Server) evict(ctx context.Context, q *request, opts *metav1.DeleteOptions) (*metav1.Status, error) {
	ok := &metav1.Status{Status: metav1.StatusSuccess}
	rvUnset := opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil
	var pod *corev1.Pod
	for attempt := 0; ; attempt++ {
		cur := &corev1.Pod{}
		if err := q.res.store.Get(ctx, q.res.key(q.namespace, q.name), storage.GetOptions{}, cur); err != nil {
			return nil, err
		}
		pod = cur
		if !podIgnoresBudget(pod) {
			break
		}
		o := opts
		if rvUnset && !podTerminalOrDeleting(pod) {
			// A Pending pod: delete it only as read, not once it runs.
			o = withResourceVersion(opts, pod.ResourceVersion)
		}
		err := s.markAndDeletePod(ctx, q, o)
		if apierrors.IsConflict(err) && rvUnset && attempt < 20 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return ok, nil
	}

	pdbs, err := s.podBudgets(ctx, pod)
	if err != nil {
		return nil, err
	}
	if len(pdbs) > 1 {
		return &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			Code:    http.StatusInternalServerError,
		}, nil
	}
	conditional := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		healthyBudget := pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
		alwaysAllow := pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
		if !podendpoint.IsPodReady(pod) && (healthyBudget || alwaysAllow) {
			conditional = true
		} else if err := s.takeDisruption(ctx, pdb, pod.Name, len(opts.DryRun) > 0); err != nil {
			return nil, err
		}
	}
	o := opts
	if conditional {
		o = withResourceVersion(opts, pod.ResourceVersion)
	}
	if err := s.markAndDeletePod(ctx, q, o); err != nil {
		if apierrors.IsConflict(err) && conditional && rvUnset {
			return nil, budgetBusy(pdbs[0].Name)
		}
		return nil, err
	}
	return ok, nil
}

// podIgnoresBudget reports whether a pod is deleted by eviction without a
// budget check: it has not started, has finished, or is already going.
func podIgnoresBudget(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodPending || podTerminalOrDeleting(p)
}

func podTerminalOrDeleting(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil
}

func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	o := opts.DeepCopy()
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
	return o
}

// podBudgets returns the budgets of the pod's namespace whose selectors
// match it; an empty or invalid selector matches nothing.
func (s *Server) podBudgets(ctx context.Context, pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	res := s.lookup(pdbGVR)
	if res == nil {
		return nil, nil
	}
	list := &policyv1.PodDisruptionBudgetList{}
	if err := res.store.GetList(ctx, res.prefix(pod.Namespace), storage.ListOptions{Recursive: true}, list); err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// takeDisruption uses one of the budget's allowed disruptions for podName,
// re-reading the budget on conflicts.
func (s *Server) takeDisruption(ctx context.Context, pdb policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	res := s.lookup(pdbGVR)
	check := func(b *policyv1.PodDisruptionBudget) error {
		switch {
		case b.Status.ObservedGeneration < b.Generation:
			return budgetBusy(b.Name)
		case b.Status.DisruptionsAllowed < 0:
			return apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, b.Name, fmt.Errorf("pdb disruptions allowed is negative"))
		case len(b.Status.DisruptedPods) > maxDisruptedPods:
			return apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, b.Name, fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
		case b.Status.DisruptionsAllowed == 0:
			err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
				Type:    policyv1.DisruptionBudgetCause,
				Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy),
			})
			return err
		}
		return nil
	}
	if err := check(&pdb); err != nil {
		return err
	}
	if dryRun {
		return nil
	}
	q := &request{verb: "update", res: res, namespace: pdb.Namespace, name: pdb.Name, subresource: "status"}
	_, _, err := s.write(ctx, q, false, func(current runtime.Object) (runtime.Object, error) {
		b, ok := current.(*policyv1.PodDisruptionBudget)
		if !ok || b.ResourceVersion == "" {
			return nil, apierrors.NewNotFound(res.gr(), pdb.Name)
		}
		if err := check(b); err != nil {
			return nil, err
		}
		out := b.DeepCopy()
		out.Status.DisruptionsAllowed--
		if out.Status.DisruptionsAllowed == 0 {
			meta.SetStatusCondition(&out.Status.Conditions, metav1.Condition{
				Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
				Reason: policyv1.InsufficientPodsReason, ObservedGeneration: out.Status.ObservedGeneration,
			})
		}
		if out.Status.DisruptedPods == nil {
			out.Status.DisruptedPods = map[string]metav1.Time{}
		}
		out.Status.DisruptedPods[podName] = metav1.NewTime(s.clock.Now())
		return out, nil
	})
	return err
}

// budgetBusy is the 429 of a budget the disruption controller has not
// caught up with.
func budgetBusy(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name),
	})
	return err
}

// markAndDeletePod gives the pod its DisruptionTarget condition (unless
// dry run) and deletes it with opts. A resourceVersion precondition holds
// for the condition's write and moves to the revision it made.
func (s *Server) markAndDeletePod(ctx context.Context, q *request, opts *metav1.DeleteOptions) error {
	if len(opts.DryRun) == 0 {
		sq := &request{verb: "update", res: q.res, namespace: q.namespace, name: q.name, subresource: "status"}
		out, _, err := s.write(ctx, sq, false, func(current runtime.Object) (runtime.Object, error) {
			pod, ok := current.(*corev1.Pod)
			if !ok || pod.ResourceVersion == "" {
				return nil, apierrors.NewNotFound(q.gr(), q.name)
			}
			if err := checkPreconditions(q.gr(), q.name, opts.Preconditions, pod, true); err != nil {
				return nil, err
			}
			out := pod.DeepCopy()
			c := corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
				LastTransitionTime: metav1.NewTime(s.clock.Now()),
			}
			if old := podConditionOf(out, c.Type); old != nil && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			setPodCondition(&out.Status, c)
			return out, nil
		})
		if err != nil {
			return err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			opts = withResourceVersion(opts, accessor(out).GetResourceVersion())
		}
	}
	_, _, err := s.deleteObject(ctx, q.res, q.namespace, q.name, opts)
	return err
}

func podConditionOf(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

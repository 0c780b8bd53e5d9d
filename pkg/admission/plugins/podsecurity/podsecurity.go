package podsecurity

import (
	"context"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/admission"
)

// MaxPodsToCheck bounds the existing pods checked when a namespace's
// enforce level changes, as Kubernetes bounds it.
const MaxPodsToCheck = 3000

var (
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	podsGR       = schema.GroupResource{Resource: "pods"}
	namespaceGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
	podsGVR      = corev1.SchemeGroupVersion.WithResource("pods")
)

// templated are the resources whose objects hold a pod template: they are
// warned and audited about, never refused.
var templated = map[schema.GroupResource]bool{
	{Resource: "replicationcontrollers"}:      true,
	{Resource: "podtemplates"}:                true,
	{Group: "apps", Resource: "replicasets"}:  true,
	{Group: "apps", Resource: "deployments"}:  true,
	{Group: "apps", Resource: "statefulsets"}: true,
	{Group: "apps", Resource: "daemonsets"}:   true,
	{Group: "batch", Resource: "jobs"}:        true,
	{Group: "batch", Resource: "cronjobs"}:    true,
}

// ignoredPodSubresources are the pod subresources that cannot change what
// the checks look at.
var ignoredPodSubresources = map[string]bool{
	"exec": true, "attach": true, "binding": true, "eviction": true,
	"log": true, "portforward": true, "proxy": true, "status": true,
}

// Plugin is the PodSecurity admission plugin. It is safe for concurrent
// use.
type Plugin struct {
	src     admission.Source
	metrics *metrics
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New builds the plugin; cfg.Source, which it reads namespaces and pods
// from, is required. With cfg.Metrics it registers Kubernetes' counters
// pod_security_evaluations_total, pod_security_errors_total and
// pod_security_exemptions_total (always 0: nothing is exempt).
func New(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("podsecurity: a source is required")
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("podsecurity: %w", err)
	}
	return &Plugin{src: cfg.Source, metrics: m}, nil
}

// Handles reports true for CREATE and UPDATE.
func (p *Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Validate checks namespaces' labels, pods against their namespace's
// enforce, audit and warn levels, and pod templates against audit and
// warn.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	switch gr := a.Resource.GroupResource(); {
	case gr == namespacesGR:
		return p.validateNamespace(ctx, a)
	case gr == podsGR:
		return p.validatePod(ctx, a)
	case templated[gr]:
		p.validateTemplate(ctx, a)
	}
	return nil
}

func (p *Plugin) validateNamespace(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" {
		return nil
	}
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok {
		return apierrors.NewBadRequest("failed to decode namespace")
	}
	next, errs := policyOf(ns.Labels)
	invalid := func() error {
		gk := a.Kind.GroupKind()
		if gk.Kind == "" {
			gk = schema.GroupKind{Kind: "Namespace"}
		}
		return apierrors.NewInvalid(gk, a.Name, errs)
	}
	if a.Operation == admission.Create {
		if len(errs) > 0 {
			return invalid()
		}
		return nil
	}
	old, ok := a.OldObject.(*corev1.Namespace)
	if !ok {
		return apierrors.NewBadRequest("failed to decode old namespace")
	}
	prev, oldErrs := policyOf(old.Labels)
	// Labels that were already invalid in the same way may stay.
	if len(errs) > 0 && (len(oldErrs) == 0 || !sameErrors(errs, oldErrs)) {
		return invalid()
	}
	switch {
	case next.enforce == prev.enforce, next.enforce.level == Privileged:
		return nil
	case next.enforce.version == prev.enforce.version && next.enforce.level.rank() <= prev.enforce.level.rank():
		// Loosening at one version cannot make a pod violate.
		return nil
	}
	for _, w := range p.checkExistingPods(ctx, ns.Name, next.enforce) {
		a.AddWarning(w)
	}
	return nil
}

func sameErrors(a, b field.ErrorList) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Error() != b[i].Error() {
			return false
		}
	}
	return true
}

// checkExistingPods returns the warnings about the pods of namespace that
// violate enforce: one pod of each controller first, at most
// MaxPodsToCheck, a line per distinct set of reasons naming the first pod
// (by name) and how many others share it.
func (p *Plugin) checkExistingPods(ctx context.Context, namespace string, enforce levelVersion) []string {
	objs, _, err := p.src.List(ctx, podsGVR, namespace)
	if err != nil {
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	var first, rest []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref == nil:
			first = append(first, pod)
		case seen[ref.UID]:
			rest = append(rest, pod)
		default:
			seen[ref.UID] = true
			first = append(first, pod)
		}
	}
	pods := append(first, rest...)
	total := len(pods)
	if len(pods) > MaxPodsToCheck {
		pods = pods[:MaxPodsToCheck]
	}
	type count struct {
		name string
		n    int
	}
	var reasons []string
	counts := map[string]*count{}
	checked := len(pods)
	for i, pod := range pods {
		if r := evaluate(enforce, &pod.ObjectMeta, &pod.Spec); !r.allowed() {
			reason := r.reason()
			c, ok := counts[reason]
			if !ok {
				c = &count{name: pod.Name}
				counts[reason] = c
				reasons = append(reasons, reason)
			} else if pod.Name < c.name {
				c.name = pod.Name
			}
			c.n++
		}
		if ctx.Err() != nil {
			checked = i + 1
			break
		}
	}
	var out []string
	if checked < total {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(reasons) > 0 {
		out = append(out, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, enforce))
	}
	lines := make([]string, 0, len(reasons))
	for _, reason := range reasons {
		c := counts[reason]
		switch c.n {
		case 1:
			lines = append(lines, fmt.Sprintf("%s: %s", c.name, reason))
		case 2:
			lines = append(lines, fmt.Sprintf("%s (and 1 other pod): %s", c.name, reason))
		default:
			lines = append(lines, fmt.Sprintf("%s (and %d other pods): %s", c.name, c.n-1, reason))
		}
	}
	sort.Strings(lines)
	return append(out, lines...)
}

// namespacePolicy reads the policy of the request's namespace: from the
// cache, or from the store when the cache has not seen the namespace yet
// (one just created).
func (p *Plugin) namespacePolicy(ctx context.Context, namespace string) (policy, field.ErrorList, error) {
	obj, err := p.src.Get(ctx, namespaceGVR, "", namespace)
	if apierrors.IsNotFound(err) {
		obj, err = p.src.Fetch(ctx, namespaceGVR, "", namespace)
	}
	if err != nil {
		return policy{}, nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return policy{}, nil, fmt.Errorf("unexpected %T for a namespace", obj)
	}
	pol, errs := policyOf(ns.Labels)
	return pol, errs, nil
}

func (p *Plugin) validatePod(ctx context.Context, a *admission.Attributes) error {
	if ignoredPodSubresources[a.Subresource] {
		return nil
	}
	pol, errs, err := p.namespacePolicy(ctx, a.Namespace)
	if err != nil {
		p.metrics.failed(a, true)
		_ = a.AddAnnotation(ErrorAnnotation, fmt.Sprintf("Internal error occurred: failed to lookup namespace %q: %v", a.Namespace, err))
		return apierrors.NewInternalError(fmt.Errorf("failed to lookup namespace %q", a.Namespace))
	}
	if len(errs) == 0 && pol.fullyPrivileged() {
		p.metrics.evaluation(a, true, pol.enforce, "enforce")
		_ = a.AddAnnotation(EnforcePolicyAnnotation, levelVersion{Privileged, version{latest: true}}.String())
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		p.metrics.failed(a, true)
		return apierrors.NewBadRequest("failed to decode pod")
	}
	if a.Operation == admission.Update {
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			p.metrics.failed(a, true)
			return apierrors.NewBadRequest("failed to decode old pod")
		}
		if !significantUpdate(pod, old) {
			return nil
		}
	}
	return p.evaluate(a, pol, errs, &pod.ObjectMeta, &pod.Spec, true)
}

// significantUpdate reports whether a pod update can change what the
// checks decide: only images, and containers added, may change on a
// running pod (the rest of the spec is immutable or not checked).
func significantUpdate(pod, old *corev1.Pod) bool {
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return true
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image != old.Spec.Containers[i].Image {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Image != old.Spec.InitContainers[i].Image {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		var before *corev1.EphemeralContainer
		for i := range old.Spec.EphemeralContainers {
			if old.Spec.EphemeralContainers[i].Name == c.Name {
				before = &old.Spec.EphemeralContainers[i]
				break
			}
		}
		if before == nil || before.Image != c.Image {
			return true
		}
	}
	return false
}

func (p *Plugin) validateTemplate(ctx context.Context, a *admission.Attributes) {
	if a.Subresource != "" {
		return
	}
	pol, errs, err := p.namespacePolicy(ctx, a.Namespace)
	if err != nil {
		p.metrics.failed(a, true)
		_ = a.AddAnnotation(ErrorAnnotation, fmt.Sprintf("failed to lookup namespace %q: %v", a.Namespace, err))
		return
	}
	if len(errs) == 0 && pol.warn.level == Privileged && pol.audit.level == Privileged {
		return
	}
	meta, spec, err := podTemplate(a.Object)
	if err != nil {
		p.metrics.failed(a, true)
		_ = a.AddAnnotation(ErrorAnnotation, fmt.Sprintf("failed to extract pod template: %v", err))
		return
	}
	if spec == nil {
		return
	}
	_ = p.evaluate(a, pol, errs, meta, spec, false)
}

// podTemplate returns the pod template of a templated object; nil when it
// has none (a replication controller without one).
func podTemplate(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, error) {
	var t *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		t = &o.Template
	case *corev1.ReplicationController:
		t = o.Spec.Template
	case *appsv1.ReplicaSet:
		t = &o.Spec.Template
	case *appsv1.Deployment:
		t = &o.Spec.Template
	case *appsv1.StatefulSet:
		t = &o.Spec.Template
	case *appsv1.DaemonSet:
		t = &o.Spec.Template
	case *batchv1.Job:
		t = &o.Spec.Template
	case *batchv1.CronJob:
		t = &o.Spec.JobTemplate.Spec.Template
	default:
		return nil, nil, fmt.Errorf("unexpected object type: %T", obj)
	}
	if t == nil {
		return nil, nil, nil
	}
	return &t.ObjectMeta, &t.Spec, nil
}

// evaluate decides a pod (or pod template) against the policy: enforce
// refuses (only when enforce is set), audit annotates, warn warns when the
// request is allowed.
func (p *Plugin) evaluate(a *admission.Attributes, pol policy, errs field.ErrorList, meta *metav1.ObjectMeta, spec *corev1.PodSpec, enforce bool) error {
	if len(errs) > 0 {
		p.metrics.failed(a, false)
		_ = a.AddAnnotation(ErrorAnnotation, fmt.Sprintf("Failed to parse policy: %v", errs.ToAggregate()))
	}
	results := map[levelVersion]result{}
	var refusal error
	if enforce {
		_ = a.AddAnnotation(EnforcePolicyAnnotation, pol.enforce.String())
		r := evaluate(pol.enforce, meta, spec)
		results[pol.enforce] = r
		p.metrics.evaluation(a, r.allowed(), pol.enforce, "enforce")
		if !r.allowed() {
			refusal = apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
				fmt.Errorf("violates PodSecurity %q: %s", pol.enforce.String(), r.detail()))
		}
	}
	r, ok := results[pol.audit]
	if !ok {
		r = evaluate(pol.audit, meta, spec)
		results[pol.audit] = r
	}
	if !r.allowed() {
		p.metrics.evaluation(a, false, pol.audit, "audit")
		_ = a.AddAnnotation(AuditViolationsAnnotation, fmt.Sprintf("would violate PodSecurity %q: %s", pol.audit.String(), r.detail()))
	}
	if refusal == nil {
		r, ok := results[pol.warn]
		if !ok {
			r = evaluate(pol.warn, meta, spec)
		}
		if !r.allowed() {
			p.metrics.evaluation(a, false, pol.warn, "warn")
			a.AddWarning(fmt.Sprintf("would violate PodSecurity %q: %s", pol.warn.String(), r.detail()))
		}
	}
	return refusal
}

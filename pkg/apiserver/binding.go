package apiserver

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var bindingGVK = corev1.SchemeGroupVersion.WithKind("Binding")

// servesBinding reports whether the resource has the pods/binding
// subresource, through which schedulers assign a pod to a node.
func servesBinding(res *resource) bool {
	return res.info.GVK.Group == "" && res.info.Resource == "pods"
}

// serveBinding handles POST pods/{name}/binding: it sets spec.nodeName of
// an unassigned pod and marks it scheduled, as kube-apiserver does. A pod
// that is already assigned or being deleted is a 409 Conflict.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, q *request) {
	b := &corev1.Binding{}
	f, opts, warnings, ok := s.readSubresourceCreate(w, r, q, b, bindingGVK)
	if !ok {
		return
	}
	if b.Name == "" {
		b.Name = q.name
	}
	if b.Namespace == "" {
		b.Namespace = q.namespace
	}
	var errs field.ErrorList
	if b.Name != q.name || b.Namespace != q.namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), b.Name, "must match the pod in the URL"))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", ""}))
	}
	if len(errs) > 0 {
		s.writeError(w, r, apierrors.NewInvalid(bindingGVK.GroupKind(), b.Name, errs))
		return
	}
	// Admission sees the Binding, as in Kubernetes (webhooks may match
	// pods/binding).
	var err error
	if b, err = admitSubresourceCreate(s, w, r, q, "binding", bindingGVK, b, opts); err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	compute := func(current runtime.Object) (runtime.Object, error) {
		pod, ok := current.(*corev1.Pod)
		if !ok || pod.ResourceVersion == "" {
			return nil, apierrors.NewNotFound(q.gr(), q.name)
		}
		if b.UID != "" && b.UID != pod.UID {
			return nil, preconditionFailed(q.gr(), q.name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(q.gr(), q.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", q.name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(q.gr(), q.name, fmt.Errorf("pod %s is already assigned to node %q", q.name, pod.Spec.NodeName))
		}
		out := pod.DeepCopy()
		out.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
		setPodCondition(&out.Status, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(s.clock.Now()),
		})
		return out, nil
	}
	// The pod changes in spec and status at once, which neither the main
	// resource nor the status subresource allows: write it as the storage
	// update it is, after the pod's own validation.
	bq := *q
	bq.subresource = ""
	_, _, err = s.write(r.Context(), &bq, opts.dryRun, func(current runtime.Object) (runtime.Object, error) {
		out, err := compute(current)
		if err != nil {
			return nil, err
		}
		// Keep the new status through PrepareForUpdate, which restores the stored one.
		pod := out.(*corev1.Pod)
		status := pod.Status.DeepCopy()
		cur := current.(*corev1.Pod)
		cur.Status = *status
		return pod, nil
	})
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	addWarnings(w, warnings)
	s.writeObject(w, r, http.StatusCreated, f, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Code:     http.StatusCreated,
	})
}

// setPodCondition adds or replaces a condition by type.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// readSubresourceCreate starts a POST to a subresource that takes obj, of
// kind gvk (pods/binding, pods/eviction, serviceaccounts/token): it
// negotiates the response, reads the create options and decodes the body.
// On failure it has answered the client and ok is false.
func (s *Server) readSubresourceCreate(w http.ResponseWriter, r *http.Request, q *request, obj runtime.Object, gvk schema.GroupVersionKind) (f format, opts writeOptions, warnings []string, ok bool) {
	f, err := s.negotiate(r, q.res)
	if err == nil {
		opts, err = parseWriteOptions(r, "CreateOptions")
	}
	if err == nil {
		warnings, err = s.decodeBody(w, r, obj, gvk, opts.fieldValidation, nil)
	}
	if err != nil {
		s.writeError(w, r, err)
		return f, opts, nil, false
	}
	return f, opts, warnings, true
}

//lint:file-ignore SA1019 clients still send the deprecated DeleteOptions.OrphanDependents; it is honoured as kube-apiserver does

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// deleteAttempts bounds the retries of a delete racing other writers.
const deleteAttempts = 10

// undeletableNamespaces may never be deleted, as in Kubernetes.
var undeletableNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// parseDeleteOptions reads DeleteOptions from the body (if any) and the
// query, and validates them.
func (s *Server) parseDeleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		if err := decodeDeleteOptions(data, opts); err != nil {
			return nil, err
		}
	}
	v := r.URL.Query()
	if g := v.Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.GracePeriodSeconds = &n
	}
	if p := v.Get("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	if b, ok := queryBool(v, "orphanDependents"); ok {
		opts.OrphanDependents = &b
	}
	if d, ok := v["dryRun"]; ok {
		opts.DryRun = d
	}
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		// Kubernetes treats a negative grace period as "as soon as possible".
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return opts, nil
}

// decodeDeleteOptions decodes a DeleteOptions body: JSON, or the protobuf
// envelope that client-go's typed clients send. client-go labels the
// envelope with the group version of the resource being deleted (such as
// apps/v1), so only the kind is checked.
func decodeDeleteOptions(data []byte, opts *metav1.DeleteOptions) error {
	if !bytes.HasPrefix(data, protobufMagic) {
		if err := json.Unmarshal(data, opts); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
		}
		// Any group version may label DeleteOptions, but another kind is
		// not a delete's body: refuse it rather than delete unconditionally.
		if opts.Kind != "" && opts.Kind != "DeleteOptions" {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: the body holds a %s", opts.Kind))
		}
		return nil
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil {
		return apierrors.NewBadRequest("invalid DeleteOptions: protobuf envelope: " + err.Error())
	}
	if u.Kind != "" && u.Kind != "DeleteOptions" {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: the body holds a %s", u.Kind))
	}
	if u.ContentEncoding != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: protobuf content encoding %q is not supported", u.ContentEncoding))
	}
	if err := opts.Unmarshal(u.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
	}
	return nil
}

// serveDelete handles DELETE of one object.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := s.parseDeleteOptions(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkDelete(q.res, q.namespace, q.name); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, deleted, err := s.deleteAdmitted(r.Context(), q.res, q.namespace, q.name, opts, w)
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if deleted && !q.res.info.ReturnDeletedObject {
		m := accessor(out)
		s.writeObject(w, r, code, f, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details: &metav1.StatusDetails{
				Name: q.name, Group: q.res.info.GVK.Group, Kind: q.res.info.Resource, UID: m.GetUID(),
			},
		})
		return
	}
	s.writeObject(w, r, code, f, out)
}

// deleteObject deletes one object or, when it has finalizers or needs a
// graceful deletion, marks it with a deletionTimestamp. It returns the
// object's last state and whether it is gone.
func (s *Server) deleteObject(ctx context.Context, res *resource, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return s.deleteAdmitted(ctx, res, namespace, name, opts, nil)
}

// deleteAdmitted is deleteObject for a client's delete, answered on w: the
// admission chain sees the object once its preconditions hold, and its
// warnings go to w. A nil w skips admission (the server's own deletes).
func (s *Server) deleteAdmitted(ctx context.Context, res *resource, namespace, name string, opts *metav1.DeleteOptions, w http.ResponseWriter) (runtime.Object, bool, error) {
	if isNamespaces(res) {
		if slices.Contains(undeletableNamespaces, name) {
			return nil, false, apierrors.NewForbidden(res.gr(), name, fmt.Errorf("this namespace may not be deleted"))
		}
	}
	dryRun := len(opts.DryRun) > 0
	key := res.key(namespace, name)
	for attempt := 1; ; attempt++ {
		cur := res.strategy.New()
		if err := res.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
			return nil, false, err
		}
		res.setKind(cur)
		m := accessor(cur)
		if err := checkPreconditions(res.gr(), name, opts.Preconditions, m, false); err != nil {
			return nil, false, err
		}
		if w != nil {
			if err := s.admitDelete(ctx, w, res, cur, opts); err != nil {
				return nil, false, err
			}
		}
		uid, rv := m.GetUID(), m.GetResourceVersion()
		pre := &storage.Preconditions{UID: &uid, ResourceVersion: &rv}

		base := cur
		if dp, ok := res.strategy.(registry.DeletePreparer); ok && m.GetDeletionTimestamp() == nil {
			// The first delete of such an object changes it (a CRD gets
			// its cleanup finalizer), and the finalizer then holds it.
			base = cur.DeepCopyObject()
			dp.PrepareForDelete(base, s.clock.Now())
		}
		finalizers := deletionFinalizers(accessor(base).GetFinalizers(), opts)
		graceful, grace := res.strategy.GracefulDelete(cur, opts.GracePeriodSeconds)
		if isNamespaces(res) && (m.GetDeletionTimestamp() == nil || namespaceHeld(cur)) {
			// A namespace is first only marked Terminating; it goes once
			// the namespace controller has emptied it and finalized it.
			if m.GetDeletionTimestamp() != nil {
				return cur, false, nil
			}
			upd := cur.(*corev1.Namespace).DeepCopy()
			ts := metav1.NewTime(s.clock.Now())
			upd.DeletionTimestamp = &ts
			upd.Finalizers = finalizers
			upd.Status.Phase = corev1.NamespaceTerminating
			if dryRun {
				return upd, false, nil
			}
			out := res.strategy.New()
			err := res.store.GuaranteedUpdate(ctx, key, out, false, pre, func(runtime.Object) (runtime.Object, error) { return upd, nil })
			if storage.IsConflict(err) && attempt < deleteAttempts {
				continue
			}
			if err != nil {
				return nil, false, err
			}
			res.setKind(out)
			return out, false, nil
		}
		if len(finalizers) == 0 && !graceful {
			if dryRun {
				return cur, true, nil
			}
			out := res.strategy.New()
			err := res.store.Delete(ctx, key, out, pre, nil)
			if storage.IsConflict(err) && attempt < deleteAttempts {
				continue
			}
			if err != nil {
				return nil, false, err
			}
			res.released(ctx, out)
			res.setKind(out)
			return out, true, nil
		}

		// Mark for deletion: the garbage collector, the owner of a
		// finalizer or the node agent finishes it.
		upd := base.DeepCopyObject()
		um := accessor(upd)
		um.SetFinalizers(finalizers)
		now := s.clock.Now()
		if graceful {
			deadline := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
			old := um.GetDeletionTimestamp()
			if old == nil || deadline.Before(old) {
				um.SetDeletionTimestamp(&deadline)
				um.SetDeletionGracePeriodSeconds(&grace)
			}
		} else {
			// Nothing to wait for but the finalizers: once they are gone
			// the object goes (an update removing the last one deletes it).
			if old := um.GetDeletionTimestamp(); old == nil || now.Before(old.Time) {
				ts := metav1.NewTime(now)
				um.SetDeletionTimestamp(&ts)
			}
			if g := um.GetDeletionGracePeriodSeconds(); g == nil || *g != 0 {
				zero := int64(0)
				um.SetDeletionGracePeriodSeconds(&zero)
			}
		}
		if isNamespaces(res) {
			if ns, ok := upd.(*corev1.Namespace); ok {
				ns.Status.Phase = corev1.NamespaceTerminating
			}
		}
		if dryRun {
			return upd, false, nil
		}
		out := res.strategy.New()
		err := res.store.GuaranteedUpdate(ctx, key, out, false, pre, func(runtime.Object) (runtime.Object, error) { return upd, nil })
		if storage.IsConflict(err) && attempt < deleteAttempts {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		res.setKind(out)
		return out, false, nil
	}
}

// deletionFinalizers returns the finalizers an object gets from a delete
// with opts: the garbage collector's orphan or foregroundDeletion finalizer
// records the propagation policy, replacing the other one.
func deletionFinalizers(current []string, opts *metav1.DeleteOptions) []string {
	orphan := slices.Contains(current, metav1.FinalizerOrphanDependents)
	foreground := slices.Contains(current, metav1.FinalizerDeleteDependents)
	switch {
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
		if orphan {
			foreground = false
		}
	}
	out := make([]string, 0, len(current)+1)
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkPreconditions returns the 409 of a delete whose UID or
// resourceVersion precondition m does not meet. With emptyUnset an empty
// value is no precondition (as kube-apiserver's eviction reads them).
func checkPreconditions(gr schema.GroupResource, name string, p *metav1.Preconditions, m metav1.Object, emptyUnset bool) error {
	if p == nil {
		return nil
	}
	set := func(v *string) bool { return v != nil && (!emptyUnset || *v != "") }
	if set((*string)(p.UID)) && string(*p.UID) != string(m.GetUID()) {
		return preconditionFailed(gr, name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if set(p.ResourceVersion) && *p.ResourceVersion != m.GetResourceVersion() {
		return preconditionFailed(gr, name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

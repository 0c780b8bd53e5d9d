package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/storage"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// serveUpdate handles PUT of an object, its status or its scale.
func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := parseWriteOptions(r, "UpdateOptions")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var compute computeFunc
	var warnings []string
	if q.subresource == "scale" {
		scale := &autoscalingv1.Scale{}
		if warnings, err = s.decodeBody(w, r, scale, scaleGVK, opts.fieldValidation, nil); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := checkNameAndNamespace(q, scale); err != nil {
			s.writeError(w, r, err)
			return
		}
		compute = s.tracked(r, q, scaleCompute(q, func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error) { return scale, nil }))
	} else {
		obj := q.res.strategy.New()
		if warnings, err = s.decodeBody(w, r, obj, q.res.info.GVK, opts.fieldValidation, q.res.pruner()); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := checkNameAndNamespace(q, obj); err != nil {
			s.writeError(w, r, err)
			return
		}
		q.res.strategy.Default(obj)
		compute = s.tracked(r, q, func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
	}
	uq := *q
	uq.http = r
	uq.adm = newWriteAdmission(opts)
	out, created, err := s.write(r.Context(), &uq, opts.dryRun, compute)
	s.answerWrite(w, r, &uq, f, out, created, warnings, err)
}

// answerWrite answers an update or an apply: its error, or out (201 when
// the write created it) with the warnings of the request and of out.
func (s *Server) answerWrite(w http.ResponseWriter, r *http.Request, q *request, f format, out runtime.Object, created bool, warnings []string, err error) {
	addWarnings(w, q.adm.finish(r.Context()))
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	addWarnings(w, warnings)
	addWarnings(w, q.res.warnings(out))
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeResult(w, r, q, code, f, out)
}

// writeResult answers with out, or its scale for the scale subresource.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, q *request, code int, f format, out runtime.Object) {
	if q.subresource == "scale" {
		scale, err := q.res.strategy.Scale(out)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = scale
	}
	s.writeObject(w, r, code, f, out)
}

// checkNameAndNamespace makes a body's name and namespace agree with the URL,
// filling in a missing namespace.
func checkNameAndNamespace(q *request, obj runtime.Object) error {
	m := accessor(obj)
	if m.GetName() != q.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), q.name))
	}
	if !q.res.info.Namespaced {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(q.namespace)
	} else if m.GetNamespace() != q.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// computeFunc returns the state the client asks for, given the stored one
// (a zero object when it is missing). For the status subresource only the
// status of the result counts; for scale, the result is the whole object
// with the new replicas.
type computeFunc func(current runtime.Object) (runtime.Object, error)

// tracked wraps compute so that the state it returns records, in its
// managedFields, the fields the client of r changed.
func (s *Server) tracked(r *http.Request, q *request, compute computeFunc) computeFunc {
	return func(current runtime.Object) (runtime.Object, error) {
		obj, err := compute(current)
		if err != nil {
			return nil, err
		}
		return s.trackUpdate(r, q.res, q.subresource, current, obj), nil
	}
}

// scaleCompute adapts a change of the Scale view into a computeFunc.
func scaleCompute(q *request, change func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error)) computeFunc {
	return func(current runtime.Object) (runtime.Object, error) {
		cur, err := q.res.strategy.Scale(current)
		if err != nil {
			return nil, err
		}
		scale, err := change(cur)
		if err != nil {
			return nil, err
		}
		if scale.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), q.name, field.ErrorList{
				field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"),
			})
		}
		obj := current.DeepCopyObject()
		if err := q.res.strategy.SetReplicas(obj, scale.Spec.Replicas); err != nil {
			return nil, err
		}
		m := accessor(obj)
		if scale.ResourceVersion != "" {
			m.SetResourceVersion(scale.ResourceVersion)
		}
		if scale.UID != "" {
			m.SetUID(scale.UID)
		}
		return obj, nil
	}
}

// createPreconditions refuses to create, through an update, an object
// whose body names a uid or a resourceVersion: as in kube-apiserver, those
// are preconditions on an object that exists, so a client updating what it
// read (a controller racing a delete) gets a Conflict instead of bringing
// the deleted object back.
func createPreconditions(q *request, obj runtime.Object) error {
	if q.verb != "update" {
		return nil
	}
	m := accessor(obj)
	switch {
	case m.GetUID() != "":
		return preconditionFailed(q.gr(), q.name, fmt.Sprintf("Precondition failed: UID in precondition: %s, UID in object meta: ", m.GetUID()))
	case m.GetResourceVersion() != "":
		return preconditionFailed(q.gr(), q.name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in meta: ", m.GetResourceVersion()))
	}
	return nil
}

// write runs an update (or a create, for resources that allow create on
// update) through the strategy and storage. It returns the stored object
// and whether it was created. With dryRun nothing is stored.
func (s *Server) write(ctx context.Context, q *request, dryRun bool, compute computeFunc) (runtime.Object, bool, error) {
	res := q.res
	key := res.key(q.namespace, q.name)
	allowCreate := (res.info.AllowCreateOnUpdate || q.createMissing) && q.subresource == ""
	created := false
	// deleteObj is the object an update would have stored when that update
	// removes the last finalizer of an object being deleted: as in
	// kube-apiserver, the update is not written and the object is deleted
	// instead, so watchers see one DELETED event and no MODIFIED before it.
	var deleteObj runtime.Object
	txn := res.updateTxn(ctx, dryRun)
	tryUpdate := func(current runtime.Object) (runtime.Object, error) {
		created = false
		deleteObj = nil
		obj, err := compute(current)
		if err != nil {
			return nil, err
		}
		if accessor(current).GetResourceVersion() == "" {
			// Missing and the resource allows create on update.
			if !allowCreate {
				return nil, apierrors.NewNotFound(res.gr(), q.name)
			}
			if err := createPreconditions(q, obj); err != nil {
				return nil, err
			}
			if err := s.authorizeCreate(q); err != nil {
				return nil, err
			}
			created = true
			accessor(obj).SetResourceVersion("")
			var attrs *admission.Attributes
			if q.adm != nil {
				attrs = s.attributes(ctx, q, q.adm, admission.Create, obj, nil)
			}
			obj, _, err := s.prepareCreate(ctx, res, q.namespace, obj, attrs)
			if err == nil {
				err = txn.attempt(obj, nil)
			}
			return obj, err
		}
		var attrs *admission.Attributes
		if q.adm != nil {
			attrs = s.attributes(ctx, q, q.adm, admission.Update, obj, current)
			if q.subresource == "scale" {
				obj, err = s.admitScale(ctx, q, attrs, obj, current)
			} else if obj, err = s.admit(ctx, attrs); err == nil {
				// What a webhook's patch left unset is defaulted, as
				// Kubernetes defaults the object it decodes from a patch.
				res.strategy.Default(obj)
			}
			if err != nil {
				return nil, err
			}
		}
		out, err := s.prepareUpdate(res, q.subresource, obj, current)
		if err != nil {
			return nil, err
		}
		if err := s.checkRBACWrite(ctx, res, out, current); err != nil {
			return nil, err
		}
		if attrs != nil {
			if q.subresource == "scale" {
				err = s.validateScale(ctx, q, attrs, out, current)
			} else {
				attrs.Object, attrs.OldObject = out, current
				err = s.admission.Validate(ctx, attrs)
			}
			if err != nil {
				return nil, err
			}
		}
		if completesDeletion(accessor(out)) && !namespaceHeld(out) {
			deleteObj = out
			return nil, errEmptiedFinalizers
		}
		if err := txn.attempt(out, current); err != nil {
			return nil, err
		}
		return out, nil
	}
	if dryRun {
		current := res.strategy.New()
		if err := res.store.Get(ctx, key, storage.GetOptions{IgnoreNotFound: allowCreate}, current); err != nil {
			return nil, false, err
		}
		out, err := tryUpdate(current)
		if errors.Is(err, errEmptiedFinalizers) {
			return deleteObj, false, nil
		}
		return out, created, err
	}
	out := res.strategy.New()
	err := res.store.GuaranteedUpdate(ctx, key, out, allowCreate, nil, tryUpdate)
	txn.finish(err)
	if errors.Is(err, errEmptiedFinalizers) {
		// Removing the last finalizer of an object being deleted completes
		// the delete. Several clients may race to do it: NotFound is fine.
		uid := accessor(deleteObj).GetUID()
		deleted := res.strategy.New()
		if err := res.store.Delete(ctx, key, deleted, &storage.Preconditions{UID: &uid}, nil); err == nil {
			res.released(ctx, deleted)
		} else if !storage.IsNotFound(err) {
			return nil, false, err
		}
		res.setKind(deleteObj)
		return deleteObj, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	res.setKind(out)
	return out, created, nil
}

// errEmptiedFinalizers aborts an update that completes a deletion.
var errEmptiedFinalizers = errors.New("emptied finalizers")

// completesDeletion reports whether an object in this state is to be
// removed: it is being deleted, no finalizer holds it and no grace period
// is running.
func completesDeletion(m metav1.Object) bool {
	return m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 &&
		(m.GetDeletionGracePeriodSeconds() == nil || *m.GetDeletionGracePeriodSeconds() == 0)
}

// prepareUpdate turns the client's new state into the object to store.
func (s *Server) prepareUpdate(res *resource, subresource string, obj, current runtime.Object) (runtime.Object, error) {
	m, cm := accessor(obj), accessor(current)
	if rv := m.GetResourceVersion(); rv != "" {
		// A resourceVersion no server wrote can never match: it is invalid,
		// not a conflict a retry could resolve.
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return nil, res.invalid(cm.GetName(), field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, err.Error())})
		}
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return nil, apierrors.NewConflict(res.gr(), cm.GetName(), messageError(conflictMessage))
	}
	if uid := m.GetUID(); uid != "" && uid != cm.GetUID() {
		return nil, preconditionFailed(res.gr(), cm.GetName(), fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, cm.GetUID()))
	}
	// The managedFields were computed for this write (see tracked); the
	// preparation below may rebuild obj from current.
	managedFields := m.GetManagedFields()
	switch {
	case subresource == "status":
		obj = res.strategy.PrepareForStatusUpdate(obj, current)
	case subresource == "finalize":
		obj = prepareFinalize(obj, current)
	case hasSubresource(res, subresource):
		obj = prepareSubresourceUpdate(res, subresource, obj, current)
	default:
		res.strategy.PrepareForUpdate(obj, current)
		if isNamespaces(res) {
			keepNamespaceFinalizers(obj, current)
		}
	}
	m = accessor(obj)
	// The server owns these fields; clients cannot change them by update.
	m.SetUID(cm.GetUID())
	m.SetCreationTimestamp(cm.GetCreationTimestamp())
	m.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	m.SetManagedFields(managedFields)
	m.SetSelfLink("")
	m.SetResourceVersion(cm.GetResourceVersion())
	errs := res.strategy.ValidateUpdate(obj, current)
	if cm.GetDeletionTimestamp() != nil {
		errs = append(errs, apivalidation.ValidateNoNewFinalizers(m.GetFinalizers(), cm.GetFinalizers(), field.NewPath("metadata", "finalizers"))...)
	}
	if len(errs) > 0 {
		return nil, res.invalid(m.GetName(), errs)
	}
	res.setKind(obj)
	return obj, nil
}

package apiserver

import (
	"context"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/storage"
)

// generateNameAttempts is how often a create with generateName tries a new
// random suffix when the name is taken.
const generateNameAttempts = 8

// serveCreate handles POST of a new object.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := parseWriteOptions(r, "CreateOptions")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj := q.res.strategy.New()
	warnings, err := s.decodeBody(w, r, obj, q.res.info.GVK, opts.fieldValidation, q.res.pruner())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	m := accessor(obj)
	if q.res.info.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(q.namespace)
		} else if m.GetNamespace() != q.namespace {
			s.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	}
	setRequestor(q.res, obj, r)
	// As in kube-apiserver, where decoding defaults, the creator owns the
	// defaulted fields too.
	q.res.strategy.Default(obj)
	obj = s.trackUpdate(r, q.res, "", q.res.strategy.New(), obj)
	wa := newWriteAdmission(opts)
	attrs := s.attributes(r.Context(), q, wa, admission.Create, obj, nil)
	out, err := s.createAdmitted(r.Context(), q.res, q.namespace, obj, opts.dryRun, attrs)
	addWarnings(w, wa.finish(r.Context()))
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), m.GetName())
		return
	}
	addWarnings(w, warnings)
	addWarnings(w, q.res.warnings(out))
	s.writeObject(w, r, http.StatusCreated, f, out)
}

// createObject defaults, validates and stores a new object, generating its
// name from generateName when it has none.
func (s *Server) createObject(ctx context.Context, res *resource, namespace string, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	return s.createAdmitted(ctx, res, namespace, obj, dryRun, nil)
}

// createAdmitted is createObject for a client's create, which goes
// through admission with attrs (nil for the server's own creates).
func (s *Server) createAdmitted(ctx context.Context, res *resource, namespace string, obj runtime.Object, dryRun bool, attrs *admission.Attributes) (runtime.Object, error) {
	obj, generated, err := s.prepareCreate(ctx, res, namespace, obj, attrs)
	if err != nil {
		return nil, err
	}
	if dryRun {
		if err := res.checkCreate(ctx, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	m := accessor(obj)
	for attempt := 1; ; attempt++ {
		undo, err := res.claimCreate(ctx, obj)
		if err != nil {
			return nil, err
		}
		out := res.strategy.New()
		err = res.store.Create(ctx, res.key(m.GetNamespace(), m.GetName()), obj, out)
		if err == nil {
			res.setKind(out)
			return out, nil
		}
		undo()
		if !generated || !storage.IsExists(err) || attempt == generateNameAttempts {
			return nil, toStatusError(err, res.gr(), m.GetName())
		}
		m.SetName(m.GetGenerateName() + utilrand.String(generatedSuffixLen))
	}
}

// generatedSuffixLen is the length of the random suffix of a generated name.
const generatedSuffixLen = 5

// prepareCreate defaults, stamps and validates a new object, and reports
// whether it generated the object's name.
// With attrs (a client's create), the mutating admission plugins run once
// the namespace is known to accept it, and the validating ones last.
func (s *Server) prepareCreate(ctx context.Context, res *resource, namespace string, obj runtime.Object, attrs *admission.Attributes) (runtime.Object, bool, error) {
	m := accessor(obj)
	if !res.info.Namespaced {
		m.SetNamespace("")
	}
	if m.GetResourceVersion() != "" {
		return nil, false, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if res.info.Namespaced && namespace != "" && !s.noNamespaceLifecycle {
		if err := s.checkNamespace(ctx, res.gr(), m.GetName(), namespace); err != nil {
			return nil, false, err
		}
	}
	if attrs != nil {
		attrs.Object, attrs.OldObject = obj, nil
		var err error
		if obj, err = s.admit(ctx, attrs); err != nil {
			return nil, false, err
		}
		m = accessor(obj)
		if !res.info.Namespaced {
			m.SetNamespace("")
		}
	}
	res.strategy.Default(obj)
	// The uid and the name are known before PrepareForCreate, as in
	// Kubernetes: a job's generated selector and pod labels are made of them.
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(time.Second)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(m.GetGenerateName() + utilrand.String(generatedSuffixLen))
	}
	res.strategy.PrepareForCreate(obj)
	if errs := res.strategy.Validate(obj); len(errs) > 0 {
		return nil, false, res.invalid(m.GetName(), errs)
	}
	if err := s.checkRBACWrite(ctx, res, obj, nil); err != nil {
		return nil, false, err
	}
	res.setKind(obj)
	if attrs != nil {
		attrs.Object, attrs.Name = obj, m.GetName()
		if err := s.admission.Validate(ctx, attrs); err != nil {
			return nil, false, err
		}
	}
	return obj, generated, nil
}

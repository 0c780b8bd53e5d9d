package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
	"github.com/kplane/kplane/pkg/admission/plugins/defaultstorageclass"
	"github.com/kplane/kplane/pkg/admission/plugins/defaulttolerationseconds"
	"github.com/kplane/kplane/pkg/admission/plugins/limitranger"
	"github.com/kplane/kplane/pkg/admission/plugins/podsecurity"
	"github.com/kplane/kplane/pkg/admission/plugins/priority"
	"github.com/kplane/kplane/pkg/admission/plugins/resourcequota"
	"github.com/kplane/kplane/pkg/admission/plugins/serviceaccount"
	"github.com/kplane/kplane/pkg/admission/policy"
	"github.com/kplane/kplane/pkg/admission/webhook"
	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/storage"
)

// AdmissionConfig configures the admission chain every write of a client
// goes through (see package admission).
type AdmissionConfig struct {
	// Enable and Disable change the default plugins
	// (admission.DefaultOnPlugins), as kube-apiserver's
	// --enable-admission-plugins and --disable-admission-plugins, with one
	// difference for a server embedded as a library: ServiceAccount runs
	// only when Enable names it, since it refuses every pod until the
	// serviceaccount controller has made its namespace's default
	// ServiceAccount (envtest disables it for the same reason). `kplane
	// apiserver` and `kplane up` enable it, as kube-apiserver does.
	Enable, Disable []string
	// Plugins adds or replaces plugin factories by name (tests, or a
	// program's own plugins); the names must be in admission.OrderedPlugins.
	Plugins admission.Plugins
	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds are the tolerations
	// DefaultTolerationSeconds gives pods. Default 300.
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64
}

// admissionPlugins are the factories of the plugins kplane implements
// beside NamespaceLifecycle, which the server checks itself.
var admissionPlugins = admission.Plugins{
	admission.AlwaysAdmit:                func(*admission.Config) (admission.Interface, error) { return alwaysAdmit{}, nil },
	admission.AlwaysDeny:                 func(*admission.Config) (admission.Interface, error) { return alwaysDeny{}, nil },
	admission.LimitRanger:                limitranger.New,
	admission.ServiceAccount:             serviceaccount.New,
	admission.Priority:                   priority.New,
	admission.DefaultTolerationSeconds:   defaulttolerationseconds.New,
	admission.DefaultStorageClass:        defaultstorageclass.New,
	admission.PodSecurity:                podsecurity.New,
	admission.MutatingAdmissionWebhook:   webhook.NewMutating,
	admission.ValidatingAdmissionWebhook: webhook.NewValidating,
	admission.ResourceQuota:              resourcequota.New,
	admission.ValidatingAdmissionPolicy:  policy.NewValidating,
	admission.MutatingAdmissionPolicy:    policy.NewMutating,
}

// alwaysAdmit is kube's deprecated AlwaysAdmit: it changes nothing.
type alwaysAdmit struct{}

func (alwaysAdmit) Handles(admission.Operation) bool { return true }

func (alwaysAdmit) Validate(context.Context, *admission.Attributes) error { return nil }

// alwaysDeny is kube's deprecated AlwaysDeny: it refuses every write.
type alwaysDeny struct{}

func (alwaysDeny) Handles(admission.Operation) bool { return true }

func (alwaysDeny) Validate(_ context.Context, a *admission.Attributes) error {
	return admission.NewForbidden(a, errors.New("admission control is denying all modifications"))
}

// setupAdmission builds the admission chain of cfg.Admission.
func (s *Server) setupAdmission() error {
	disable := s.cfg.Admission.Disable
	if !slices.Contains(s.cfg.Admission.Enable, admission.ServiceAccount) && !slices.Contains(disable, admission.ServiceAccount) {
		disable = append(slices.Clone(disable), admission.ServiceAccount)
	}
	names, err := admission.Enabled(s.cfg.Admission.Enable, disable)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	plugins := admission.Plugins{}
	for n, f := range admissionPlugins {
		plugins[n] = f
	}
	for n, f := range s.cfg.Admission.Plugins {
		if !slices.Contains(admission.OrderedPlugins, n) {
			return fmt.Errorf("apiserver: admission plugin %q is not one kplane orders", n)
		}
		plugins[n] = f
	}
	s.admSource = &admissionSource{s: s, followers: map[schema.GroupVersionResource]*follower{}}
	cfg := &admission.Config{
		Source:                              s.admSource,
		Authorizer:                          s.authz,
		Clock:                               s.clock,
		Metrics:                             s.cfg.Registerer,
		Logger:                              s.log,
		Resolver:                            admissionResolver{s},
		Merger:                              admissionMerger{s},
		DefaultNotReadyTolerationSeconds:    s.cfg.Admission.DefaultNotReadyTolerationSeconds,
		DefaultUnreachableTolerationSeconds: s.cfg.Admission.DefaultUnreachableTolerationSeconds,
	}
	if cfg.DefaultNotReadyTolerationSeconds == 0 {
		cfg.DefaultNotReadyTolerationSeconds = 300
	}
	if cfg.DefaultUnreachableTolerationSeconds == 0 {
		cfg.DefaultUnreachableTolerationSeconds = 300
	}
	if conditions != nil {
		cfg.Conditions = conditions(s.authz)
	}
	chain, err := admission.NewChain(names, plugins, cfg)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	s.admission = chain
	s.admConfig = cfg
	s.noNamespaceLifecycle = !chain.Enabled(admission.NamespaceLifecycle)
	return nil
}

// conditions compiles webhooks' matchConditions.
var conditions = admissioncel.NewConditionCompiler

// writeAdmission is what the admission of a client's write needs beside
// the objects: its options, and the attributes of its last attempt (whose
// warnings the answer carries).
type writeAdmission struct {
	fieldManager    string
	fieldValidation string
	dryRun          bool
	// patch is set for a patch (PatchOptions are reported as
	// UpdateOptions or CreateOptions, as in Kubernetes).
	mu    sync.Mutex
	attrs *admission.Attributes
}

// newWriteAdmission returns the admission state of a write with opts.
func newWriteAdmission(opts writeOptions) *writeAdmission {
	return &writeAdmission{fieldManager: opts.fieldManager, fieldValidation: opts.fieldValidation, dryRun: opts.dryRun}
}

// finish returns the warnings admission gave the write's last attempt,
// and records its audit annotations in the request's audit event.
func (wa *writeAdmission) finish(ctx context.Context) []string {
	if wa == nil {
		return nil
	}
	wa.mu.Lock()
	a := wa.attrs
	wa.mu.Unlock()
	if a == nil {
		return nil
	}
	recordAnnotations(ctx, a)
	return a.Warnings()
}

// recordAnnotations copies a's audit annotations to the request's audit
// event.
func recordAnnotations(ctx context.Context, a *admission.Attributes) {
	for k, v := range a.Annotations() {
		audit.AddAnnotation(ctx, k, v)
	}
}

// options returns the options object of op.
func (wa *writeAdmission) options(op admission.Operation) runtime.Object {
	var dryRun []string
	if wa.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	if op == admission.Create {
		return &metav1.CreateOptions{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"},
			DryRun:   dryRun, FieldManager: wa.fieldManager, FieldValidation: wa.fieldValidation,
		}
	}
	return &metav1.UpdateOptions{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"},
		DryRun:   dryRun, FieldManager: wa.fieldManager, FieldValidation: wa.fieldValidation,
	}
}

// attributes returns the admission attributes of one attempt of a write
// of q, remembering them for the answer's warnings.
func (s *Server) attributes(ctx context.Context, q *request, wa *writeAdmission, op admission.Operation, obj, old runtime.Object) *admission.Attributes {
	a := s.newAttributes(ctx, q.res, q.subresource, op, obj, old, wa.options(op), wa.dryRun)
	if q.name != "" {
		a.Name = q.name
	}
	wa.mu.Lock()
	wa.attrs = a
	wa.mu.Unlock()
	return a
}

// newAttributes returns the attributes of a request on res.
func (s *Server) newAttributes(ctx context.Context, res *resource, subresource string, op admission.Operation, obj, old runtime.Object, options runtime.Object, dryRun bool) *admission.Attributes {
	a := &admission.Attributes{
		Operation:   op,
		Kind:        res.info.GVK,
		Resource:    res.info.GroupVersionResource(),
		Subresource: subresource,
		Object:      obj,
		OldObject:   old,
		Options:     options,
		DryRun:      dryRun,
		User:        authentication.UserFrom(ctx),
		UID:         uuid.NewUUID(),
		Objects:     admissionObjects{s: s, res: res},
	}
	if subresource == "scale" {
		a.Kind = scaleGVK
	}
	for _, o := range []runtime.Object{obj, old} {
		if o == nil {
			continue
		}
		m := accessor(o)
		a.Name, a.Namespace = m.GetName(), m.GetNamespace()
		break
	}
	if isNamespaces(res) {
		// As in Kubernetes, a namespace's own requests are in it.
		a.Namespace = a.Name
	}
	return a
}

// admit runs the mutating plugins on a, returning a.Object.
func (s *Server) admit(ctx context.Context, a *admission.Attributes) (runtime.Object, error) {
	if err := s.admission.Admit(ctx, a); err != nil {
		return nil, err
	}
	return a.Object, nil
}

// admitScale runs the mutating plugins of a write through the scale
// subresource, which see Scale objects: the replicas they set are the
// object's.
func (s *Server) admitScale(ctx context.Context, q *request, a *admission.Attributes, obj, current runtime.Object) (runtime.Object, error) {
	scale, err := q.res.strategy.Scale(obj)
	if err != nil {
		return nil, err
	}
	old, err := q.res.strategy.Scale(current)
	if err != nil {
		return nil, err
	}
	a.Object, a.OldObject = scale, old
	before := scale.Spec.Replicas
	if err := s.admission.Admit(ctx, a); err != nil {
		return nil, err
	}
	after, ok := a.Object.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("admission made a %T of a Scale", a.Object))
	}
	if after.Spec.Replicas != before {
		obj = obj.DeepCopyObject()
		if err := q.res.strategy.SetReplicas(obj, after.Spec.Replicas); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// validateScale runs the validating plugins of a write through the scale
// subresource on the Scale of out.
func (s *Server) validateScale(ctx context.Context, q *request, a *admission.Attributes, out, current runtime.Object) error {
	scale, err := q.res.strategy.Scale(out)
	if err != nil {
		return err
	}
	old, err := q.res.strategy.Scale(current)
	if err != nil {
		return err
	}
	a.Object, a.OldObject = scale, old
	return s.admission.Validate(ctx, a)
}

// admitSubresourceCreate runs both chains on obj, of kind, created
// through the subresource sub of q's object (a pods/binding Binding, a
// serviceaccounts/token TokenRequest), answering their warnings on w. It
// returns obj as the mutating plugins left it.
func admitSubresourceCreate[T runtime.Object](s *Server, w http.ResponseWriter, r *http.Request, q *request, sub string, kind schema.GroupVersionKind, obj T, opts writeOptions) (T, error) {
	ctx := r.Context()
	a := s.newAttributes(ctx, q.res, sub, admission.Create, obj, nil, newWriteAdmission(opts).options(admission.Create), opts.dryRun)
	a.Kind = kind
	a.Name, a.Namespace = q.name, q.namespace
	defer func() {
		recordAnnotations(ctx, a)
		addWarnings(w, a.Warnings())
	}()
	if err := s.admission.Admit(ctx, a); err != nil {
		return obj, err
	}
	out, ok := a.Object.(T)
	if !ok {
		return obj, apierrors.NewInternalError(fmt.Errorf("admission made a %T of a %s", a.Object, kind.Kind))
	}
	return out, s.admission.Validate(ctx, a)
}

// admitDelete runs admission on the delete of cur (both chains, with the
// object as OldObject, as Kubernetes does); the plugins' warnings go to w.
func (s *Server) admitDelete(ctx context.Context, w http.ResponseWriter, res *resource, cur runtime.Object, opts *metav1.DeleteOptions) error {
	o := opts.DeepCopy()
	o.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}
	a := s.newAttributes(ctx, res, "", admission.Delete, nil, cur.DeepCopyObject(), o, len(opts.DryRun) > 0)
	defer func() {
		recordAnnotations(ctx, a)
		addWarnings(w, a.Warnings())
	}()
	if err := s.admission.Admit(ctx, a); err != nil {
		return err
	}
	return s.admission.Validate(ctx, a)
}

var vapGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}

// admissionObjects converts objects of res for plugins.
type admissionObjects struct {
	s   *Server
	res *resource
}

func (o admissionObjects) ConvertTo(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk == o.res.info.GVK || gvk == scaleGVK {
		return obj.DeepCopyObject(), nil
	}
	if gvk.GroupKind() != o.res.info.GVK.GroupKind() {
		return nil, fmt.Errorf("cannot convert %s to %s", o.res.info.GVK, gvk)
	}
	conv := o.s.versionConvert(o.res)
	if conv == nil {
		return nil, fmt.Errorf("%s is served in one version only", o.res.info.GVK.GroupKind())
	}
	return conv(obj, gvk.GroupVersion())
}

func (o admissionObjects) EquivalentResources(gvr schema.GroupVersionResource, subresource string) []admission.Equivalent {
	var out []admission.Equivalent
	set := o.s.served.Load()
	for _, v := range set.groups {
		if v.Group != gvr.Group || v.Version == gvr.Version {
			continue
		}
		r := set.byGVR[v.WithResource(gvr.Resource)]
		if r == nil {
			continue
		}
		gv := r.info.GroupVersionResource()
		kind := r.info.GVK
		switch subresource {
		case "":
		case "scale":
			if !r.info.Scale {
				continue
			}
			kind = scaleGVK
		case "status":
			if !r.info.Status {
				continue
			}
		default:
			if !hasSubresource(r, subresource) {
				continue
			}
		}
		out = append(out, admission.Equivalent{Resource: gv, Kind: kind})
	}
	return out
}

// admissionResolver answers plugins' questions about served resources.
type admissionResolver struct{ s *Server }

func (r admissionResolver) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	if res := r.s.served.Load().byGVK[gvk]; res != nil && res.info.GVK == gvk {
		{
			return res.info.GroupVersionResource(), res.info.Namespaced, nil
		}
	}
	return schema.GroupVersionResource{}, false, fmt.Errorf("no resource serves %s", gvk)
}

func (r admissionResolver) Served() []admission.ServedResource {
	var out []admission.ServedResource
	for _, res := range r.s.servedResources() {
		gvr := res.info.GroupVersionResource()
		out = append(out, admission.ServedResource{Resource: gvr, Kind: res.info.GVK, Namespaced: res.info.Namespaced})
		subs := extraSubresources(res)
		if res.info.Status {
			subs = append([]string{"status"}, subs...)
		}
		if res.info.Scale {
			subs = append(subs, "scale")
		}
		for _, sub := range subs {
			kind := res.info.GVK
			if sub == "scale" {
				kind = scaleGVK
			}
			out = append(out, admission.ServedResource{Resource: gvr, Subresource: sub, Kind: kind, Namespaced: res.info.Namespaced})
		}
	}
	return out
}

// admissionSource is the cluster as admission plugins read it: while
// RunControllers runs, each resource asked for is followed in memory
// (listed, then watched) from its first use on; otherwise, and for
// Fetch, reads go to the store.
type admissionSource struct {
	s *Server

	mu sync.Mutex
	// base is RunControllers' context while it runs, nil otherwise.
	base      context.Context
	wg        sync.WaitGroup
	followers map[schema.GroupVersionResource]*follower
}

var _ admission.Source = (*admissionSource)(nil)

// run lets the source follow resources until ctx ends, and returns once
// its followers have stopped.
func (src *admissionSource) run(ctx context.Context) {
	src.mu.Lock()
	src.base = ctx
	src.mu.Unlock()
	if s := src.s; s.admission.Enabled(admission.ValidatingAdmissionPolicy) && s.lookup(vapGVR) != nil {
		// The policies' status: observedGeneration and type checking.
		src.wg.Go(func() { _ = policy.RunStatus(ctx, s.admConfig) })
	}
	<-ctx.Done()
	src.mu.Lock()
	src.base = nil
	src.followers = map[schema.GroupVersionResource]*follower{}
	src.mu.Unlock()
	src.wg.Wait()
}

func (src *admissionSource) resource(gvr schema.GroupVersionResource) (*resource, error) {
	res := src.s.lookup(gvr)
	if res == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	return res, nil
}

// follower returns the follower of gvr, started on first use; nil when
// the source is not running.
func (src *admissionSource) follower(res *resource) *follower {
	gvr := res.info.GroupVersionResource()
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.base == nil {
		return nil
	}
	if f := src.followers[gvr]; f != nil && f.res == res {
		return f
	}
	f := newFollower(res)
	src.followers[gvr] = f
	ctx := src.base
	src.wg.Go(func() {
		f.run(ctx, src.s)
		src.mu.Lock()
		if src.followers[gvr] == f {
			delete(src.followers, gvr)
		}
		src.mu.Unlock()
	})
	return f
}

func (src *admissionSource) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, err := src.resource(gvr)
	if err != nil {
		return nil, err
	}
	f := src.follower(res)
	if f == nil {
		return src.Fetch(ctx, gvr, namespace, name)
	}
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	f.mu.RLock()
	obj := f.objs[namespace][name]
	f.mu.RUnlock()
	if obj == nil {
		return nil, apierrors.NewNotFound(res.gr(), name)
	}
	return obj, nil
}

func (src *admissionSource) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, uint64, error) {
	res, err := src.resource(gvr)
	if err != nil {
		return nil, 0, err
	}
	f := src.follower(res)
	if f == nil {
		list := res.strategy.NewList()
		if err := res.store.GetList(ctx, res.prefix(namespace), storage.ListOptions{Recursive: true}, list); err != nil {
			return nil, 0, toStatusError(err, res.gr(), "")
		}
		items, err := listItems(list)
		if err != nil {
			return nil, 0, err
		}
		for _, o := range items {
			res.setKind(o)
		}
		// Uncached: every list is a new revision.
		return items, src.s.uncachedRevision(), nil
	}
	if err := f.wait(ctx); err != nil {
		return nil, 0, err
	}
	return f.list(namespace)
}

func (src *admissionSource) Fetch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, err := src.resource(gvr)
	if err != nil {
		return nil, err
	}
	out := res.strategy.New()
	if err := res.store.Get(ctx, res.key(namespace, name), storage.GetOptions{}, out); err != nil {
		return nil, toStatusError(err, res.gr(), name)
	}
	res.setKind(out)
	return out, nil
}

func (src *admissionSource) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	res, err := src.resource(gvr)
	if err != nil {
		return nil, err
	}
	m := accessor(obj)
	out := res.strategy.New()
	err = res.store.GuaranteedUpdate(ctx, res.key(m.GetNamespace(), m.GetName()), out, false, nil, func(current runtime.Object) (runtime.Object, error) {
		return src.s.prepareUpdate(res, "status", obj.DeepCopyObject(), current)
	})
	if err != nil {
		return nil, toStatusError(err, res.gr(), m.GetName())
	}
	res.setKind(out)
	return out, nil
}

// servedResources returns what the server serves, in discovery order.
func (s *Server) servedResources() []*resource {
	set := s.served.Load()
	out := make([]*resource, 0, len(set.order))
	for _, gvr := range set.order {
		out = append(out, set.byGVR[gvr])
	}
	return out
}

// uncachedRevision counts the lists read without a cache.
func (s *Server) uncachedRevision() uint64 {
	return s.admUncached.Add(1) | 1<<63
}

// follower keeps the objects of one resource in memory.
type follower struct {
	res    *resource
	synced chan struct{}
	once   sync.Once

	mu sync.RWMutex
	// seen is the resourceVersion of the last change applied; changed is
	// closed and replaced at every change.
	seen    uint64
	changed chan struct{}
	objs    map[string]map[string]runtime.Object
	// lists caches the sorted lists by namespace ("\x00" for all) until
	// the next change.
	lists map[string][]runtime.Object
	rev   uint64
}

func newFollower(res *resource) *follower {
	return &follower{res: res, synced: make(chan struct{}), changed: make(chan struct{}), objs: map[string]map[string]runtime.Object{}, lists: map[string][]runtime.Object{}}
}

// wait blocks until the first list is in, or ctx ends.
func (f *follower) wait(ctx context.Context) error {
	select {
	case <-f.synced:
		return nil
	default:
	}
	select {
	case <-f.synced:
		return nil
	case <-ctx.Done():
		return apierrors.NewTimeoutError(fmt.Sprintf("the cache of %s has not synced", f.res.gr()), 1)
	}
}

func (f *follower) list(namespace string) ([]runtime.Object, uint64, error) {
	key := namespace
	if namespace == "" {
		key = "\x00"
	}
	f.mu.RLock()
	l, ok := f.lists[key]
	rev := f.rev
	f.mu.RUnlock()
	if ok {
		return l, rev, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.lists[key]; ok {
		return l, f.rev, nil
	}
	l = []runtime.Object{}
	add := func(m map[string]runtime.Object) {
		for _, o := range m {
			l = append(l, o)
		}
	}
	if namespace == "" {
		for _, m := range f.objs {
			add(m)
		}
	} else {
		add(f.objs[namespace])
	}
	slices.SortFunc(l, func(a, b runtime.Object) int {
		ma, mb := accessor(a), accessor(b)
		if c := strings.Compare(ma.GetNamespace(), mb.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(ma.GetName(), mb.GetName())
	})
	f.lists[key] = l
	return l, f.rev, nil
}

// observe records that the follower has seen rv; f.mu is held.
func (f *follower) observe(rv string) {
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > f.seen {
		f.seen = n
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitSeen blocks until the follower has seen resourceVersion rv.
func (f *follower) waitSeen(ctx context.Context, rv uint64) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	for {
		f.mu.RLock()
		seen, changed := f.seen, f.changed
		f.mu.RUnlock()
		if seen >= rv {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitForAdmission blocks until the admission plugins see the objects of
// gvr as they were at resourceVersion rv or later (the plugins read a
// cache that follows the store a moment behind). It needs RunControllers
// (or Run) running; without it plugins read the store itself and it
// returns at once.
func (s *Server) WaitForAdmission(ctx context.Context, gvr schema.GroupVersionResource, rv string) error {
	res, err := s.admSource.resource(gvr)
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q: %w", rv, err)
	}
	f := s.admSource.follower(res)
	if f == nil {
		return nil
	}
	return f.waitSeen(ctx, n)
}

// run lists and watches until ctx ends or the resource goes.
func (f *follower) run(ctx context.Context, s *Server) {
	for ctx.Err() == nil {
		err := f.listAndWatch(ctx)
		if errors.Is(err, errResourceGone) {
			return
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("following objects for admission failed; listing again", "resource", f.res.gr().String(), "error", err)
		}
		select {
		case <-ctx.Done():
		case <-s.clock.After(crdRetryDelay):
		}
	}
}

var errResourceGone = errors.New("resource no longer served")

func (f *follower) listAndWatch(ctx context.Context) error {
	res := f.res
	list := res.strategy.NewList()
	if err := res.store.GetList(ctx, res.prefix(""), storage.ListOptions{Recursive: true}, list); err != nil {
		return err
	}
	items, err := listItems(list)
	if err != nil {
		return err
	}
	objs := map[string]map[string]runtime.Object{}
	for _, o := range items {
		res.setKind(o)
		m := accessor(o)
		if objs[m.GetNamespace()] == nil {
			objs[m.GetNamespace()] = map[string]runtime.Object{}
		}
		objs[m.GetNamespace()][m.GetName()] = o
	}
	f.mu.Lock()
	f.objs = objs
	f.lists = map[string][]runtime.Object{}
	f.rev++
	f.observe(accessorList(list))
	f.mu.Unlock()
	f.once.Do(func() { close(f.synced) })
	w, err := res.store.Watch(ctx, res.prefix(""), storage.ListOptions{Recursive: true, ResourceVersion: accessorList(list)})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		var ev storage.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case <-res.gone:
			return errResourceGone
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return errors.New("watch closed")
		}
		if ev.Type == watch.Error {
			return fmt.Errorf("watch: %s", errorMessage(ev.Object))
		}
		if ev.Object == nil || ev.Type == watch.Bookmark {
			continue
		}
		obj := ev.Object
		if obj.GetObjectKind().GroupVersionKind() != res.info.GVK {
			// Watch events share their objects with the store and other
			// watchers: never change them.
			obj = obj.DeepCopyObject()
			res.setKind(obj)
		}
		m := accessor(obj)
		ns, name := m.GetNamespace(), m.GetName()
		f.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(f.objs[ns], name)
		} else {
			if f.objs[ns] == nil {
				f.objs[ns] = map[string]runtime.Object{}
			}
			f.objs[ns][name] = obj
		}
		delete(f.lists, ns)
		delete(f.lists, "\x00")
		f.rev++
		f.observe(m.GetResourceVersion())
		f.mu.Unlock()
	}
}

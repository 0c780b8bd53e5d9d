package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/storage"
)

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// crdRetryDelay is how long the CRD controller waits before it lists
// again after its watch failed, and between checks that a terminating
// CRD's objects are gone.
const crdRetryDelay = time.Second

// crdController keeps what the server serves in step with the
// CustomResourceDefinitions in storage, as kube-apiserver's naming,
// establishing, finalizing and serving parts do together: it grants
// names, marks CRDs Established, serves their versions once they are,
// and empties and removes CRDs being deleted. Every server sharing a
// storage runs one; their writes agree, so they converge.
type crdController struct {
	s   *Server
	res *resource // customresourcedefinitions

	mu sync.Mutex
	// crds holds the newest state seen of every CRD, by name.
	crds map[string]*apiextensions.CRD
	// stores holds the store of each CRD's objects, shared by its
	// versions and kept across changes of the CRD.
	stores map[string]*crdStore
	// gone holds, per CRD uid, the channel closed when that CRD goes.
	gone map[types.UID]chan struct{}
	// serving caches the served strategies and the converter by CRD uid
	// and resourceVersion, so that an unchanged CRD keeps its values.
	serving map[string]*crdServing
	// cleaning holds the CRDs whose objects are being deleted.
	cleaning map[string]bool
	wg       sync.WaitGroup
}

// crdServing is what serves one state of a CRD.
type crdServing struct {
	// strategies are the served versions', the storage version's first
	// when it is served.
	strategies []*apiextensions.CustomResource
	conv       apiextensions.Converter
}

type crdStore struct {
	storage schema.GroupVersion
	store   storage.Interface
}

func newCRDController(s *Server, res *resource) *crdController {
	return &crdController{
		s: s, res: res,
		crds:     map[string]*apiextensions.CRD{},
		stores:   map[string]*crdStore{},
		gone:     map[types.UID]chan struct{}{},
		serving:  map[string]*crdServing{},
		cleaning: map[string]bool{},
	}
}

// RunControllers runs the server's own controllers until ctx ends: when
// the server serves customresourcedefinitions, the one that serves their
// custom resources, and in RBAC mode the cache of the RBAC policy. Run
// calls it; a server whose Handler is served some other way must run it
// too for custom resources to be served and RBAC decisions to be made. It
// returns once every goroutine it started has stopped.
func (s *Server) RunControllers(ctx context.Context) error {
	if s.admSource != nil {
		var wg sync.WaitGroup
		wg.Go(func() { s.admSource.run(ctx) })
		defer wg.Wait()
	}
	if s.rbac != nil {
		var wg sync.WaitGroup
		wg.Go(func() { s.rbac.cache.run(ctx) })
		defer wg.Wait()
	}
	if s.crds == nil {
		<-ctx.Done()
		return nil
	}
	return s.crds.run(ctx)
}

func (c *crdController) run(ctx context.Context) error {
	defer c.wg.Wait()
	for ctx.Err() == nil {
		if err := c.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			c.s.log.Warn("watching CustomResourceDefinitions failed; listing again", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-c.s.clock.After(crdRetryDelay):
		}
	}
	return nil
}

// listAndWatch lists the CRDs, syncs, then follows their changes until the
// watch ends.
func (c *crdController) listAndWatch(ctx context.Context) error {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.res.store.GetList(ctx, c.res.prefix(""), storage.ListOptions{Recursive: true}, list); err != nil {
		return err
	}
	c.mu.Lock()
	seen := map[string]*apiextensions.CRD{}
	for i := range list.Items {
		seen[list.Items[i].Name] = &list.Items[i]
	}
	c.crds = seen
	c.mu.Unlock()
	c.sync(ctx)
	w, err := c.res.store.Watch(ctx, c.res.prefix(""), storage.ListOptions{Recursive: true, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch closed")
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch: %s", errorMessage(ev.Object))
			}
			crd, ok := ev.Object.(*apiextensions.CRD)
			if !ok {
				continue
			}
			c.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(c.crds, crd.Name)
			} else {
				c.crds[crd.Name] = crd
			}
			c.mu.Unlock()
			c.sync(ctx)
		}
	}
}

func errorMessage(obj runtime.Object) string {
	if st, ok := obj.(*metav1.Status); ok {
		return st.Message
	}
	return fmt.Sprintf("%v", obj)
}

// sync writes the status every CRD should have, serves what is
// established and starts the cleanup of CRDs being deleted.
func (c *crdController) sync(ctx context.Context) {
	c.mu.Lock()
	crds := make([]*apiextensions.CRD, 0, len(c.crds))
	for _, crd := range c.crds {
		crds = append(crds, crd)
	}
	c.mu.Unlock()
	// The oldest CRD keeps a contested name, whatever the order of events.
	slices.SortFunc(crds, func(a, b *apiextensions.CRD) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	// Decide every CRD's status first, serve by it, then store it: once a
	// client can see a CRD Established, its objects are served already.
	// A CRD keeps the names it was granted: each is decided against the
	// names every other CRD holds, stored or granted in this pass.
	granted := slices.Clone(crds)
	type statusWrite struct {
		crd   *apiextensions.CRD
		names apiextensionsv1.CustomResourceDefinitionNames
		conds []apiextensionsv1.CustomResourceDefinitionCondition
	}
	var writes []statusWrite
	for i, crd := range crds {
		want := crd.DeepCopy()
		names, conds := apiextensions.AcceptNames(crd, granted)
		want.Status.AcceptedNames = names
		now := metav1.NewTime(c.s.clock.Now())
		changed := !namesEqual(crd.Status.AcceptedNames, names)
		for _, cond := range conds {
			changed = apiextensions.SetCondition(want, cond, now) || changed
		}
		granted[i] = want
		if changed && crd.DeletionTimestamp == nil {
			writes = append(writes, statusWrite{crd, names, conds})
		}
	}
	c.publish(granted)
	for _, w := range writes {
		if err := c.writeStatus(ctx, w.crd.Name, w.crd.UID, w.names, w.conds); err != nil && ctx.Err() == nil {
			c.s.log.Warn("writing CustomResourceDefinition status failed", "name", w.crd.Name, "error", err)
		}
	}
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil && slices.Contains(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer) {
			c.startCleanup(ctx, crd)
		}
	}
}

func namesEqual(a, b apiextensionsv1.CustomResourceDefinitionNames) bool {
	return a.Plural == b.Plural && a.Singular == b.Singular && a.Kind == b.Kind && a.ListKind == b.ListKind &&
		slices.Equal(a.ShortNames, b.ShortNames) && slices.Equal(a.Categories, b.Categories)
}

// writeStatus stores names and conds in the status of the CRD name (of
// uid), re-deciding transition times against the state it finds.
func (c *crdController) writeStatus(ctx context.Context, name string, uid types.UID, names apiextensionsv1.CustomResourceDefinitionNames, conds []apiextensionsv1.CustomResourceDefinitionCondition) error {
	return c.updateCRD(ctx, name, uid, "status", func(crd *apiextensions.CRD) {
		crd.Status.AcceptedNames = names
		now := metav1.NewTime(c.s.clock.Now())
		for _, cond := range conds {
			apiextensions.SetCondition(crd, cond, now)
		}
	})
}

// errCRDReplaced aborts a write to a CRD deleted and created again.
var errCRDReplaced = errors.New("the CustomResourceDefinition was replaced")

// updateCRD applies change to the stored CRD name, through subresource
// ("" or "status"), as long as it is still the CRD of uid. A CRD gone or
// replaced is no error: its watch event brings the next sync.
func (c *crdController) updateCRD(ctx context.Context, name string, uid types.UID, subresource string, change func(*apiextensions.CRD)) error {
	q := &request{verb: "update", res: c.res, name: name, subresource: subresource}
	_, _, err := c.s.write(ctx, q, false, func(current runtime.Object) (runtime.Object, error) {
		crd := current.(*apiextensions.CRD).DeepCopy()
		if crd.UID != uid {
			return nil, errCRDReplaced
		}
		change(crd)
		return crd, nil
	})
	if apierrors.IsNotFound(err) || errors.Is(err, errCRDReplaced) {
		return nil
	}
	return err
}

// served reports whether a CRD's objects are served: once its names are
// accepted or it is established, as in kube-apiserver.
func served(crd *apiextensions.CRD) bool {
	return apiextensions.IsConditionTrue(crd, apiextensionsv1.NamesAccepted) || apiextensions.IsConditionTrue(crd, apiextensionsv1.Established)
}

// publish makes the server serve the served versions of crds and nothing
// else beyond the built-in resources.
func (c *crdController) publish(crds []*apiextensions.CRD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var custom []*resource
	live := map[types.UID]bool{}
	liveKeys := map[string]bool{}
	for _, crd := range crds {
		live[crd.UID] = true
		if !served(crd) {
			continue
		}
		sv, err := c.servingLocked(crd)
		if err != nil {
			c.s.log.Warn("cannot serve CustomResourceDefinition", "name", crd.Name, "error", err)
			continue
		}
		liveKeys[string(crd.UID)+"/"+crd.ResourceVersion] = true
		st, err := c.storeLocked(crd, sv.strategies[0])
		if err != nil {
			c.s.log.Warn("cannot serve CustomResourceDefinition", "name", crd.Name, "error", err)
			continue
		}
		gone, ok := c.gone[crd.UID]
		if !ok {
			gone = make(chan struct{})
			c.gone[crd.UID] = gone
		}
		terminating := apiextensions.IsConditionTrue(crd, apiextensionsv1.Terminating) || crd.DeletionTimestamp != nil
		for _, cr := range sv.strategies {
			store := st
			if !sv.conv.Trivial() && cr.Info().GVK.GroupVersion() != cr.StorageVersion() {
				store = &convertingStore{inner: st, conv: sv.conv, served: cr.Info().GVK.GroupVersion(), storage: cr.StorageVersion()}
			}
			res := newResource(cr, store)
			res.root = "/" + crd.Name
			res.custom = cr
			res.terminating = terminating
			res.gone = gone
			custom = append(custom, res)
		}
	}
	for uid, ch := range c.gone {
		if !live[uid] {
			close(ch)
			delete(c.gone, uid)
		}
	}
	for k := range c.serving {
		if !liveKeys[k] {
			delete(c.serving, k)
		}
	}
	set, err := newResourceSet(c.s.builtin, custom)
	if err != nil {
		// Two CRDs claiming one group and plural cannot both be accepted.
		c.s.log.Error("cannot publish custom resources", "error", err)
		return
	}
	c.s.served.Store(set)
}

// servingLocked returns what serves crd: the strategies of its served
// versions, the storage version's first, and its converter.
func (c *crdController) servingLocked(crd *apiextensions.CRD) (*crdServing, error) {
	key := string(crd.UID) + "/" + crd.ResourceVersion
	if sv, ok := c.serving[key]; ok {
		return sv, nil
	}
	conv, err := apiextensions.NewConverter(crd)
	if err != nil {
		return nil, err
	}
	sv := &crdServing{conv: conv}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		cr, err := apiextensions.NewCustomResource(crd, v.Name)
		if err != nil {
			return nil, err
		}
		sv.strategies = append(sv.strategies, cr)
	}
	if len(sv.strategies) == 0 {
		return nil, errors.New("no version is served")
	}
	c.serving[key] = sv
	return sv, nil
}

// storeLocked returns the store of crd's objects, made on first use and
// again when the storage version changes.
func (c *crdController) storeLocked(crd *apiextensions.CRD, cr *apiextensions.CustomResource) (storage.Interface, error) {
	sv := cr.StorageVersion()
	if st, ok := c.stores[crd.Name]; ok && st.storage == sv {
		return st.store, nil
	}
	store, err := c.s.cfg.Backend.Storage(storage.ResourceConfig{
		Codec:       storageVersionCodec{inner: c.s.cfg.Codec, gv: sv},
		NewFunc:     cr.New,
		NewListFunc: cr.NewList,
	})
	if err != nil {
		return nil, err
	}
	c.stores[crd.Name] = &crdStore{storage: sv, store: store}
	return store, nil
}

// storageVersionCodec stores custom resources in their CRD's storage
// version, whatever version they were written in (conversion strategy
// None: only apiVersion changes).
type storageVersionCodec struct {
	inner storage.Codec
	gv    schema.GroupVersion
}

func (sc storageVersionCodec) Encode(obj runtime.Object) ([]byte, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		obj = withAPIVersion(u, sc.gv)
	}
	return sc.inner.Encode(obj)
}

func (sc storageVersionCodec) Decode(data []byte, into runtime.Object) error {
	return sc.inner.Decode(data, into)
}

// startCleanup deletes the objects of a CRD being deleted, then removes
// its cleanup finalizer, in a goroutine of its own.
func (c *crdController) startCleanup(ctx context.Context, crd *apiextensions.CRD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cleaning[crd.Name] {
		return
	}
	c.cleaning[crd.Name] = true
	c.wg.Go(func() {
		defer func() {
			c.mu.Lock()
			delete(c.cleaning, crd.Name)
			c.mu.Unlock()
		}()
		if err := c.cleanup(ctx, crd); err != nil && ctx.Err() == nil {
			c.s.log.Warn("deleting the custom resources of a CustomResourceDefinition failed", "name", crd.Name, "error", err)
		}
	})
}

func (c *crdController) cleanup(ctx context.Context, crd *apiextensions.CRD) error {
	c.setTerminating(ctx, crd, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
	res := c.storageResource(crd.Name)
	for res != nil {
		list := res.strategy.NewList()
		if err := res.store.GetList(ctx, res.prefix(""), storage.ListOptions{Recursive: true}, list); err != nil {
			return err
		}
		items := list.(*unstructured.UnstructuredList).Items
		if len(items) == 0 {
			break
		}
		var failed []string
		issued := false
		for i := range items {
			u := &items[i]
			if u.GetDeletionTimestamp() != nil {
				continue // marked already: its finalizers decide
			}
			issued = true
			if _, _, err := c.s.deleteObject(ctx, res, u.GetNamespace(), u.GetName(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				failed = append(failed, err.Error())
			}
		}
		if len(failed) > 0 {
			c.setTerminating(ctx, crd, "InstanceDeletionFailed", "could not issue all deletes: "+failed[0])
		} else if issued {
			continue // look again at once: most objects go on delete
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.s.clock.After(crdRetryDelay):
		}
	}
	c.setTerminating(ctx, crd, "InstanceDeletionCompleted", "removed all instances")
	return c.updateCRD(ctx, crd.Name, crd.UID, "", func(cur *apiextensions.CRD) {
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == apiextensionsv1.CustomResourceCleanupFinalizer })
	})
}

// storageResource returns what serves the storage version of a CRD (or
// any served version: they share the store), nil when none is served.
func (c *crdController) storageResource(name string) *resource {
	var found *resource
	for _, res := range c.s.served.Load().byGVR {
		if res.custom != nil && res.custom.CRD().Name == name {
			if found == nil || res.info.GVK.GroupVersion() == res.custom.StorageVersion() {
				found = res
			}
		}
	}
	return found
}

// setTerminating writes the CRD's Terminating condition.
func (c *crdController) setTerminating(ctx context.Context, crd *apiextensions.CRD, reason, message string) {
	err := c.updateCRD(ctx, crd.Name, crd.UID, "status", func(cur *apiextensions.CRD) {
		apiextensions.SetCondition(cur, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: message,
		}, metav1.NewTime(c.s.clock.Now()))
	})
	if err != nil && ctx.Err() == nil {
		c.s.log.Warn("writing CustomResourceDefinition status failed", "name", crd.Name, "error", err)
	}
}

package admissiontest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

var _ admission.Source = (*Source)(nil)

// Source is an in-memory admission.Source: a store of objects and a cache
// in front of it. Get and List read the cache and return objects shared
// with it, which callers must not change, as the server's cache does;
// Fetch reads the store and returns a copy the caller owns.
//
// Objects enter both the store and the cache (Add, Set), or the store
// alone (AddUncached, or anything while SetLagging is on): an object
// created or changed that the cache has not caught up with yet.
//
// The zero Source is empty and ready to use. It is safe for concurrent
// use; nothing it does blocks.
type Source struct {
	mu sync.Mutex
	// rv is the last resourceVersion the store assigned; every write
	// takes the next.
	rv uint64
	// store and cache hold objects by resource, namespace and name. An
	// object in either is never changed, only replaced, so both may hold
	// the same one.
	store map[schema.GroupVersionResource]objects
	cache map[schema.GroupVersionResource]objects
	// revs is the cache's revision of each resource, bumped at every
	// change of its objects in the cache.
	revs map[schema.GroupVersionResource]uint64
	// lists memoizes List's answers by resource and namespace ("\x00"
	// for all) until the cache's objects of the resource change.
	lists   map[schema.GroupVersionResource]map[string][]runtime.Object
	lagging bool
	listErr error
	fetches int
	updates []runtime.Object
}

// objects are one resource's objects by namespace, then name.
type objects map[string]map[string]runtime.Object

// Add stores copies of objs, replacing any of the same namespace and name,
// each with a new resourceVersion (what objs carry is ignored, as a store
// assigns its own). The cache sees them at once unless SetLagging is on.
func (s *Source) Add(gvr schema.GroupVersionResource, objs ...runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		s.putLocked(gvr, s.stampLocked(o), !s.lagging)
	}
	if !s.lagging {
		s.changedLocked(gvr)
	}
}

// AddUncached stores copies of objs as Add does, but only in the store:
// Fetch finds them, Get and List do not (or still see the older version),
// as when the cache has not caught up with a write.
func (s *Source) AddUncached(gvr schema.GroupVersionResource, objs ...runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		s.putLocked(gvr, s.stampLocked(o), false)
	}
}

// Set replaces all objects of gvr with copies of objs (none removes them
// all), in the store and, unless SetLagging is on, the cache.
func (s *Source) Set(gvr schema.GroupVersionResource, objs ...runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.store, gvr)
	if !s.lagging {
		delete(s.cache, gvr)
	}
	for _, o := range objs {
		s.putLocked(gvr, s.stampLocked(o), !s.lagging)
	}
	if !s.lagging {
		s.changedLocked(gvr)
	}
}

// SetLagging stops the cache from following the store (on), so that
// Add, Set and UpdateStatus reach only the store while Get, List and
// List's revision keep showing what the cache had: a server whose cache
// is behind, or another server's writes. Turning it off lets the cache
// catch up with the store at once.
func (s *Source) SetLagging(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lagging = on
	if on {
		return
	}
	for gvr := range s.cache {
		if _, ok := s.store[gvr]; !ok {
			delete(s.cache, gvr)
			s.changedLocked(gvr)
		}
	}
	for gvr, objs := range s.store {
		c := objects{}
		for ns, byName := range objs {
			c[ns] = maps.Clone(byName)
		}
		if s.cache == nil {
			s.cache = map[schema.GroupVersionResource]objects{}
		}
		s.cache[gvr] = c
		s.changedLocked(gvr)
	}
}

// SetListError makes List fail with err (nil lets it succeed again), as
// when the cache cannot be read.
func (s *Source) SetListError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listErr = err
}

// Fetches returns how many times Fetch was called.
func (s *Source) Fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// Updates returns the objects UpdateStatus stored, in order, as they were
// stored; they are shared and must not be changed.
func (s *Source) Updates() []runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updates)
}

// Get returns the cache's object, or a NotFound error.
func (s *Source) Get(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.cache[gvr][namespace][name]; o != nil {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// List returns the cache's objects of gvr in namespace ("" for all),
// sorted by namespace and name, and the cache's revision of gvr (0 until
// the cache first holds or drops objects of gvr). The slice is shared
// too: callers must not change it.
func (s *Source) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, 0, s.listErr
	}
	key := namespace
	if namespace == "" {
		key = "\x00"
	}
	if l, ok := s.lists[gvr][key]; ok {
		return l, s.revs[gvr], nil
	}
	l := []runtime.Object{}
	for ns, byName := range s.cache[gvr] {
		if namespace != "" && ns != namespace {
			continue
		}
		for _, o := range byName {
			l = append(l, o)
		}
	}
	slices.SortFunc(l, func(a, b runtime.Object) int {
		ma, mb := accessor(a), accessor(b)
		if c := strings.Compare(ma.GetNamespace(), mb.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(ma.GetName(), mb.GetName())
	})
	if s.lists == nil {
		s.lists = map[schema.GroupVersionResource]map[string][]runtime.Object{}
	}
	if s.lists[gvr] == nil {
		s.lists[gvr] = map[string][]runtime.Object{}
	}
	s.lists[gvr][key] = l
	return l, s.revs[gvr], nil
}

// Fetch returns a copy of the store's object, or a NotFound error; it is
// counted (Fetches).
func (s *Source) Fetch(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	if o := s.store[gvr][namespace][name]; o != nil {
		return o.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// UpdateStatus stores obj's status on the stored object of its namespace
// and name, with a new resourceVersion, and returns a copy of the result;
// the rest of obj is ignored, as the status subresource does. obj must
// carry the stored resourceVersion (or none, an unconditional update):
// otherwise the answer is a Conflict, as the store gives. A missing object
// is NotFound; an object without a status, or of another type than the
// stored one, is BadRequest.
func (s *Source) UpdateStatus(_ context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.store[gvr][m.GetNamespace()][m.GetName()]
	if cur == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), m.GetName())
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != accessor(cur).GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(), errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	next := cur.DeepCopyObject()
	if err := copyStatus(next, obj.DeepCopyObject()); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	next = s.stampLocked(next)
	s.putLocked(gvr, next, !s.lagging)
	if !s.lagging {
		s.changedLocked(gvr)
	}
	s.updates = append(s.updates, next)
	return next.DeepCopyObject(), nil
}

// stampLocked returns a copy of o with the store's next resourceVersion.
func (s *Source) stampLocked(o runtime.Object) runtime.Object {
	o = o.DeepCopyObject()
	s.rv++
	accessor(o).SetResourceVersion(strconv.FormatUint(s.rv, 10))
	return o
}

// putLocked puts o into the store and, if cached, the cache.
func (s *Source) putLocked(gvr schema.GroupVersionResource, o runtime.Object, cached bool) {
	if s.store == nil {
		s.store = map[schema.GroupVersionResource]objects{}
	}
	put(s.store, gvr, o)
	if cached {
		if s.cache == nil {
			s.cache = map[schema.GroupVersionResource]objects{}
		}
		put(s.cache, gvr, o)
	}
}

// changedLocked records that the cache's objects of gvr changed.
func (s *Source) changedLocked(gvr schema.GroupVersionResource) {
	if s.revs == nil {
		s.revs = map[schema.GroupVersionResource]uint64{}
	}
	s.revs[gvr]++
	delete(s.lists, gvr)
}

func put(m map[schema.GroupVersionResource]objects, gvr schema.GroupVersionResource, o runtime.Object) {
	a := accessor(o)
	if m[gvr] == nil {
		m[gvr] = objects{}
	}
	if m[gvr][a.GetNamespace()] == nil {
		m[gvr][a.GetNamespace()] = map[string]runtime.Object{}
	}
	m[gvr][a.GetNamespace()][a.GetName()] = o
}

// accessor returns o's metadata; objects without any are a test's bug.
func accessor(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(fmt.Sprintf("admissiontest: %T has no object metadata: %v", o, err))
	}
	return m
}

// copyStatus sets dst's status to src's; both are the same type.
func copyStatus(dst, src runtime.Object) error {
	if reflect.TypeOf(dst) != reflect.TypeOf(src) {
		return fmt.Errorf("status of a %T written to a %T", src, dst)
	}
	if u, ok := dst.(*unstructured.Unstructured); ok {
		status, found := src.(*unstructured.Unstructured).Object["status"]
		if !found {
			delete(u.Object, "status")
		} else {
			u.Object["status"] = status
		}
		return nil
	}
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Kind() != reflect.Pointer || dv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%T has no status", dst)
	}
	df, sf := dv.Elem().FieldByName("Status"), sv.Elem().FieldByName("Status")
	if !df.IsValid() || !df.CanSet() {
		return fmt.Errorf("%T has no status", dst)
	}
	df.Set(sf)
	return nil
}

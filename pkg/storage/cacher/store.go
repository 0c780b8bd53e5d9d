package cacher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// store is the cached storage.Interface of one resource type: writes and
// the reads a cache cannot answer go to inner.
type store struct {
	c     *Cacher
	inner storage.Interface
	rc    storage.ResourceConfig

	mu sync.Mutex
	// caches holds one cache per root ("/pods"), made on first use.
	caches map[string]*cache
}

var _ storage.Interface = (*store)(nil)

// rootOf returns the root a key's cache covers: its first path segment.
// ok is false for keys no cache covers (and for malformed keys, which
// the backend then rejects with its own error).
func rootOf(key string, recursive bool) (root string, ok bool) {
	if !strings.HasPrefix(key, "/") {
		return "", false
	}
	rest := key[1:]
	if recursive {
		rest = strings.TrimSuffix(rest, "/")
	}
	segs := strings.Split(rest, "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." || strings.IndexByte(seg, 0) >= 0 {
			return "", false
		}
	}
	if len(segs) == 1 && !recursive {
		// An object at a root itself is no resource's object.
		return "", false
	}
	return "/" + segs[0], true
}

// cacheFor returns the cache covering key, starting it on first use.
func (s *store) cacheFor(key string, recursive bool) (*cache, bool) {
	root, ok := rootOf(key, recursive)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.caches[root]; ok {
		return c, true
	}
	c := newCache(s, root)
	if !s.c.spawn(func() { c.run(s.c.ctx) }) {
		return nil, false
	}
	s.caches[root] = c
	s.c.addCache(c)
	return c, true
}

// Create implements storage.Interface by writing to the backend.
func (s *store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	err := s.inner.Create(ctx, key, obj, out)
	s.noteWrite(key, out, err)
	return err
}

// GuaranteedUpdate implements storage.Interface by writing to the backend.
// When the backend is a storage.CachedUpdater and the cache holds the key,
// the update starts from the cached object instead of a read.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	var err error
	if cu, ok := s.inner.(storage.CachedUpdater); ok {
		if cached := s.cachedObject(key); cached != nil {
			err = cu.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, precond, tryUpdate, cached)
			s.noteWrite(key, dest, err)
			return err
		}
	}
	err = s.inner.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, precond, tryUpdate)
	s.noteWrite(key, dest, err)
	return err
}

// cachedObject returns the object a running, ready cache holds at key, or
// nil. It starts no cache. The object is shared: callers must not change it.
func (s *store) cachedObject(key string) runtime.Object {
	c := s.runningCache(key)
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil
	}
	e, found := c.state.Get(&entry{key: key})
	if !found {
		return nil
	}
	return e.obj
}

// Delete implements storage.Interface by writing to the backend.
func (s *store) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	err := s.inner.Delete(ctx, key, out, precond, validate)
	s.noteWrite(key, out, err)
	return err
}

// noteWrite tells the cache of key's root that a write through this
// Cacher got revision out's resourceVersion, so that its reads at "0"
// wait for it: a client reads its own writes even from the cache.
func (s *store) noteWrite(key string, out runtime.Object, err error) {
	if err != nil {
		return
	}
	c := s.runningCache(key)
	if c == nil {
		// A cache started later lists after the write.
		return
	}
	if rev, err := storage.ObjectResourceVersion(out); err == nil {
		c.noteWrite(rev)
	}
}

// runningCache returns the cache of key's root if one was started, else
// nil; unlike cacheFor, it starts none.
func (s *store) runningCache(key string) *cache {
	root, ok := rootOf(key, false)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caches[root]
}

// Get implements storage.Interface. resourceVersion "" reads the backend;
// "0" and N read the cache once it is at least as new as N.
func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if opts.ResourceVersion == "" {
		return s.inner.Get(ctx, key, opts, out)
	}
	rv, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
	if err != nil {
		return s.inner.Get(ctx, key, opts, out)
	}
	c, ok := s.cacheFor(key, false)
	if !ok {
		return s.inner.Get(ctx, key, opts, out)
	}
	if err := c.waitAtLeast(ctx, rv); err != nil {
		if errors.Is(err, errNotFresh) {
			return s.inner.Get(ctx, key, opts, out)
		}
		return err
	}
	c.mu.RLock()
	e, found := c.state.Get(&entry{key: key})
	c.mu.RUnlock()
	if !found {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
	}
	return copyInto(out, e.obj)
}

// GetList implements storage.Interface. Lists at "", "0" and not older
// than N are served by the cache ("" once it caught up with the backend);
// exact revisions and continued lists read the backend's snapshot.
func (s *store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	pred := opts.Predicate
	// A malformed request fails here as the backend would fail it, rather
	// than being served by the cache.
	rv, err := storage.ValidateListOptions(key, opts)
	if err != nil {
		return err
	}
	switch {
	case pred.Continue != "",
		opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact,
		opts.ResourceVersionMatch == "" && pred.Limit > 0 && rv > 0,
		opts.ResourceVersionMatch != "" && opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan:
		return s.inner.GetList(ctx, key, opts, listObj)
	}
	c, ok := s.cacheFor(key, opts.Recursive)
	if !ok {
		return s.inner.GetList(ctx, key, opts, listObj)
	}
	if opts.ResourceVersion == "" {
		err = c.waitConsistent(ctx)
	} else {
		err = c.waitAtLeast(ctx, rv)
	}
	if errors.Is(err, errNotFresh) {
		return s.inner.GetList(ctx, key, opts, listObj)
	}
	if err != nil {
		return err
	}
	return s.listFromCache(c, key, opts, listObj)
}

func (s *store) listFromCache(c *cache, key string, opts storage.ListOptions, listObj runtime.Object) error {
	pred := opts.Predicate
	limit := pred.Limit
	if !opts.Recursive {
		limit = 0
	}
	var (
		items     []runtime.Object
		lastKey   string
		hasMore   bool
		remaining int64
		matchErr  error
	)
	c.mu.RLock()
	rev := c.rev
	visit := func(e *entry) bool {
		if hasMore {
			remaining++
			return pred.Empty()
		}
		if limit > 0 && int64(len(items)) >= limit {
			hasMore = true
			remaining++
			return pred.Empty()
		}
		ok, err := pred.Matches(e.obj)
		if err != nil {
			matchErr = err
			return false
		}
		lastKey = e.key
		if ok {
			items = append(items, e.obj)
		}
		return true
	}
	if opts.Recursive {
		prefix := key
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		c.state.AscendRange(&entry{key: prefix}, &entry{key: storage.PrefixEnd(prefix)}, visit)
	} else if e, ok := c.state.Get(&entry{key: key}); ok {
		visit(e)
	}
	c.mu.RUnlock()
	if matchErr != nil {
		return matchErr
	}
	copies := make([]runtime.Object, len(items))
	for i, obj := range items {
		copies[i] = obj.DeepCopyObject()
	}
	if err := meta.SetList(listObj, copies); err != nil {
		return err
	}
	lm, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	lm.SetResourceVersion(strconv.FormatUint(rev, 10))
	lm.SetContinue("")
	lm.SetRemainingItemCount(nil)
	if hasMore {
		prefix := key
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		token, err := storage.EncodeContinue(lastKey+"\x00", prefix, rev)
		if err != nil {
			return err
		}
		lm.SetContinue(token)
		if pred.Empty() {
			lm.SetRemainingItemCount(&remaining)
		}
	}
	return nil
}

// copyInto sets out to a deep copy of obj.
func copyInto(out, obj runtime.Object) error {
	cp := obj.DeepCopyObject()
	ov, cv := reflect.ValueOf(out), reflect.ValueOf(cp)
	if ov.Kind() != reflect.Pointer || ov.IsNil() || ov.Type() != cv.Type() {
		return fmt.Errorf("cacher: cannot decode %T into %T", obj, out)
	}
	ov.Elem().Set(cv.Elem())
	return nil
}

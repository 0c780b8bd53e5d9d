package memory

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// store is the storage.Interface of one resource type on a Backend.
type store struct {
	b           *Backend
	codec       storage.Codec
	newFunc     func() runtime.Object
	newListFunc func() runtime.Object
	// objType is the type newFunc returns when it is a pointer, else nil.
	objType reflect.Type
	// decimalRevs says the codec writes an object's resourceVersion as its
	// decimal digits and the rest of the object the same at any revision.
	decimalRevs bool
	// deepCopyInto is objType's DeepCopyInto(out objType) method, when it
	// has one: func(in, out objType).
	deepCopyInto reflect.Value
}

var _ storage.Interface = (*store)(nil)

// decode decodes the stored bytes of key into out. The bytes carry the
// object's resourceVersion.
func (s *store) decode(key string, data []byte, out runtime.Object) error {
	if err := s.codec.Decode(data, out); err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, fmt.Sprintf("decode stored object: %v", err))
	}
	return nil
}

// read returns the version c decoded by s. When shared is true obj is the
// record's cached object and read only; otherwise obj is a fresh decode the
// caller owns. With keep, a fresh decode of the key's newest version becomes
// the cache: reads keep what they decode, writes do not, so that only keys
// something reads hold a decoded object.
func (s *store) read(c kv, keep bool) (obj runtime.Object, shared bool, err error) {
	if c.rec != nil {
		if p := c.rec.cache.Load(); p != nil && p.rev == c.rev && p.owner == s {
			return p.obj, true, nil
		}
	}
	obj = s.newFunc()
	if err := s.decode(c.key, c.value, obj); err != nil {
		return nil, false, err
	}
	if keep && c.rec != nil && c.latest && s.remember(c.rec, c.rev, obj) {
		return obj, true, nil
	}
	return obj, false, nil
}

// remember makes obj, the version of rec at rev decoded by s, the record's
// cache unless the cache already holds a newer version. obj must not be
// changed afterwards when it returns true.
func (s *store) remember(rec *record, rev uint64, obj runtime.Object) bool {
	if !s.b.decodedCache {
		return false
	}
	for {
		p := rec.cache.Load()
		if p != nil && p.rev > rev {
			return false
		}
		if rec.cache.CompareAndSwap(p, &cached{owner: s, rev: rev, obj: obj}) {
			return true
		}
	}
}

// private returns the version c decoded by s as an object the caller owns,
// and, when it was copied from the cache, the cached object (read only). It
// does not fill the cache.
func (s *store) private(c kv) (obj, shared runtime.Object, err error) {
	obj, isShared, err := s.read(c, false)
	if err != nil {
		return nil, nil, err
	}
	if isShared {
		return obj.DeepCopyObject(), obj, nil
	}
	return obj, nil, nil
}

// readInto replaces out with the version c decoded by s: a deep copy of the
// cached object when out is of the store's type, a decode otherwise.
func (s *store) readInto(c kv, out runtime.Object) error {
	if !s.fits(out) {
		return s.decode(c.key, c.value, out)
	}
	obj, shared, err := s.read(c, true)
	if err != nil {
		return err
	}
	if !shared {
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(obj).Elem())
		return nil
	}
	if !s.copyTo(obj, out) {
		return s.decode(c.key, c.value, out)
	}
	return nil
}

// copyTo replaces dst with a deep copy of src, both of the store's type,
// and reports whether it could.
func (s *store) copyTo(src, dst runtime.Object) bool {
	if !s.fits(src) || !s.fits(dst) {
		return false
	}
	if s.deepCopyInto.IsValid() {
		// DeepCopyInto overwrites all of dst, without the allocation of
		// the top-level object DeepCopyObject would make.
		s.deepCopyInto.Call([]reflect.Value{reflect.ValueOf(src), reflect.ValueOf(dst)})
		return true
	}
	cp := src.DeepCopyObject()
	if !s.fits(cp) {
		return false
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(cp).Elem())
	return true
}

// onlyRevDiffers reports whether a and b are equal but for the decimal
// digits of ra at one offset of a where b has those of rb, as two JSON
// encodings of the same object at revisions ra and rb are. When the
// encodings of one object at ra and rb are a and b, it returns true.
func onlyRevDiffers(a []byte, ra uint64, b []byte, rb uint64) bool {
	var abuf, bbuf [20]byte
	da := strconv.AppendUint(abuf[:0], ra, 10)
	db := strconv.AppendUint(bbuf[:0], rb, 10)
	if len(a)-len(da) != len(b)-len(db) {
		return false
	}
	// The first difference lies within the digits, after those the two
	// revisions have in common.
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	for start := i; start >= 0 && start >= i-len(da); start-- {
		if bytes.HasPrefix(a[start:], da) && bytes.HasPrefix(b[start:], db) &&
			bytes.Equal(a[start+len(da):], b[start+len(db):]) {
			return true
		}
	}
	return false
}

// fits reports whether obj is a non-nil pointer of the store's object type,
// which a cached object may be copied into.
func (s *store) fits(obj runtime.Object) bool {
	return s.objType != nil && reflect.TypeOf(obj) == s.objType && !reflect.ValueOf(obj).IsNil()
}

// keep makes a copy of out, the version of rec at rev decoded by s, the
// record's cache and returns it (read only from here on); nil when it
// cannot.
func (s *store) keep(rec *record, rev uint64, out runtime.Object) runtime.Object {
	if !s.fits(out) {
		return nil
	}
	if cp := out.DeepCopyObject(); s.fits(cp) && s.remember(rec, rev, cp) {
		return cp
	}
	return nil
}

// encodeAt encodes obj with its resourceVersion set to rev. obj is changed.
func (s *store) encodeAt(key string, obj runtime.Object, rev uint64) ([]byte, error) {
	if err := storage.SetObjectResourceVersion(obj, rev); err != nil {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, key, 0, err.Error())
	}
	data, err := s.codec.Encode(obj)
	if err != nil {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, key, 0, fmt.Sprintf("encode: %v", err))
	}
	return data, nil
}

// Get implements storage.Interface.
func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	minRV, err := parseRV(key, opts.ResourceVersion)
	if err != nil {
		return err
	}
	s.b.mu.RLock()
	if s.b.closed {
		s.b.mu.RUnlock()
		return ErrClosed
	}
	c := s.b.currentKVLocked(key)
	cur := s.b.rev
	s.b.mu.RUnlock()
	if minRV > cur {
		return tooLarge(key, minRV, cur)
	}
	if c.value == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
	}
	return s.readInto(c, out)
}

// Create implements storage.Interface.
func (s *store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, err.Error())
	}
	if m.GetResourceVersion() != "" {
		return storage.NewError(storage.ErrCodeInvalidRequest, key, 0, "resourceVersion should not be set on objects to be created")
	}
	// The caller's object is not ours to stamp with a revision.
	obj = obj.DeepCopyObject()
	guess := s.b.revNow.Load() + 1
	data, err := s.encodeAt(key, obj, guess)
	if err != nil {
		return err
	}
	b := s.b
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if cur, _ := b.currentLocked(key); cur != nil {
		b.mu.Unlock()
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "")
	}
	if b.rev+1 != guess {
		if data, err = s.encodeAt(key, obj, b.rev+1); err != nil {
			b.mu.Unlock()
			return err
		}
	}
	b.putLocked(key, data, nil)
	b.mu.Unlock()
	return s.decode(key, data, out)
}

// GuaranteedUpdate implements storage.Interface.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	b := s.b
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.mu.RLock()
		if b.closed {
			b.mu.RUnlock()
			return ErrClosed
		}
		c := b.currentKVLocked(key)
		curData, curRev := c.value, c.rev
		b.mu.RUnlock()

		cur := s.newFunc()
		var prevObj runtime.Object // the cached current object, when the key is decoded
		if curData != nil {
			var err error
			if cur, prevObj, err = s.private(c); err != nil {
				return err
			}
		} else if !ignoreNotFound {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
		}
		if err := precond.Check(key, cur); err != nil {
			return err
		}
		updated, err := tryUpdate(cur)
		if err != nil {
			return err
		}
		if updated == nil || reflect.ValueOf(updated).IsNil() {
			return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "update function returned no object")
		}
		guess := b.revNow.Load() + 1
		data, err := s.encodeAt(key, updated, guess)
		if err != nil {
			return err
		}
		// Compare as stored, with the revision the object was read at,
		// whatever resourceVersion the update function left on it. JSON
		// encodings at two revisions differ only in the revision's digits,
		// so unless the encoding at guess could be curData but for them,
		// the update changes something and needs no second encoding.
		if curData != nil && (!s.decimalRevs || onlyRevDiffers(data, guess, curData, curRev)) {
			same, err := s.encodeAt(key, updated, curRev)
			if err != nil {
				return err
			}
			if bytes.Equal(same, curData) {
				if prevObj != nil {
					return s.readInto(c, dest)
				}
				return s.decode(key, curData, dest)
			}
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if _, rev := b.currentLocked(key); rev != curRev {
			// Another write got in first: retry from a fresh read.
			b.mu.Unlock()
			continue
		}
		if b.rev+1 != guess {
			if data, err = s.encodeAt(key, updated, b.rev+1); err != nil {
				b.mu.Unlock()
				return err
			}
		}
		rev := b.putLocked(key, data, curData)
		rec, ev := b.items[key], b.all.log[len(b.all.log)-1]
		b.mu.Unlock()
		if err := s.decode(key, data, dest); err != nil {
			return err
		}
		if prevObj != nil {
			// The key stays decoded, and its watchers get this change
			// decoded without decoding either state again.
			if obj := s.keep(rec, rev, dest); obj != nil {
				ev.setDecoded(&decoded{owner: s, obj: obj, prev: prevObj})
			}
		}
		return nil
	}
}

// Delete implements storage.Interface. out receives the last state of the
// object, with the revision of its deletion as resourceVersion.
func (s *store) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	b := s.b
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.mu.RLock()
		if b.closed {
			b.mu.RUnlock()
			return ErrClosed
		}
		c := b.currentKVLocked(key)
		curData, curRev := c.value, c.rev
		b.mu.RUnlock()
		if curData == nil {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
		}
		obj, shared, err := s.read(c, false)
		if err != nil {
			return err
		}
		cur := obj
		if shared {
			cur = obj.DeepCopyObject()
		}
		if err := precond.Check(key, cur); err != nil {
			return err
		}
		if validate != nil {
			if err := validate(ctx, cur); err != nil {
				return err
			}
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if _, rev := b.currentLocked(key); rev != curRev {
			b.mu.Unlock()
			continue
		}
		rev := b.putLocked(key, nil, curData)
		ev := b.all.log[len(b.all.log)-1]
		b.mu.Unlock()
		if shared {
			ev.setDecoded(&decoded{owner: s, prev: obj})
		}
		if shared && s.fits(out) {
			// obj is still the deleted state; cur may have been changed by validate.
			if cp := obj.DeepCopyObject(); s.fits(cp) {
				reflect.ValueOf(out).Elem().Set(reflect.ValueOf(cp).Elem())
				return storage.SetObjectResourceVersion(out, rev)
			}
		}
		if err := s.decode(key, curData, out); err != nil {
			return err
		}
		return storage.SetObjectResourceVersion(out, rev)
	}
}

// GetList implements storage.Interface.
func (s *store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if opts.Recursive {
		if err := storage.ValidatePrefix(key); err != nil {
			return err
		}
	} else if err := storage.ValidateKey(key); err != nil {
		return err
	}
	pred := opts.Predicate
	rv, err := storage.ValidateListOptions(key, opts)
	if err != nil {
		return err
	}
	keyPrefix := storage.KeyPrefix(key, opts.Recursive)
	from := keyPrefix

	// snapshot is the revision to read; 0 means the newest.
	var snapshot uint64
	continuing := pred.Continue != ""
	switch {
	case continuing:
		if !opts.Recursive {
			return storage.NewError(storage.ErrCodeInvalidContinue, key, 0, "continue is only allowed on a recursive list")
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return storage.NewError(storage.ErrCodeInvalidContinue, key, 0, "specifying resource version is not allowed when using continue")
		}
		if from, snapshot, err = storage.DecodeContinue(pred.Continue, keyPrefix); err != nil {
			return err
		}
	default:
		switch opts.ResourceVersionMatch {
		case metav1.ResourceVersionMatchExact:
			snapshot = rv
		case metav1.ResourceVersionMatchNotOlderThan:
		case "":
			// A paged list at a resourceVersion reads that snapshot, as
			// Kubernetes lists with limit always have.
			if pred.Limit > 0 && rv > 0 {
				snapshot = rv
			}
		}
	}

	// Read the candidates under the lock; decode and filter outside it.
	// Without a filter a page needs limit+1 keys (one to know there are
	// more); with one, all of them may be needed.
	max := 0
	if pred.Limit > 0 && pred.Empty() {
		max = int(pred.Limit) + 1
	}
	b := s.b
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ErrClosed
	}
	cur := b.rev
	switch {
	case snapshot == 0:
		if rv > cur {
			b.mu.RUnlock()
			return tooLarge(key, rv, cur)
		}
		snapshot = cur
	case snapshot > cur:
		b.mu.RUnlock()
		return tooLarge(key, snapshot, cur)
	case snapshot < b.minRev:
		minRev := b.minRev
		b.mu.RUnlock()
		if continuing {
			return storage.NewError(storage.ErrCodeExpired, key, snapshot, fmt.Sprintf(
				"the provided continue parameter is too old to display a consistent list result (oldest readable revision %d); start a new list without the continue parameter", minRev))
		}
		return storage.NewError(storage.ErrCodeExpired, key, snapshot, fmt.Sprintf("the requested resource version has been compacted; the oldest readable revision is %d", minRev))
	}
	var kvs []kv
	if opts.Recursive {
		kvs = b.rangeLocked(from, storage.PrefixEnd(keyPrefix), snapshot, max, nil)
	} else if rec := b.items[key]; rec != nil {
		if v := rec.at(snapshot); v.value != nil {
			kvs = []kv{{key: key, value: v.value, rec: rec, rev: v.rev, latest: v.rev == rec.latest().rev}}
		}
	}
	b.mu.RUnlock()

	items, err := newItems(listObj, s.newFunc)
	if err != nil {
		return err
	}
	limit := int(pred.Limit)
	if !opts.Recursive {
		limit = 0
	}
	n := len(kvs)
	if limit > 0 && n > limit {
		n = limit
	}
	items.grow(n)
	var lastKey string
	more := false
	for _, c := range kvs {
		if limit > 0 && items.len() == limit && pred.Empty() {
			// A further key means another page.
			more = true
			break
		}
		obj, shared, err := s.read(c, true)
		if err != nil {
			return err
		}
		ok, err := pred.Matches(obj)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if limit > 0 && items.len() == limit {
			// A further match means another page.
			more = true
			break
		}
		switch {
		case !shared && items.add(obj):
		case shared && s.copyTo(obj, items.next()):
		default:
			if shared {
				items.unnext()
			}
			if err := s.decode(c.key, c.value, items.next()); err != nil {
				return err
			}
		}
		lastKey = c.key
	}
	items.done()
	token := ""
	if more {
		if token, err = storage.EncodeContinue(lastKey+"\x00", keyPrefix, snapshot); err != nil {
			return err
		}
	}
	if err := storage.SetListResourceVersion(listObj, snapshot, token); err != nil {
		return err
	}
	if m, err := meta.ListAccessor(listObj); err == nil {
		m.SetRemainingItemCount(nil)
	}
	return nil
}

// parseRV parses a resourceVersion from a request about key.
func parseRV(key, rv string) (uint64, error) {
	n, err := storage.ParseResourceVersion(rv)
	if err != nil {
		if se, ok := err.(*storage.Error); ok {
			se.Key = key
		}
		return 0, err
	}
	return n, nil
}

// tooLarge is the error for a read that asks for a revision not yet written.
func tooLarge(key string, want, cur uint64) error {
	return storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, want,
		fmt.Sprintf("too large resource version: %d, current: %d", want, cur))
}

// itemSlice fills the Items slice of a list object in place, decoding
// straight into its elements.
type itemSlice struct {
	v       reflect.Value // the Items slice
	newFunc func() runtime.Object
	kind    reflect.Kind // of the element: Struct, Pointer or Interface
}

func newItems(listObj runtime.Object, newFunc func() runtime.Object) (*itemSlice, error) {
	ptr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, "", 0, fmt.Sprintf("list object %T: %v", listObj, err))
	}
	v := reflect.ValueOf(ptr).Elem()
	k := v.Type().Elem().Kind()
	if k != reflect.Struct && k != reflect.Pointer && k != reflect.Interface {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, "", 0, fmt.Sprintf("list object %T: unsupported item type %v", listObj, v.Type().Elem()))
	}
	return &itemSlice{v: v, newFunc: newFunc, kind: k}, nil
}

func (s *itemSlice) grow(n int) { s.v.Set(reflect.MakeSlice(s.v.Type(), 0, n)) }

func (s *itemSlice) len() int { return s.v.Len() }

// next appends a zero item and returns it to decode into.
func (s *itemSlice) next() runtime.Object {
	n := s.v.Len()
	if n < s.v.Cap() {
		s.v.SetLen(n + 1)
		s.v.Index(n).SetZero()
	} else {
		s.v.Set(reflect.Append(s.v, reflect.Zero(s.v.Type().Elem())))
	}
	e := s.v.Index(n)
	switch s.kind {
	case reflect.Struct:
		return e.Addr().Interface().(runtime.Object)
	case reflect.Pointer:
		e.Set(reflect.New(e.Type().Elem()))
		return e.Interface().(runtime.Object)
	default:
		obj := s.newFunc()
		e.Set(reflect.ValueOf(obj))
		return obj
	}
}

// unnext drops the item next returned last.
func (s *itemSlice) unnext() {
	n := s.v.Len() - 1
	s.v.Index(n).SetZero()
	s.v.SetLen(n)
}

// add appends obj, which the list then owns, and reports whether its type
// fits the list's items.
func (s *itemSlice) add(obj runtime.Object) bool {
	v := reflect.ValueOf(obj)
	et := s.v.Type().Elem()
	switch s.kind {
	case reflect.Struct:
		if v.Type() != reflect.PointerTo(et) || v.IsNil() {
			return false
		}
		v = v.Elem()
	default:
		if !v.Type().AssignableTo(et) {
			return false
		}
	}
	s.v.Set(reflect.Append(s.v, v))
	return true
}

// done leaves an empty, non-nil Items so that it encodes as [].
func (s *itemSlice) done() {
	if s.v.IsNil() {
		s.v.Set(reflect.MakeSlice(s.v.Type(), 0, 0))
	}
}

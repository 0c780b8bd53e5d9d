package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
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
}

var _ storage.Interface = (*store)(nil)

// maxListBatch caps how many keys one etcd range read of a filtered list
// fetches while it fills a page.
const maxListBatch = 10000

// etcdKey validates the key of one object and returns its etcd key.
func (s *store) etcdKey(key string) (string, error) {
	if err := storage.ValidateKey(key); err != nil {
		return "", err
	}
	return s.b.prefix + key, nil
}

// etcdPrefix validates the key of a list or watch and returns the etcd key
// it covers: the key itself, or with recursive every key below it.
func (s *store) etcdPrefix(key string, recursive bool) (string, error) {
	if recursive {
		if err := storage.ValidatePrefix(key); err != nil {
			return "", err
		}
	} else if err := storage.ValidateKey(key); err != nil {
		return "", err
	}
	return s.b.prefix + storage.KeyPrefix(key, recursive), nil
}

// decode decodes data into out and sets its resourceVersion to rev.
func (s *store) decode(key string, data []byte, rev int64, out runtime.Object) error {
	if err := s.codec.Decode(data, out); err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, uint64(rev), fmt.Sprintf("decode stored object: %v", err))
	}
	if err := setRV(out, rev); err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, uint64(rev), err.Error())
	}
	return nil
}

// encode encodes obj without its resourceVersion, which etcd keeps as the
// key's mod revision rather than in the value. obj is left unchanged.
func (s *store) encode(key string, obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, key, 0, err.Error())
	}
	if rv := m.GetResourceVersion(); rv != "" {
		m.SetResourceVersion("")
		defer m.SetResourceVersion(rv)
	}
	data, err := s.codec.Encode(obj)
	if err != nil {
		return nil, storage.NewError(storage.ErrCodeInvalidObj, key, 0, fmt.Sprintf("encode: %v", err))
	}
	return data, nil
}

func (s *store) closed() error {
	if s.b.ctx.Err() != nil {
		return errClosed
	}
	return nil
}

// Get implements storage.Interface.
func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if err := s.closed(); err != nil {
		return err
	}
	k, err := s.etcdKey(key)
	if err != nil {
		return err
	}
	minRV, err := parseRV(key, opts.ResourceVersion)
	if err != nil {
		return err
	}
	resp, err := s.b.client.Get(ctx, k)
	if err != nil {
		return etcdError(key, err)
	}
	if err := checkMinRV(key, minRV, resp.Header.Revision); err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
	}
	kv := resp.Kvs[0]
	return s.decode(key, kv.Value, kv.ModRevision, out)
}

// checkMinRV fails when a read at revision current cannot be as new as minRV.
func checkMinRV(key string, minRV uint64, current int64) error {
	if minRV > uint64(current) {
		return storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, minRV,
			fmt.Sprintf("too large resource version: %d, current: %d", minRV, current))
	}
	return nil
}

// Create implements storage.Interface.
func (s *store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	if err := s.closed(); err != nil {
		return err
	}
	k, err := s.etcdKey(key)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, err.Error())
	}
	if m.GetResourceVersion() != "" {
		return storage.NewError(storage.ErrCodeInvalidRequest, key, 0, "resourceVersion should not be set on objects to be created")
	}
	data, err := s.encode(key, obj)
	if err != nil {
		return err
	}
	resp, err := s.b.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(data))).
		Commit()
	if err != nil {
		return etcdError(key, err)
	}
	if !resp.Succeeded {
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "")
	}
	return s.decode(key, data, resp.Header.Revision, out)
}

// current is the state of a key as last read.
type current struct {
	obj  runtime.Object
	data []byte
	rev  int64 // mod revision; 0 when the key does not exist
}

// read reads the newest state of k.
func (s *store) read(ctx context.Context, key, k string) (*current, error) {
	resp, err := s.b.client.Get(ctx, k)
	if err != nil {
		return nil, etcdError(key, err)
	}
	return s.stateFrom(key, resp.Kvs)
}

// stateFrom decodes the state of a key from a range read of it.
func (s *store) stateFrom(key string, kvs []*mvccpb.KeyValue) (*current, error) {
	if len(kvs) == 0 {
		return &current{}, nil
	}
	kv := kvs[0]
	obj := s.newFunc()
	if err := s.decode(key, kv.Value, kv.ModRevision, obj); err != nil {
		return nil, err
	}
	return &current{obj: obj, data: kv.Value, rev: kv.ModRevision}, nil
}

// GuaranteedUpdate implements storage.Interface.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	return s.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, precond, tryUpdate, nil)
}

// GuaranteedUpdateFrom implements storage.CachedUpdater: it saves the
// read (a round trip to etcd and a decode) whenever the cache is current.
// A nil cached, or one without a usable resourceVersion, starts from a read.
func (s *store) GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	if err := s.closed(); err != nil {
		return err
	}
	k, err := s.etcdKey(key)
	if err != nil {
		return err
	}
	var cur *current
	if cached != nil {
		cur, _ = s.stateOf(key, cached)
	}
	// fresh says cur was read from etcd rather than handed in.
	fresh := cur == nil
	if fresh {
		if cur, err = s.read(ctx, key, k); err != nil {
			return err
		}
	}
	for {
		data, err := s.nextState(key, cur, ignoreNotFound, precond, tryUpdate)
		if err != nil && !fresh {
			// Decided on a handed-in state, which may be stale (a no-op
			// there may be a change of the stored one): decide again on
			// a read.
			if cur, err = s.read(ctx, key, k); err != nil {
				return err
			}
			fresh = true
			continue
		}
		switch {
		case errors.Is(err, errUnchanged):
			// Nothing changed: no write, no new revision.
			return s.decode(key, cur.data, cur.rev, dest)
		case err != nil:
			return err
		}
		resp, err := s.b.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(clientv3.OpPut(k, string(data))).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return etcdError(key, err)
		}
		if resp.Succeeded {
			return s.decode(key, data, resp.Header.Revision, dest)
		}
		// Another write got in first: retry from the state it left.
		if cur, err = s.stateFrom(key, resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return err
		}
		fresh = true
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// errUnchanged is nextState's answer when the update changes nothing.
var errUnchanged = errors.New("unchanged")

// nextState checks the preconditions on cur, runs tryUpdate on cur.obj
// (made for this attempt alone: it is tryUpdate's to change) and returns
// the encoding of its result, or errUnchanged when that is what is stored.
func (s *store) nextState(key string, cur *current, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) ([]byte, error) {
	if cur.obj == nil {
		if !ignoreNotFound {
			return nil, storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
		}
		cur.obj = s.newFunc()
	}
	if err := precond.Check(key, cur.obj); err != nil {
		return nil, err
	}
	updated, err := tryUpdate(cur.obj)
	if err != nil {
		return nil, err
	}
	data, err := s.encode(key, updated)
	if err != nil {
		return nil, err
	}
	if cur.rev != 0 && bytes.Equal(data, cur.data) {
		return nil, errUnchanged
	}
	return data, nil
}

// stateOf is the state a cached object stands for: a private copy, its
// encoding and the revision its resourceVersion names.
func (s *store) stateOf(key string, cached runtime.Object) (*current, error) {
	m, err := meta.Accessor(cached)
	if err != nil {
		return nil, err
	}
	rev, err := parseRV(key, m.GetResourceVersion())
	if err != nil || rev == 0 {
		return nil, fmt.Errorf("cached object of %s has no usable resourceVersion", key)
	}
	obj := cached.DeepCopyObject()
	data, err := s.encode(key, obj)
	if err != nil {
		return nil, err
	}
	return &current{obj: obj, data: data, rev: int64(rev)}, nil
}

// Delete implements storage.Interface.
func (s *store) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	if err := s.closed(); err != nil {
		return err
	}
	k, err := s.etcdKey(key)
	if err != nil {
		return err
	}
	cur, err := s.read(ctx, key, k)
	if err != nil {
		return err
	}
	for {
		if cur.obj == nil {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "")
		}
		if err := precond.Check(key, cur.obj); err != nil {
			return err
		}
		if validate != nil {
			if err := validate(ctx, cur.obj); err != nil {
				return err
			}
		}
		resp, err := s.b.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(clientv3.OpDelete(k)).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return etcdError(key, err)
		}
		if resp.Succeeded {
			// The last state, stamped with the revision of its deletion.
			return s.decode(key, cur.data, resp.Header.Revision, out)
		}
		if cur, err = s.stateFrom(key, resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// GetList implements storage.Interface.
func (s *store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := s.closed(); err != nil {
		return err
	}
	keyPrefix, err := s.etcdPrefix(key, opts.Recursive)
	if err != nil {
		return err
	}
	listMeta, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	rv, err := storage.ValidateListOptions(key, opts)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	// keyPrefix is what every listed key starts with; a continue token
	// names its start key relative to it.
	rangeEnd := clientv3.GetPrefixRangeEnd(keyPrefix)
	start := keyPrefix
	var withRev int64
	switch {
	case pred.Continue != "":
		if !opts.Recursive {
			return storage.NewError(storage.ErrCodeInvalidContinue, key, 0, "continue is only allowed on a recursive list")
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return storage.NewError(storage.ErrCodeInvalidContinue, key, 0, "specifying resource version is not allowed when using continue")
		}
		fromKey, tokenRV, err := storage.DecodeContinue(pred.Continue, keyPrefix)
		if err != nil {
			return err
		}
		withRev, start = int64(tokenRV), fromKey
	default:
		switch opts.ResourceVersionMatch {
		case metav1.ResourceVersionMatchExact:
			withRev = int64(rv)
		case metav1.ResourceVersionMatchNotOlderThan:
		case "":
			// A paged list at an exact resourceVersion reads that snapshot,
			// as Kubernetes always has for limit with resourceVersion.
			if pred.Limit > 0 && rv > 0 {
				withRev = int64(rv)
			}
		}
	}
	if !opts.Recursive {
		// A single key: read it alone.
		rangeEnd = ""
	}

	limit := pred.Limit
	paging := limit > 0 && opts.Recursive
	batch := limit
	if !pred.Empty() && paging && batch < 100 {
		// Filtered pages usually need more keys than they return.
		batch = 100
	}
	items := make([]runtime.Object, 0)
	var (
		lastKey   string
		hasMore   bool
		remaining int64
	)
	for {
		ops := []clientv3.OpOption{}
		if rangeEnd != "" {
			ops = append(ops, clientv3.WithRange(rangeEnd))
		}
		if paging {
			ops = append(ops, clientv3.WithLimit(batch))
		}
		if withRev != 0 {
			ops = append(ops, clientv3.WithRev(withRev))
		}
		resp, err := s.b.client.Get(ctx, start, ops...)
		if err != nil {
			return listError(key, err, withRev, pred.Continue != "")
		}
		if withRev == 0 {
			withRev = resp.Header.Revision
			if err := checkMinRV(key, rv, withRev); err != nil {
				return err
			}
		}
		hasMore = resp.More
		consumed := 0
		for _, kv := range resp.Kvs {
			if paging && int64(len(items)) >= limit {
				hasMore = true
				break
			}
			consumed++
			lastKey = string(kv.Key)
			obj := s.newFunc()
			if err := s.decode(string(kv.Key), kv.Value, kv.ModRevision, obj); err != nil {
				return err
			}
			ok, err := pred.Matches(obj)
			if err != nil {
				return err
			}
			if ok {
				items = append(items, obj)
			}
		}
		remaining = resp.Count - int64(consumed)
		if !hasMore || !paging || int64(len(items)) >= limit {
			break
		}
		start = lastKey + "\x00"
		batch = min(batch*2, maxListBatch)
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	listMeta.SetResourceVersion(storage.FormatResourceVersion(uint64(withRev)))
	listMeta.SetContinue("")
	listMeta.SetRemainingItemCount(nil)
	if paging && hasMore {
		token, err := storage.EncodeContinue(lastKey+"\x00", keyPrefix, uint64(withRev))
		if err != nil {
			return err
		}
		listMeta.SetContinue(token)
		if pred.Empty() && remaining > 0 {
			listMeta.SetRemainingItemCount(&remaining)
		}
	}
	return nil
}

// listError turns the failure of a list read at rev into a storage error.
func listError(key string, err error, rev int64, continuing bool) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		if continuing {
			return storage.NewError(storage.ErrCodeExpired, key, uint64(rev),
				"the provided continue parameter is too old to display a consistent list result; start a new list without the continue parameter")
		}
		return storage.NewError(storage.ErrCodeExpired, key, uint64(rev), "the requested resource version has been compacted")
	case errors.Is(err, rpctypes.ErrFutureRev):
		return storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, uint64(rev), "too large resource version")
	}
	return etcdError(key, err)
}

// etcdError wraps a failure of the etcd client.
func etcdError(key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("etcd storage: %s: %w", key, err)
}

package apiserver

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// encodeProtobuf encodes obj, of kind gvk, in Kubernetes' protobuf
// envelope: the magic number, then a runtime.Unknown holding the apiVersion,
// the kind and the object's own protobuf bytes (what decodeProtobuf and
// k8s.io/apimachinery's protobuf serializer read). Types without a
// protobuf encoding (custom resources) are an error. obj is only read,
// so objects shared with other readers can be encoded as they are.
func encodeProtobuf(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	out, _, err := appendProtobuf(0, obj, gvk)
	return out, err
}

// appendProtobuf encodes obj as encodeProtobuf does into a new buffer
// whose first head bytes are left for the caller to fill. It returns the
// buffer and the envelope's length.
func appendProtobuf(head int, obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, int, error) {
	pm, ok := obj.(runtime.ProtobufMarshaller)
	if !ok {
		return nil, 0, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}
	size := uint64(pm.Size())
	// What Unknown.NestedMarshalTo writes: the envelope's fields and the
	// object as its Raw field.
	envelope := len(protobufMagic) + u.Size() + 1 + varintSize(size) + int(size)
	out := make([]byte, head+envelope)
	copy(out[head:], protobufMagic)
	n, err := u.NestedMarshalTo(out[head+len(protobufMagic):], pm, size)
	if err != nil {
		return nil, 0, fmt.Errorf("encode %s as protobuf: %w", gvk.Kind, err)
	}
	envelope = len(protobufMagic) + n
	return out[:head+envelope], envelope, nil
}

// varintSize is the length of x as a protobuf varint.
func varintSize(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// putVarint writes x as a protobuf varint at b's start and returns its length.
func putVarint(b []byte, x uint64) int { return binary.PutUvarint(b, x) }

// Field tags of metav1.WatchEvent (type = 1, object = 2) and of
// runtime.RawExtension (raw = 1), all length-delimited.
const (
	watchEventTypeTag   = 1<<3 | 2
	watchEventObjectTag = 2<<3 | 2
	rawExtensionRawTag  = 1<<3 | 2
)

// encodeProtobufEvent encodes one frame of a protobuf watch stream, as
// kube-apiserver writes it: a 4-byte big-endian length, then a
// metav1.WatchEvent in plain protobuf (no envelope) whose object's Raw is
// obj, of kind gvk, in the protobuf envelope. The frame is built in one
// buffer and has the bytes (*metav1.WatchEvent).Marshal would give.
func encodeProtobufEvent(typ watch.EventType, obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	head := eventHeadMax(typ)
	buf, envelope, err := appendProtobuf(head, obj, gvk)
	if err != nil {
		return nil, err
	}
	return putEventHead(buf, head, typ, envelope), nil
}

// protobufEventFrame is encodeProtobufEvent for an object already in its
// envelope.
func protobufEventFrame(typ watch.EventType, envelope []byte) []byte {
	head := eventHeadMax(typ)
	buf := make([]byte, head+len(envelope))
	copy(buf[head:], envelope)
	return putEventHead(buf, head, typ, len(envelope))
}

// eventHeadMax is the most bytes a frame's head (what precedes the
// envelope) can take: the frame length, the type field, the object
// field's tag and length, the raw field's tag and length.
func eventHeadMax(typ watch.EventType) int {
	return 4 + 1 + binary.MaxVarintLen64 + len(typ) + 2*(1+binary.MaxVarintLen64)
}

// putEventHead writes the frame's head just before the envelope, which
// starts at buf[head:], and returns the frame.
func putEventHead(buf []byte, head int, typ watch.EventType, envelope int) []byte {
	raw := 1 + varintSize(uint64(envelope)) + envelope // RawExtension
	event := 1 + varintSize(uint64(len(typ))) + len(typ) + 1 + varintSize(uint64(raw)) + raw
	start := head + envelope - event - 4
	b := buf[start:]
	binary.BigEndian.PutUint32(b, uint32(event))
	i := 4
	b[i] = watchEventTypeTag
	i++
	i += putVarint(b[i:], uint64(len(typ)))
	i += copy(b[i:], typ)
	b[i] = watchEventObjectTag
	i++
	i += putVarint(b[i:], uint64(raw))
	b[i] = rawExtensionRawTag
	i++
	putVarint(b[i:], uint64(envelope))
	return b
}

// protoEventCacheSize is how many event objects protoEventCache
// remembers: enough for the events between the fastest and the slowest of
// the watchers encoding a burst; a watcher further behind encodes its
// events itself.
const protoEventCacheSize = 1024

// protoEventCache remembers the protobuf envelopes of the latest watch
// event objects, so that a change is encoded once for all the protobuf
// watchers that see it, as JSON watchers share storage.Event.Raw. Event
// objects are shared and never changed, so an object (held by its key,
// so that its address is not reused) always has the same encoding. The
// zero value is ready; it is safe for concurrent use.
type protoEventCache struct {
	mu sync.Mutex
	// entries and ring hold the same keys; ring is in insertion order,
	// next its oldest entry once full.
	entries map[protoEventKey][]byte
	ring    []protoEventKey
	next    int
}

// protoEventKey is an event object in a view and kind.
type protoEventKey struct {
	obj runtime.Object
	gvk schema.GroupVersionKind
	f   format
}

// envelope returns the encoding of k.obj that encode gives, once per key
// while it is remembered. The bytes returned are shared: read only.
func (c *protoEventCache) envelope(k protoEventKey, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	data, ok := c.entries[k]
	c.mu.Unlock()
	if ok {
		return data, nil
	}
	data, err := encode()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return data, nil
	}
	if c.entries == nil {
		c.entries = make(map[protoEventKey][]byte, protoEventCacheSize)
	}
	if len(c.ring) < protoEventCacheSize {
		c.ring = append(c.ring, k)
	} else {
		delete(c.entries, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % protoEventCacheSize
	}
	c.entries[k] = data
	return data, nil
}

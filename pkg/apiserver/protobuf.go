package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// protoMarshaler is what the generated protobuf code of k8s.io/api and
// k8s.io/apimachinery gives every type that has a protobuf encoding.
type protoMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// encodeProtobuf encodes obj, of kind gvk, in Kubernetes' protobuf
// envelope: the magic number, then a runtime.Unknown holding the apiVersion,
// the kind and the object's own protobuf bytes (what decodeProtobuf and
// k8s.io/apimachinery's protobuf serializer read). Types without a
// protobuf encoding (custom resources, Tables) are an error.
func encodeProtobuf(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	pm, ok := obj.(protoMarshaler)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}
	n := pm.Size()
	u.Raw = make([]byte, n)
	if _, err := pm.MarshalToSizedBuffer(u.Raw); err != nil {
		return nil, fmt.Errorf("encode %s as protobuf: %w", gvk.Kind, err)
	}
	out := make([]byte, len(protobufMagic), len(protobufMagic)+u.Size())
	copy(out, protobufMagic)
	body, err := u.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode %s protobuf envelope: %w", gvk.Kind, err)
	}
	return append(out, body...), nil
}

package storage

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// JSONCodec is a Codec that stores objects as JSON with encoding/json.
//
// Encode writes the object as it is, including whatever apiVersion and kind
// the caller set in its TypeMeta: it neither adds nor strips them, so callers
// that hand Event.Raw to clients set TypeMeta before they write. Decode
// resets into to its zero value first, so a reused object never keeps fields
// the stored bytes do not have.
//
// The zero value is ready to use and safe for concurrent use.
type JSONCodec struct{}

var _ Codec = JSONCodec{}

// Encode returns obj as JSON.
func (JSONCodec) Encode(obj runtime.Object) ([]byte, error) {
	if obj == nil {
		return nil, fmt.Errorf("encode: nil object")
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return data, nil
}

// Decode replaces into with the object data holds. into must be a non-nil pointer.
func (JSONCodec) Decode(data []byte, into runtime.Object) error {
	v := reflect.ValueOf(into)
	if into == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("decode: into must be a non-nil pointer, got %T", into)
	}
	e := v.Elem()
	e.Set(reflect.Zero(e.Type()))
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode into %T: %w", into, err)
	}
	return nil
}

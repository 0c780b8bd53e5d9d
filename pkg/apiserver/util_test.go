package apiserver

import (
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func sortStrings(s []string) { sort.Strings(s) }

func encodeProtobufEnvelope(t testing.TB, apiVersion, kind string, raw []byte) []byte {
	t.Helper()
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	data, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, protobufMagic...), data...)
}

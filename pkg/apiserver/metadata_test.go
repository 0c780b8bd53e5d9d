package apiserver

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const metadataAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

func TestPartialObjectMetadata(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", map[string]string{"a": "b"}), nil)
	var list metav1.PartialObjectMetadataList
	e.do("GET", podPath("default", ""), nil, "Accept", metadataAccept).decode(t, &list)
	if list.Kind != "PartialObjectMetadataList" || len(list.Items) != 1 || list.Items[0].Name != "p" || list.Items[0].Labels["a"] != "b" || list.ResourceVersion == "" {
		t.Fatalf("list %+v", list)
	}
	var one metav1.PartialObjectMetadata
	r := e.do("GET", podPath("default", "p"), nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	r.decode(t, &one)
	if one.Kind != "PartialObjectMetadata" || one.APIVersion != "meta.k8s.io/v1" || one.UID == "" {
		t.Fatalf("object %s", r.body)
	}
	w := e.watch(podPath("default", "")+"?watch=true&resourceVersion="+list.ResourceVersion, "Accept", metadataAccept)
	e.do("DELETE", podPath("default", "p"), nil).expect(t, 200, "")
	ev := w.next(t)
	var got metav1.PartialObjectMetadata
	if err := json.Unmarshal(ev.Object, &got); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "DELETED" || got.Kind != "PartialObjectMetadata" || got.Name != "p" {
		t.Fatalf("event %s %s", ev.Type, ev.Object)
	}
}

package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/apiserver/openapi/internal/markers"
	"github.com/kplane/kplane/pkg/registry"
)

// builtinKinds describes every resource kplane serves built in, the way
// the API server describes them to New.
func builtinKinds() []Kind {
	var kinds []Kind
	for _, s := range append(registry.Builtin(), apiextensions.CustomResourceDefinitions()) {
		info := s.Info()
		k := Kind{GVK: info.GVK, Resource: info.Resource, Namespaced: info.Namespaced, Object: s.New(), List: s.NewList()}
		if info.Status {
			k.Subresources = append(k.Subresources, "status")
		}
		if info.Scale {
			k.Subresources = append(k.Subresources, "scale")
		}
		kinds = append(kinds, k)
	}
	return kinds
}

// TestGeneratedMarkersUpToDate regenerates the marker table from the API
// module sources go.mod selects and fails when the committed
// zz_generated_markers.go differs: after a k8s.io/api upgrade, run
// go generate ./pkg/apiserver/openapi.
func TestGeneratedMarkersUpToDate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want, err := markers.Generate(ctx, ".")
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	got, err := os.ReadFile("zz_generated_markers.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("zz_generated_markers.go is stale; run go generate ./pkg/apiserver/openapi\n%s",
			cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}

// TestMarkerPackagesCoverDefinitions checks that the generator reads every
// package whose types the built-in kinds' definitions use, so that no
// type's markers are silently missing.
func TestMarkerPackagesCoverDefinitions(t *testing.T) {
	read := func(pkg string) bool {
		for _, m := range markers.Modules {
			if m.Packages == nil && strings.HasPrefix(pkg, m.Path+"/") {
				return true
			}
			for _, p := range m.Packages {
				if pkg == m.Path+"/"+p {
					return true
				}
			}
		}
		return false
	}
	defs := newDefinitions()
	for _, k := range builtinKinds() {
		if _, _, err := defs.addKind(k); err != nil {
			t.Fatal(err)
		}
	}
	for name, typ := range defs.types {
		if !read(typ.PkgPath()) {
			t.Errorf("definition %s is from package %s, which markergen does not read", name, typ.PkgPath())
		}
	}
}

// TestKubernetesMarkersPublished checks the documents say what
// kube-apiserver 1.37 publishes for fields whose merge semantics and
// defaults come from comment markers: extensions in both OpenAPI v2 and
// v3, defaults in v3 only.
func TestKubernetesMarkersPublished(t *testing.T) {
	d, err := New(Config{Kinds: builtinKinds()})
	if err != nil {
		t.Fatal(err)
	}
	var v2 struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(d.v2JSON.data, &v2); err != nil {
		t.Fatal(err)
	}
	v3 := map[string]map[string]any{}
	for key := range d.v3 {
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(d.v3[key].json.data, &doc); err != nil {
			t.Fatal(err)
		}
		for name, s := range doc.Components.Schemas {
			v3[name] = s
		}
	}
	// keys are the keywords compared; a nil value means the keyword must
	// be absent.
	for _, tc := range []struct {
		name, def, field string
		want             map[string]any
	}{
		{"pod containers are a map keyed by name", "io.k8s.api.core.v1.PodSpec", "containers",
			map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"}}},
		{"container ports are keyed by port and protocol", "io.k8s.api.core.v1.Container", "ports",
			map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"containerPort", "protocol"}}},
		{"container port protocol defaults to TCP", "io.k8s.api.core.v1.ContainerPort", "protocol",
			map[string]any{"default": "TCP"}},
		{"service ports are keyed by port and protocol", "io.k8s.api.core.v1.ServiceSpec", "ports",
			map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"port", "protocol"}}},
		{"service port protocol defaults to TCP", "io.k8s.api.core.v1.ServicePort", "protocol",
			map[string]any{"default": "TCP"}},
		{"owner references are keyed by uid", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences",
			map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"uid"}}},
		{"finalizers are a set", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers",
			map[string]any{"x-kubernetes-list-type": "set"}},
		{"labels are a granular map", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels",
			map[string]any{"x-kubernetes-map-type": nil, "default": nil}},
		{"tolerations are atomic", "io.k8s.api.core.v1.PodSpec", "tolerations",
			map[string]any{"x-kubernetes-list-type": "atomic"}},
		{"container args are atomic", "io.k8s.api.core.v1.Container", "args",
			map[string]any{"x-kubernetes-list-type": "atomic"}},
		{"pod conditions are keyed by type", "io.k8s.api.core.v1.PodStatus", "conditions",
			map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"type"}}},
		{"volume health conditions keep the key order written", "io.k8s.api.core.v1.VolumeHealthStatus", "healthConditions",
			map[string]any{"x-kubernetes-list-map-keys": []any{"status", "reason"}}},
		{"rolling update strategy type has no default", "io.k8s.api.apps.v1.DeploymentStrategy", "type",
			map[string]any{"default": nil}},
		{"a ref(constant) default takes the constant's value", "io.k8s.api.core.v1.AzureDiskVolumeSource", "cachingMode",
			map[string]any{"default": "ReadWrite"}},
		{"a pointer field keeps its +default", "io.k8s.api.core.v1.AzureDiskVolumeSource", "fsType",
			map[string]any{"default": "ext4"}},
		{"a struct value defaults to an empty object", "io.k8s.api.core.v1.Pod", "metadata",
			map[string]any{"default": map[string]any{}}},
		{"a required string defaults to empty", "io.k8s.api.core.v1.Container", "name",
			map[string]any{"default": ""}},
		{"a required integer defaults to zero", "io.k8s.api.core.v1.ContainerPort", "containerPort",
			map[string]any{"default": 0.0}},
		{"a type that decodes itself has no default", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp",
			map[string]any{"default": nil}},
		{"an optional pointer has no default", "io.k8s.api.core.v1.PodSpec", "terminationGracePeriodSeconds",
			map[string]any{"default": nil}},
		{"a field's +structType overrides its atomic type", "io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef",
			map[string]any{"x-kubernetes-map-type": "granular"}},
		{"a node selector map is atomic", "io.k8s.api.core.v1.PodSpec", "nodeSelector",
			map[string]any{"x-kubernetes-map-type": "atomic"}},
		{"a CRD's versions are atomic", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec", "versions",
			map[string]any{"x-kubernetes-list-type": "atomic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for dialect, defs := range map[string]map[string]map[string]any{"v2": v2.Definitions, "v3": v3} {
				def, ok := defs[tc.def]
				if !ok {
					t.Fatalf("%s: no definition %s", dialect, tc.def)
				}
				props, _ := def["properties"].(map[string]any)
				p, ok := props[tc.field].(map[string]any)
				if !ok {
					t.Fatalf("%s: %s has no property %s", dialect, tc.def, tc.field)
				}
				want, got := map[string]any{}, map[string]any{}
				for k, v := range tc.want {
					if k == "default" && dialect == "v2" {
						v = nil // kube-apiserver prunes defaults from v2
					}
					want[k], got[k] = v, p[k]
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s %s.%s (-want +got):\n%s", dialect, tc.def, tc.field, diff)
				}
			}
		})
	}
	t.Run("atomic structs carry the map type on the definition", func(t *testing.T) {
		for _, def := range []string{
			"io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
			"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
			"io.k8s.api.core.v1.NodeSelector",
			"io.k8s.api.core.v1.ObjectReference",
			"io.k8s.api.networking.v1.ServiceBackendPort",
		} {
			for dialect, defs := range map[string]map[string]map[string]any{"v2": v2.Definitions, "v3": v3} {
				if got := defs[def]["x-kubernetes-map-type"]; got != "atomic" {
					t.Errorf("%s %s x-kubernetes-map-type = %v, want atomic", dialect, def, got)
				}
			}
		}
		if got, ok := v3["io.k8s.api.core.v1.PodSpec"]["x-kubernetes-map-type"]; ok {
			t.Errorf("PodSpec x-kubernetes-map-type = %v, want none (granular)", got)
		}
	})
	t.Run("a defaulted reference is wrapped in allOf in v3", func(t *testing.T) {
		p := v3["io.k8s.api.core.v1.Pod"]["properties"].(map[string]any)["spec"].(map[string]any)
		want := map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}}, "default": map[string]any{}}
		delete(p, "description")
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("Pod.spec (-want +got):\n%s", diff)
		}
	})
}

func TestZeroDefault(t *testing.T) {
	type embedsOne struct{ metav1.Time }
	type plain struct{ A, B string }
	type named string
	for _, tc := range []struct {
		name      string
		typ       reflect.Type
		omitEmpty bool
		want      any
	}{
		{"required string", reflect.TypeFor[string](), false, ""},
		{"optional string", reflect.TypeFor[string](), true, nil},
		{"required named string", reflect.TypeFor[named](), false, ""},
		{"required bool", reflect.TypeFor[bool](), false, false},
		{"required int32", reflect.TypeFor[int32](), false, 0},
		{"required float", reflect.TypeFor[float64](), false, 0.0},
		{"struct value", reflect.TypeFor[plain](), true, map[string]any{}},
		{"struct pointer", reflect.TypeFor[*plain](), false, nil},
		{"slice", reflect.TypeFor[[]string](), false, nil},
		{"map", reflect.TypeFor[map[string]string](), false, nil},
		{"interface", reflect.TypeFor[any](), false, nil},
		{"self-decoding struct", reflect.TypeFor[metav1.Time](), false, nil},
		{"int or string", reflect.TypeFor[intstr.IntOrString](), false, nil},
		{"raw extension", reflect.TypeFor[runtime.RawExtension](), false, nil},
		{"struct embedding one self-decoding type", reflect.TypeFor[embedsOne](), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := zeroDefault(tc.typ, tc.omitEmpty); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("zeroDefault(%s, omitempty=%v) = %#v, want %#v", tc.typ, tc.omitEmpty, got, tc.want)
			}
		})
	}
}

// Types for TestMarkerPrecedence.
type (
	markedNames  []string
	markedLabels map[string]string
	markedRef    struct {
		Name string `json:"name"`
	}
	markedHolder struct {
		Names  markedNames  `json:"names,omitempty"`
		Own    markedNames  `json:"own,omitempty"`
		Labels markedLabels `json:"labels,omitempty"`
		Mode   string       `json:"mode,omitempty"`
		Ref    markedRef    `json:"ref"`
		PRef   *markedRef   `json:"pref,omitempty"`
	}
)

// TestMarkerPrecedence checks how a field's markers combine with those of
// its type: a named list or map type's list and map type apply to fields
// without their own, any named type's default applies to fields without
// one, and a struct type's +structType stays on its definition.
func TestMarkerPrecedence(t *testing.T) {
	name := func(v any) string { return definitionName(reflect.TypeOf(v)) }
	holder := name(markedHolder{})
	d := newDefinitions()
	d.markers = markerTable{
		name(markedNames{}):  {"": {listType: "set"}},
		name(markedLabels{}): {"": {mapType: "atomic"}},
		name(markedRef{}):    {"": {mapType: "atomic", defaultJSON: `{"name":"x"}`}},
		holder: {
			"own":  {listType: "atomic"},
			"mode": {defaultJSON: `"Fast"`},
			"pref": {mapType: "granular"},
		},
	}
	if _, err := d.add(reflect.TypeFor[markedHolder]()); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for field, p := range d.schemas[holder].Properties {
		r := p.render(openAPI3)
		delete(r, "type")
		delete(r, "items")
		delete(r, "additionalProperties")
		delete(r, "allOf")
		delete(r, "$ref")
		got[field] = r
	}
	want := map[string]any{
		"names":  map[string]any{"x-kubernetes-list-type": "set"},
		"own":    map[string]any{"x-kubernetes-list-type": "atomic"},
		"labels": map[string]any{"x-kubernetes-map-type": "atomic"},
		"mode":   map[string]any{"default": "Fast"},
		"ref":    map[string]any{"default": map[string]any{"name": "x"}},
		"pref":   map[string]any{"x-kubernetes-map-type": "granular", "default": map[string]any{"name": "x"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if got := d.schemas[name(markedRef{})].Ext[extMapType]; got != "atomic" {
		t.Errorf("markedRef definition map type = %v, want atomic", got)
	}
}

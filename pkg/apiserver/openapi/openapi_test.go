package openapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
	kubeproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// sharedDocs is built once for the tests that only read documents; Docs
// is immutable, so sharing it is safe.
var sharedDocs = sync.OnceValues(func() (*Docs, error) { return New(Config{Kinds: servedKinds()}) })

func newDocs(t testing.TB) *Docs {
	t.Helper()
	d, err := sharedDocs()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// v3Spec decodes a group version's OpenAPI 3 document the way client-go's
// openapi3 root does.
func v3Spec(t testing.TB, d *Docs, key string) *spec3.OpenAPI {
	t.Helper()
	doc, ok := d.v3[key]
	if !ok {
		t.Fatalf("no v3 document %q", key)
	}
	var out spec3.OpenAPI
	if err := json.Unmarshal(doc.json.data, &out); err != nil {
		t.Fatalf("decode v3 %s: %v", key, err)
	}
	return &out
}

func TestNewRejectsInvalidKinds(t *testing.T) {
	pod := servedKinds()[1]
	tests := []struct {
		name    string
		mutate  func(k *Kind)
		wantErr string
	}{
		{"no version", func(k *Kind) { k.GVK.Version = "" }, "GVK.Version is empty"},
		{"no kind", func(k *Kind) { k.GVK.Kind = "" }, "GVK.Kind is empty"},
		{"no resource", func(k *Kind) { k.Resource = "" }, "not a lower-case path segment"},
		{"upper-case resource", func(k *Kind) { k.Resource = "Pods" }, "not a lower-case path segment"},
		{"resource with slash", func(k *Kind) { k.Resource = "pods/status" }, "not a lower-case path segment"},
		{"nil object", func(k *Kind) { k.Object = nil }, "Object is nil"},
		{"nil list", func(k *Kind) { k.List = nil }, "List is nil"},
		{"unknown subresource", func(k *Kind) { k.Subresources = []string{"log"} }, `subresource "log" is not one of`},
		{"duplicate subresource", func(k *Kind) { k.Subresources = []string{"status", "status"} }, "listed twice"},
		{"create-only with subresources", func(k *Kind) { k.CreateOnly, k.List = true, nil }, "a CreateOnly resource has no subresources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := pod
			tt.mutate(&k)
			_, err := New(Config{Kinds: []Kind{k}})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	t.Run("duplicate resource", func(t *testing.T) {
		_, err := New(Config{Kinds: []Kind{pod, pod}})
		if err == nil || !strings.Contains(err.Error(), "declared twice") {
			t.Fatalf("New error = %v, want a duplicate resource error", err)
		}
	})
}

// A create-only kind (an access review) has one path, the create on its
// collection, and its schema for kubectl explain; it needs no list type.
func TestCreateOnlyKind(t *testing.T) {
	sar := Kind{
		GVK:      authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		Resource: "selfsubjectaccessreviews", Object: &authorizationv1.SelfSubjectAccessReview{}, CreateOnly: true,
	}
	d, err := New(Config{Kinds: append(servedKinds(), sar)})
	if err != nil {
		t.Fatal(err)
	}
	doc := v3Spec(t, d, "apis/authorization.k8s.io/v1")
	var paths []string
	for p, item := range doc.Paths.Paths {
		paths = append(paths, p)
		if item.Get != nil || item.Put != nil || item.Patch != nil || item.Delete != nil || item.Post == nil {
			t.Errorf("%s: want only post, got %+v", p, item)
		}
		if got := item.Post.OperationId; got != "createAuthorizationV1SelfSubjectAccessReview" {
			t.Errorf("operation id %q", got)
		}
	}
	if diff := cmp.Diff([]string{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	var gvkDefs []string
	for name, s := range doc.Components.Schemas {
		if _, ok := s.Extensions["x-kubernetes-group-version-kind"]; ok && strings.Contains(name, "SelfSubjectAccessReview") {
			gvkDefs = append(gvkDefs, name)
		}
	}
	if diff := cmp.Diff([]string{"io.k8s.api.authorization.v1.SelfSubjectAccessReview"}, gvkDefs); diff != "" {
		t.Errorf("kinds in schemas (-want +got):\n%s", diff)
	}
}

func TestNewIsDeterministic(t *testing.T) {
	a := newDocs(t)
	b, err := New(Config{Kinds: servedKinds()})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.v2JSON.data, b.v2JSON.data) || !bytes.Equal(a.v3Index.data, b.v3Index.data) {
		t.Fatal("two builds of the same config differ")
	}
	for k := range a.v3 {
		if !bytes.Equal(a.v3[k].json.data, b.v3[k].json.data) {
			t.Fatalf("v3 document %s differs between builds", k)
		}
	}
}

func TestV3Index(t *testing.T) {
	d := newDocs(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(d.v3Index.data, &index); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range index.Paths {
		got[k] = v.ServerRelativeURL
	}
	want := map[string]string{}
	for _, k := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"} {
		want[k] = "/openapi/v3/" + k + "?hash=" + d.v3[k].json.etag
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("index (-want +got):\n%s", diff)
	}
}

// schemaJSON re-encodes a decoded schema, to compare it as plain JSON.
func schemaJSON(t testing.TB, s any) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestV3SchemasMatchKubernetes(t *testing.T) {
	d := newDocs(t)
	core := v3Spec(t, d, "api/v1").Components.Schemas
	apps := v3Spec(t, d, "apis/apps/v1").Components.Schemas
	prop := func(schemas map[string]*spec.Schema, def, field string) *spec.Schema {
		t.Helper()
		s, ok := schemas[def]
		if !ok {
			t.Fatalf("no definition %s", def)
		}
		p, ok := s.Properties[field]
		if !ok {
			t.Fatalf("definition %s has no property %s", def, field)
		}
		return &p
	}

	t.Run("containers merge by name", func(t *testing.T) {
		p := prop(core, "io.k8s.api.core.v1.PodSpec", "containers")
		want := map[string]any{
			"x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
			"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"},
		}
		if diff := cmp.Diff(want, map[string]any(p.Extensions)); diff != "" {
			t.Errorf("extensions (-want +got):\n%s", diff)
		}
		if p.Items == nil || p.Items.Schema == nil || p.Items.Schema.Ref.String() != "#/components/schemas/io.k8s.api.core.v1.Container" {
			t.Errorf("items = %+v, want a reference to Container", p.Items)
		}
	})
	t.Run("volumes retain keys", func(t *testing.T) {
		p := prop(core, "io.k8s.api.core.v1.PodSpec", "volumes")
		if got := p.Extensions["x-kubernetes-patch-strategy"]; got != "merge,retainKeys" {
			t.Errorf("patch strategy = %v, want merge,retainKeys", got)
		}
	})
	t.Run("finalizers are a set", func(t *testing.T) {
		p := prop(core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers")
		if got := p.Extensions["x-kubernetes-list-type"]; got != "set" {
			t.Errorf("list type = %v, want set", got)
		}
	})
	t.Run("required fields", func(t *testing.T) {
		for _, tc := range []struct {
			schemas map[string]*spec.Schema
			def     string
			want    []string
		}{
			{core, "io.k8s.api.core.v1.Container", []string{"name"}},
			{core, "io.k8s.api.core.v1.PodSpec", []string{"containers"}},
			{core, "io.k8s.api.core.v1.Pod", nil},
			{core, "io.k8s.api.core.v1.PodList", []string{"items"}},
			{core, "io.k8s.api.core.v1.ContainerPort", []string{"containerPort"}},
			{core, "io.k8s.api.core.v1.ObjectReference", nil},
			{apps, "io.k8s.api.apps.v1.DeploymentSpec", []string{"selector", "template"}},
			{apps, "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", []string{"key", "operator"}},
		} {
			s := tc.schemas[tc.def]
			if s == nil {
				t.Errorf("no definition %s", tc.def)
				continue
			}
			if diff := cmp.Diff(tc.want, s.Required); diff != "" {
				t.Errorf("%s required (-want +got):\n%s", tc.def, diff)
			}
		}
	})
	t.Run("scalar definitions", func(t *testing.T) {
		for def, want := range map[string]map[string]any{
			"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       {"type": "string", "format": "date-time"},
			"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"format": "int-or-string", "oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
			"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
			"io.k8s.apimachinery.pkg.runtime.RawExtension":    {"type": "object"},
			"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1":   {"type": "object"},
		} {
			src := core
			if strings.Contains(def, "RawExtension") {
				src = v3Spec(t, d, "api/v1").Components.Schemas
			}
			s := src[def]
			if s == nil {
				t.Errorf("no definition %s", def)
				continue
			}
			got := schemaJSON(t, s)
			delete(got, "description")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", def, diff)
			}
		}
	})
	t.Run("field types", func(t *testing.T) {
		for _, tc := range []struct {
			def, field string
			want       map[string]any
		}{
			{"io.k8s.api.core.v1.Secret", "data", map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "format": "byte"}}},
			{"io.k8s.api.core.v1.ConfigMap", "data", map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}},
			{"io.k8s.api.core.v1.PodSpec", "terminationGracePeriodSeconds", map[string]any{"type": "integer", "format": "int64"}},
			{"io.k8s.api.core.v1.ContainerPort", "containerPort", map[string]any{"type": "integer", "format": "int32", "default": 0.0}},
			{"io.k8s.api.core.v1.PodSpec", "hostNetwork", map[string]any{"type": "boolean"}},
			{"io.k8s.api.core.v1.ResourceRequirements", "limits", map[string]any{"type": "object", "additionalProperties": map[string]any{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}}},
			// A described reference is wrapped in allOf, as Kubernetes does.
			{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp", map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}}}},
			{"io.k8s.api.core.v1.Pod", "apiVersion", map[string]any{"type": "string"}},
		} {
			got := schemaJSON(t, prop(core, tc.def, tc.field))
			delete(got, "description")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s.%s (-want +got):\n%s", tc.def, tc.field, diff)
			}
		}
	})
	t.Run("group version kinds", func(t *testing.T) {
		for _, tc := range []struct {
			schemas map[string]*spec.Schema
			def     string
			want    []any
		}{
			{core, "io.k8s.api.core.v1.Pod", []any{map[string]any{"group": "", "version": "v1", "kind": "Pod"}}},
			{core, "io.k8s.api.core.v1.PodList", []any{map[string]any{"group": "", "version": "v1", "kind": "PodList"}}},
			{apps, "io.k8s.api.apps.v1.Deployment", []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment"}}},
			{apps, "io.k8s.api.autoscaling.v1.Scale", []any{map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"}}},
			{core, "io.k8s.apimachinery.pkg.apis.meta.v1.Status", []any{map[string]any{"group": "", "version": "v1", "kind": "Status"}}},
		} {
			s := tc.schemas[tc.def]
			if s == nil {
				t.Errorf("no definition %s", tc.def)
				continue
			}
			if diff := cmp.Diff(tc.want, s.Extensions["x-kubernetes-group-version-kind"]); diff != "" {
				t.Errorf("%s GVK (-want +got):\n%s", tc.def, diff)
			}
		}
	})
	t.Run("only reachable definitions", func(t *testing.T) {
		if _, ok := apps["io.k8s.api.core.v1.Namespace"]; ok {
			t.Error("apps/v1 document defines core Namespace, which none of its paths reaches")
		}
		if _, ok := apps["io.k8s.api.core.v1.PodTemplateSpec"]; !ok {
			t.Error("apps/v1 document lacks PodTemplateSpec, which Deployment reaches")
		}
	})
}

func TestV3Operations(t *testing.T) {
	d := newDocs(t)
	type opInfo struct {
		ID, Action string
		GVK        map[string]any
		Params     []string
	}
	info := func(op *spec3.Operation) *opInfo {
		if op == nil {
			return nil
		}
		var ps []string
		for _, p := range op.Parameters {
			ps = append(ps, p.Name)
		}
		gvk, _ := op.Extensions["x-kubernetes-group-version-kind"].(map[string]any)
		action, _ := op.Extensions["x-kubernetes-action"].(string)
		return &opInfo{ID: op.OperationId, Action: action, GVK: gvk, Params: ps}
	}
	gvk := func(g, v, k string) map[string]any { return map[string]any{"group": g, "version": v, "kind": k} }
	pod, dep, scale := gvk("", "v1", "Pod"), gvk("apps", "v1", "Deployment"), gvk("autoscaling", "v1", "Scale")
	listP := []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}
	patchP := []string{"dryRun", "fieldManager", "fieldValidation", "force"}
	writeP := []string{"dryRun", "fieldManager", "fieldValidation"}

	tests := []struct {
		key, path, method string
		want              *opInfo
	}{
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "get", &opInfo{"listCoreV1NamespacedPod", "list", pod, listP}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "post", &opInfo{"createCoreV1NamespacedPod", "post", pod, writeP}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "delete", &opInfo{"deleteCoreV1CollectionNamespacedPod", "deletecollection", pod, []string{"continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "labelSelector", "limit", "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"}}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "get", &opInfo{"readCoreV1NamespacedPod", "get", pod, nil}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "put", &opInfo{"replaceCoreV1NamespacedPod", "put", pod, writeP}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "patch", &opInfo{"patchCoreV1NamespacedPod", "patch", pod, patchP}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "delete", &opInfo{"deleteCoreV1NamespacedPod", "delete", pod, []string{"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"}}},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", &opInfo{"patchCoreV1NamespacedPodStatus", "patch", pod, patchP}},
		{"api/v1", "/api/v1/pods", "get", &opInfo{"listCoreV1PodForAllNamespaces", "list", pod, nil}},
		{"api/v1", "/api/v1/watch/pods", "get", &opInfo{"watchCoreV1PodListForAllNamespaces", "watchlist", pod, nil}},
		{"api/v1", "/api/v1/watch/namespaces/{namespace}/pods", "get", &opInfo{"watchCoreV1NamespacedPodList", "watchlist", pod, nil}},
		{"api/v1", "/api/v1/watch/namespaces/{namespace}/pods/{name}", "get", &opInfo{"watchCoreV1NamespacedPod", "watch", pod, nil}},
		{"api/v1", "/api/v1/nodes", "get", &opInfo{"listCoreV1Node", "list", gvk("", "v1", "Node"), listP}},
		{"api/v1", "/api/v1/nodes/{name}/status", "get", &opInfo{"readCoreV1NodeStatus", "get", gvk("", "v1", "Node"), nil}},
		{"api/v1", "/api/v1/watch/nodes/{name}", "get", &opInfo{"watchCoreV1Node", "watch", gvk("", "v1", "Node"), nil}},
		{"api/v1", "/api/v1/nodes/{name}/scale", "get", nil},
		{"apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "patch", &opInfo{"patchAppsV1NamespacedDeploymentScale", "patch", scale, patchP}},
		{"apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "get", &opInfo{"readAppsV1NamespacedDeploymentScale", "get", scale, nil}},
		{"apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", &opInfo{"patchAppsV1NamespacedDeployment", "patch", dep, patchP}},
		{"apis/coordination.k8s.io/v1", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "put", &opInfo{"replaceCoordinationV1NamespacedLease", "put", gvk("coordination.k8s.io", "v1", "Lease"), writeP}},
	}
	specs := map[string]*spec3.OpenAPI{}
	for _, tt := range tests {
		if specs[tt.key] == nil {
			specs[tt.key] = v3Spec(t, d, tt.key)
		}
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			doc := specs[tt.key]
			item := doc.Paths.Paths[tt.path]
			var got *opInfo
			if item != nil {
				got = info(map[string]*spec3.Operation{
					"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete,
				}[tt.method])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("operation (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("bodies", func(t *testing.T) {
		doc := v3Spec(t, d, "apis/apps/v1")
		item := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
		var patchTypes []string
		for ct, mt := range item.Patch.RequestBody.Content {
			patchTypes = append(patchTypes, ct)
			if r := mt.Schema.Ref.String(); r != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch" {
				t.Errorf("patch body %s refers to %s", ct, r)
			}
		}
		if !strings.Contains(strings.Join(patchTypes, " "), "application/strategic-merge-patch+json") {
			t.Errorf("patch content types %v lack strategic merge patch, which kubectl apply looks for", patchTypes)
		}
		if r := item.Put.RequestBody.Content["application/json"].Schema.Ref.String(); r != "#/components/schemas/io.k8s.api.apps.v1.Deployment" {
			t.Errorf("put body refers to %s", r)
		}
		if r := item.Get.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); r != "#/components/schemas/io.k8s.api.apps.v1.Deployment" {
			t.Errorf("get response refers to %s", r)
		}
		if r := item.Delete.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); r != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status" {
			t.Errorf("delete response refers to %s", r)
		}
	})
}

// deploymentJSON is a Deployment with the given containers ("name=image").
func deploymentJSON(t testing.TB, annotations map[string]string, containers ...string) []byte {
	t.Helper()
	dep := appsv1.Deployment{}
	dep.APIVersion, dep.Kind = "apps/v1", "Deployment"
	dep.Name, dep.Namespace = "web", "default"
	dep.Annotations = annotations
	dep.Spec.Template.Labels = map[string]string{"app": "web"}
	for _, c := range containers {
		name, image, _ := strings.Cut(c, "=")
		dep.Spec.Template.Spec.Containers = append(dep.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: image})
	}
	b, err := json.Marshal(dep)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStrategicMergePatch computes kubectl apply's three-way patch with the
// patch metadata read from the served documents (v3, as kubectl does first,
// and v2 from the protobuf form, its fallback) and checks it against the
// patch computed from the Go struct tags.
func TestStrategicMergePatch(t *testing.T) {
	d := newDocs(t)
	original := deploymentJSON(t, nil, "app=nginx:1", "sidecar=envoy:1")
	modified := deploymentJSON(t, nil, "app=nginx:2", "sidecar=envoy:1")
	current := deploymentJSON(t, map[string]string{"other": "x"}, "app=nginx:1", "sidecar=envoy:1", "injected=proxy:1")
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

	fromStruct, err := strategicpatch.NewPatchMetaFromStruct(&appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, fromStruct, false)
	if err != nil {
		t.Fatal(err)
	}
	// The merge key keeps the injected container: a list replace would drop it.
	const wantPatch = `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"},{"name":"sidecar"}],"containers":[{"image":"nginx:2","name":"app"}]}}}}`
	if string(want) != wantPatch {
		t.Fatalf("struct patch = %s, want %s", want, wantPatch)
	}

	t.Run("v3", func(t *testing.T) {
		doc := v3Spec(t, d, "apis/apps/v1")
		var lookup *strategicpatch.PatchMetaFromOpenAPIV3
		for _, s := range doc.Components.Schemas {
			var gvks []map[string]string
			if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
				continue
			}
			for _, g := range gvks {
				if g["group"] == gvk.Group && g["version"] == gvk.Version && g["kind"] == gvk.Kind {
					lookup = &strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
				}
			}
		}
		if lookup == nil {
			t.Fatal("no schema carries the Deployment GVK")
		}
		got, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, *lookup, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("v3 patch = %s, want %s", got, want)
		}
	})

	t.Run("v2 protobuf", func(t *testing.T) {
		var doc openapiv2.Document
		if err := proto.Unmarshal(d.v2Proto.data, &doc); err != nil {
			t.Fatal(err)
		}
		models, err := kubeproto.NewOpenAPIData(&doc)
		if err != nil {
			t.Fatalf("kube-openapi rejects the v2 document: %v", err)
		}
		model := models.LookupModel("io.k8s.api.apps.v1.Deployment")
		if model == nil {
			t.Fatal("no Deployment model")
		}
		got, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, strategicpatch.NewPatchMetaFromOpenAPI(model), false)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("v2 patch = %s, want %s", got, want)
		}
		if ext := model.GetExtensions()["x-kubernetes-group-version-kind"]; ext == nil {
			t.Error("v2 Deployment model has no GVK extension")
		}
	})
}

// TestTypeConverter builds the structured-merge-diff type converter that
// client-go's apply configurations and Kubernetes' managed fields build from
// OpenAPI v3 schemas, and types real objects with it: every field the
// objects set must be in the schemas, with the right type.
func TestTypeConverter(t *testing.T) {
	d := newDocs(t)
	dep := &appsv1.Deployment{}
	if err := json.Unmarshal(deploymentJSON(t, map[string]string{"a": "b"}, "app=nginx:1"), dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To[int32](2)
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	dep.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	dep.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	dep.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%"))}
	dep.CreationTimestamp = metav1.Now()
	dep.Finalizers = []string{"example.com/f"}

	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	pod.Name = "p"
	pod.Spec = dep.Spec.Template.Spec
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = ptr.To(metav1.Now())
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}

	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}}
	lease.Name = "l"
	lease.Spec.HolderIdentity = ptr.To("me")
	lease.Spec.RenewTime = ptr.To(metav1.NowMicro())

	for _, tc := range []struct {
		key string
		obj runtime.Object
	}{
		{"apis/apps/v1", dep},
		{"api/v1", pod},
		{"apis/coordination.k8s.io/v1", lease},
	} {
		t.Run(tc.key, func(t *testing.T) {
			tc2, err := managedfields.NewTypeConverter(v3Spec(t, d, tc.key).Components.Schemas, false)
			if err != nil {
				t.Fatalf("NewTypeConverter: %v", err)
			}
			if _, err := tc2.ObjectToTyped(tc.obj); err != nil {
				t.Fatalf("ObjectToTyped: %v", err)
			}
		})
	}
}

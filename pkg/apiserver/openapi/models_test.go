package openapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/utils/ptr"
)

// cronTabKind is a custom resource with a list keyed by name.
func cronTabKind() Kind {
	return Kind{
		GVK:      schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
		Resource: "crontabs", Namespaced: true,
		Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"jobs": {
					Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"},
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", Required: []string{"name"},
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}},
					}},
				},
			}},
		}},
	}
}

// TestModelsToStructuredMergeDiff feeds the models of every built-in kind,
// and a custom one, to the conversion kube-apiserver's field manager uses
// and checks the merge semantics server-side apply gets from them.
func TestModelsToStructuredMergeDiff(t *testing.T) {
	kinds := append(builtinKinds(), cronTabKind())
	models, names, err := Models(kinds)
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	for _, k := range kinds {
		name, ok := names[k.GVK]
		if !ok {
			t.Errorf("no definition name for %s", k.GVK)
			continue
		}
		if models[name] == nil {
			t.Errorf("%s: definition %s is not among the models", k.GVK, name)
		}
	}
	if got := names[corev1.SchemeGroupVersion.WithKind("Pod")]; got != "io.k8s.api.core.v1.Pod" {
		t.Errorf("Pod definition = %q", got)
	}
	if got := names[scaleGVK]; got != "io.k8s.api.autoscaling.v1.Scale" {
		t.Errorf("Scale definition = %q (deployments have a scale subresource)", got)
	}
	if got := names[cronTabKind().GVK]; got != "com.example.stable.v1.CronTab" {
		t.Errorf("CronTab definition = %q", got)
	}
	for name, m := range models {
		if ref := m.Ref.String(); ref != "" && !strings.HasPrefix(ref, "#/components/schemas/") {
			t.Errorf("%s refers to %s, not an OpenAPI 3 component", name, ref)
		}
	}

	s, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		t.Fatalf("ToSchemaFromOpenAPI: %v", err)
	}
	for _, tc := range []struct {
		name, typ, field string
		relationship     string
		keys             []string
	}{
		{"container ports are an associative list keyed by port and protocol", "io.k8s.api.core.v1.Container", "ports", "associative", []string{"containerPort", "protocol"}},
		{"containers are keyed by name", "io.k8s.api.core.v1.PodSpec", "containers", "associative", []string{"name"}},
		{"service ports are keyed by port and protocol", "io.k8s.api.core.v1.ServiceSpec", "ports", "associative", []string{"port", "protocol"}},
		{"owner references are keyed by uid", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "associative", []string{"uid"}},
		{"finalizers are a set", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "associative", nil},
		{"tolerations are atomic", "io.k8s.api.core.v1.PodSpec", "tolerations", "atomic", nil},
		{"container args are atomic", "io.k8s.api.core.v1.Container", "args", "atomic", nil},
		{"deployment conditions are keyed by type", "io.k8s.api.apps.v1.DeploymentStatus", "conditions", "associative", []string{"type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			atom, ok := s.FindNamedType(tc.typ)
			if !ok || atom.Map == nil {
				t.Fatalf("no object type %s", tc.typ)
			}
			f, ok := atom.Map.FindField(tc.field)
			if !ok {
				t.Fatalf("%s has no field %s", tc.typ, tc.field)
			}
			l := f.Type.Inlined.List
			if l == nil {
				t.Fatalf("%s.%s is not a list: %+v", tc.typ, tc.field, f.Type)
			}
			if got := string(l.ElementRelationship); got != tc.relationship {
				t.Errorf("element relationship = %q, want %q", got, tc.relationship)
			}
			if diff := cmp.Diff(tc.keys, l.Keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a custom resource's map list keeps its keys", func(t *testing.T) {
		atom, _ := s.FindNamedType("com.example.stable.v1.CronTab")
		spec, _ := atom.Map.FindField("spec")
		jobs, ok := spec.Type.Inlined.Map.FindField("jobs")
		if !ok || jobs.Type.Inlined.List == nil {
			t.Fatalf("CronTab spec.jobs is not a list: %+v", jobs)
		}
		if diff := cmp.Diff([]string{"name"}, jobs.Type.Inlined.List.Keys); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
	})
	t.Run("protocol key defaults to TCP", func(t *testing.T) {
		atom, _ := s.FindNamedType("io.k8s.api.core.v1.ContainerPort")
		f, _ := atom.Map.FindField("protocol")
		if f.Default != "TCP" {
			t.Errorf("ContainerPort.protocol default = %#v, want TCP", f.Default)
		}
	})
	t.Run("label selectors are atomic", func(t *testing.T) {
		atom, ok := s.FindNamedType("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
		if !ok || atom.Map == nil {
			t.Fatal("no LabelSelector")
		}
		if got := string(atom.Map.ElementRelationship); got != "atomic" {
			t.Errorf("LabelSelector element relationship = %q, want atomic", got)
		}
	})
}

func TestModelsRejects(t *testing.T) {
	pod := servedKinds()[1]
	for _, tc := range []struct {
		name    string
		kinds   []Kind
		wantErr string
	}{
		{"a kind declared twice", []Kind{pod, pod}, "declared twice"},
		{"an invalid kind", []Kind{{GVK: pod.GVK, Resource: "pods"}}, "Object is nil"},
		{"a type with no JSON form", []Kind{{GVK: pod.GVK, Resource: "pods", Object: &chanObject{}, List: &corev1.PodList{}}}, "has no JSON schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Models(tc.kinds)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Models error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// chanObject is an object with a field JSON cannot encode.
type chanObject struct {
	corev1.Pod
	C chan int `json:"c"`
}

// BenchmarkModelsToSchema measures what the field manager does once per
// set of served kinds: build the models of every built-in kind and convert
// them to a structured-merge-diff schema.
func BenchmarkModelsToSchema(b *testing.B) {
	kinds := builtinKinds()
	b.Run("Models of Pod", func(b *testing.B) {
		pod := servedKinds()[1]
		for b.Loop() {
			if _, _, err := Models([]Kind{pod}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Models", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := Models(kinds); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Models+ToSchemaFromOpenAPI", func(b *testing.B) {
		for b.Loop() {
			models, _, err := Models(kinds)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := schemaconv.ToSchemaFromOpenAPI(models, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestModelsMergeLikeServerSideApply merges objects with the type converter
// built from Models, as the field manager does, and checks the outcomes
// that depend on the comment markers.
func TestModelsMergeLikeServerSideApply(t *testing.T) {
	models, _, err := Models(builtinKinds())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	pod := func(ports ...corev1.ContainerPort) *corev1.Pod {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
		p.Name = "p"
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx", Ports: ports}}
		return p
	}
	deployment := func(labels map[string]string) *appsv1.Deployment {
		d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
		d.Name = "d"
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		return d
	}
	// length returns the number of entries of the list or map at path.
	length := func(t *testing.T, a, b runtime.Object, path ...any) int {
		t.Helper()
		ta, err := tc.ObjectToTyped(a)
		if err != nil {
			t.Fatalf("ObjectToTyped: %v", err)
		}
		tb, err := tc.ObjectToTyped(b)
		if err != nil {
			t.Fatalf("ObjectToTyped: %v", err)
		}
		merged, err := ta.Merge(tb)
		if err != nil {
			t.Fatalf("Merge: %v", err)
		}
		v := merged.AsValue()
		for _, step := range path {
			switch s := step.(type) {
			case string:
				next, ok := v.AsMap().Get(s)
				if !ok {
					t.Fatalf("merged object has no %v", path)
				}
				v = next
			case int:
				v = v.AsList().At(s)
			}
		}
		if v.IsList() {
			return v.AsList().Length()
		}
		return v.AsMap().Length()
	}
	ports := []any{"spec", "containers", 0, "ports"}
	for _, c := range []struct {
		name string
		a, b runtime.Object
		path []any
		want int
	}{
		{"a port without protocol is the TCP port", pod(corev1.ContainerPort{ContainerPort: 80}), pod(corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP}), ports, 1},
		{"the same port number over UDP is another entry", pod(corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP}), pod(corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolUDP}), ports, 2},
		{"an atomic label selector is replaced whole", deployment(map[string]string{"a": "1"}), deployment(map[string]string{"b": "2"}), []any{"spec", "selector", "matchLabels"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := length(t, c.a, c.b, c.path...); got != c.want {
				t.Errorf("merged %v has %d entries, want %d", c.path, got, c.want)
			}
		})
	}
}

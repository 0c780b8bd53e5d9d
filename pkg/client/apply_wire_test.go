package client

import (
	"context"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// configMapApply is shaped like client-go's generated apply
// configurations: every field a pointer or map, omitempty.
type configMapApply struct {
	APIVersion *string            `json:"apiVersion,omitempty"`
	Kind       *string            `json:"kind,omitempty"`
	Metadata   *metaApply         `json:"metadata,omitempty"`
	Data       map[string]string  `json:"data,omitempty"`
	Extra      *map[string]string `json:"binaryData,omitempty"`
}

type metaApply struct {
	Name      *string `json:"name,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
}

// TestApplyWire checks what an apply sends, as client-go sends it: PATCH
// of the object's path, fieldManager and force (and dryRun=All) in the
// query, Content-Type application/apply-patch+yaml, the configuration as
// JSON.
func TestApplyWire(t *testing.T) {
	ctx := context.Background()
	served := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns1", ResourceVersion: "5"}}
	tests := []struct {
		name                       string
		call                       func(c *Client) error
		path, query, body, wantErr string
	}{{
		name: "apply configuration struct gets apiVersion and kind from the descriptor",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx,
				&configMapApply{Metadata: &metaApply{Name: ptr.To("cm")}, Data: map[string]string{"a": "1"}},
				ApplyOptions{FieldManager: "me"})
			return err
		},
		path: "/api/v1/namespaces/ns1/configmaps/cm", query: "fieldManager=me&force=false",
		body: `{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"cm"}}`,
	}, {
		name: "the namespace of the configuration when the client has none; force and dry run",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Apply(ctx, map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1"},
			}, ApplyOptions{FieldManager: "me", Force: true, DryRun: true})
			return err
		},
		path: "/api/v1/namespaces/ns1/configmaps/cm", query: "dryRun=All&fieldManager=me&force=true",
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns1"}}`,
	}, {
		name: "status subresource",
		call: func(c *Client) error {
			_, err := NewResource(c, Deployments).Namespace("ns1").ApplyStatus(ctx, map[string]any{
				"metadata": map[string]any{"name": "d"}, "status": map[string]any{"replicas": 1},
			}, ApplyOptions{FieldManager: "me"})
			return err
		},
		path: "/apis/apps/v1/namespaces/ns1/deployments/d/status", query: "fieldManager=me&force=false",
		body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"status":{"replicas":1}}`,
	}, {
		name: "dynamic client sends the object as it is",
		call: func(c *Client) error {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": "ns1"}, "spec": map[string]any{"color": "red"}}}
			_, err := NewDynamic(c).Resource(widgetsGVRInternal).Namespace("ns1").Apply(ctx, u, ApplyOptions{FieldManager: "me"})
			return err
		},
		path: "/apis/example.com/v1/namespaces/ns1/widgets/w", query: "fieldManager=me&force=false",
		body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns1"},"spec":{"color":"red"}}`,
	}, {
		// The reason a typed object is a poor configuration, pinned down:
		// its non-omitempty fields are sent, and claimed, when unset.
		name: "typed object sends its unset non-omitempty fields",
		call: func(c *Client) error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
			_, err := NewResource(c, Deployments).Namespace("ns1").Apply(ctx, d, ApplyOptions{FieldManager: "me"})
			return err
		},
		path: "/apis/apps/v1/namespaces/ns1/deployments/d", query: "fieldManager=me&force=false",
		body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":null,"strategy":{},` +
			`"template":{"metadata":{},"spec":{"containers":[{"image":"nginx","name":"c","resources":{}}]}}},"status":{}}`,
	}, {
		name: "missing field manager is refused before sending",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx, map[string]any{"metadata": map[string]any{"name": "cm"}}, ApplyOptions{})
			return err
		},
		wantErr: "FieldManager is required",
	}, {
		name: "dynamic: missing field manager",
		call: func(c *Client) error {
			_, err := NewDynamic(c).Resource(widgetsGVRInternal).Namespace("ns1").Apply(ctx, &unstructured.Unstructured{}, ApplyOptions{})
			return err
		},
		wantErr: "FieldManager is required",
	}, {
		name: "missing name",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx, map[string]any{"data": map[string]any{}}, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "needs metadata.name",
	}, {
		name: "namespace disagrees with the client's",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx,
				map[string]any{"metadata": map[string]any{"name": "cm", "namespace": "ns2"}}, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: `("ns2") does not match the client's ("ns1")`,
	}, {
		name: "namespaced resource without any namespace",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Apply(ctx, map[string]any{"metadata": map[string]any{"name": "cm"}}, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "configmaps are namespaced",
	}, {
		name: "dynamic: namespaced object through a cluster-wide client",
		call: func(c *Client) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("example.com/v1")
			u.SetKind("Widget")
			u.SetName("w")
			u.SetNamespace("ns1")
			_, err := NewDynamic(c).Resource(widgetsGVRInternal).Apply(ctx, u, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: `use Namespace("ns1")`,
	}, {
		name: "dynamic: no kind",
		call: func(c *Client) error {
			u := &unstructured.Unstructured{}
			u.SetName("w")
			_, err := NewDynamic(c).Resource(widgetsGVRInternal).Apply(ctx, u, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "needs apiVersion and kind",
	}, {
		name: "managed fields are refused",
		call: func(c *Client) error {
			cm := served.DeepCopy()
			cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: metav1.ManagedFieldsOperationApply}}
			_, err := NewResource(c, ConfigMaps).Apply(ctx, cm, ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "metadata.managedFields set",
	}, {
		name: "nil configuration",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx, (*configMapApply)(nil), ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "configuration is nil",
	}, {
		name: "configuration that is not an object",
		call: func(c *Client) error {
			_, err := NewResource(c, ConfigMaps).Namespace("ns1").Apply(ctx, []byte("kind: ConfigMap"), ApplyOptions{FieldManager: "me"})
			return err
		},
		wantErr: "must encode to a JSON object",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, served) })
			err := tt.call(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if len(rec.reqs) != 0 {
					t.Fatalf("a refused apply was sent: %+v", rec.reqs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := rec.last(t)
			if got.Method != http.MethodPatch || got.Path != tt.path || got.Query != tt.query {
				t.Errorf("sent %s %s?%s, want PATCH %s?%s", got.Method, got.Path, got.Query, tt.path, tt.query)
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
				t.Errorf("Content-Type %q", ct)
			}
			if got.Body != tt.body {
				t.Errorf("body\n%s\nwant\n%s", got.Body, tt.body)
			}
		})
	}
}

var widgetsGVRInternal = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

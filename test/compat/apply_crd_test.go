package compat

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

var gadgetGVR = schema.GroupVersionResource{Group: "ssa.example.com", Version: "v1", Resource: "gadgets"}

// gadgetCRD declares a custom resource whose schema carries the list
// markers server-side apply merges by: users is a map keyed by name, tags
// a set; anything else is atomic.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.ssa.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "ssa.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"color": str,
							"size":  {Type: "integer"},
							"users": {
								Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"},
								Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
									Type: "object", Required: []string{"name"},
									Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str, "role": str},
								}},
							},
							"tags": {Type: "array", XListType: ptr.To("set"), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"phase": str}},
					},
				}},
			}},
		},
	}
}

// installGadgets creates the gadget CRD and waits until it is served.
func installGadgets(t *testing.T, srv *server) {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), gadgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	waitEstablished(t, cs, "gadgets.ssa.example.com")
}

// gadget is an unstructured Gadget named name with the given spec (and
// status, when not nil).
func gadget(name string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ssa.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func gadgetUser(name, role string) map[string]any { return map[string]any{"name": name, "role": role} }

// TestApplyCustomResourceWithDynamicClient applies a custom resource with
// client-go's dynamic client: lists merge as the CRD's x-kubernetes-list-type
// says, conflicts and managedFields follow kube-apiserver, and status goes
// through its subresource.
func TestApplyCustomResourceWithDynamicClient(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	installGadgets(t, srv)
	dc, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	gadgets := dc.Resource(gadgetGVR).Namespace("default")

	if _, err := gadgets.Apply(ctx, "g", gadget("g", map[string]any{
		"color": "red", "size": int64(1), "users": []any{gadgetUser("ann", "admin")}, "tags": []any{"x"},
	}, nil), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatalf("alice's apply: %v", err)
	}
	got, err := gadgets.Apply(ctx, "g", gadget("g", map[string]any{
		"users": []any{gadgetUser("bo", "dev")}, "tags": []any{"y"},
	}, nil), metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("bob's apply: %v", err)
	}
	users, _, _ := unstructured.NestedSlice(got.Object, "spec", "users")
	tags, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "tags")
	if diff := cmp.Diff([]any{gadgetUser("ann", "admin"), gadgetUser("bo", "dev")}, users); diff != "" {
		t.Errorf("users merged by name (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x", "y"}, tags); diff != "" {
		t.Errorf("tags merged as a set (-want +got):\n%s", diff)
	}
	wantFieldSet(t, managedEntry(t, got, "bob", metav1.ManagedFieldsOperationApply, ""),
		`{"f:spec":{"f:tags":{"v:\"y\"":{}},"f:users":{"k:{\"name\":\"bo\"}":{".":{},"f:name":{},"f:role":{}}}}}`)

	_, err = gadgets.Apply(ctx, "g", gadget("g", map[string]any{"color": "blue", "users": []any{gadgetUser("ann", "viewer")}}, nil),
		metav1.ApplyOptions{FieldManager: "carol"})
	wantApplyConflict(t, err, "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.color\n- .spec.users[name=\"ann\"].role",
		conflictCause(`"alice"`, ".spec.color"), conflictCause(`"alice"`, `.spec.users[name="ann"].role`))

	// alice stops applying her tag: x goes, bob's y stays.
	got, err = gadgets.Apply(ctx, "g", gadget("g", map[string]any{
		"color": "red", "size": int64(1), "users": []any{gadgetUser("ann", "admin")},
	}, nil), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("alice without tags: %v", err)
	}
	if tags, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "tags"); !cmp.Equal(tags, []string{"y"}) {
		t.Errorf("tags after alice dropped x = %v, want [y]", tags)
	}
	wantFieldSet(t, managedEntry(t, got, "alice", metav1.ManagedFieldsOperationApply, ""),
		`{"f:spec":{"f:color":{},"f:size":{},"f:users":{"k:{\"name\":\"ann\"}":{".":{},"f:name":{},"f:role":{}}}}}`)

	// Status through the status subresource; a status sent to the main
	// resource is ignored.
	got, err = gadgets.ApplyStatus(ctx, "g", gadget("g", nil, map[string]any{"phase": "Ready"}), metav1.ApplyOptions{FieldManager: "ctrl"})
	if err != nil {
		t.Fatalf("apply status: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("status after apply: %v", got.Object["status"])
	}
	wantFieldSet(t, managedEntry(t, got, "ctrl", metav1.ManagedFieldsOperationApply, "status"), `{"f:status":{"f:phase":{}}}`)
	got, err = gadgets.Apply(ctx, "g", gadget("g", map[string]any{"color": "red"}, map[string]any{"phase": "Broken"}),
		metav1.ApplyOptions{FieldManager: "dave"})
	if err != nil {
		t.Fatalf("apply with status to the main resource: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("status.phase = %q after a main-resource apply, want Ready", phase)
	}
	wantFieldSet(t, managedEntry(t, got, "dave", metav1.ManagedFieldsOperationApply, ""), `{"f:spec":{"f:color":{}}}`)
}

// TestApplyWithControllerRuntime applies with controller-runtime's client:
// the client.Apply patch of a typed object, Client.Apply of a client-go
// apply configuration, and both on an unstructured custom resource and its
// status.
func TestApplyWithControllerRuntime(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	c, err := crclient.New(srv.restConfig(), crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The client.Apply patch type, with a typed object.
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cr", Namespace: "default"},
		Data:       map[string]string{"owner": "patcher"},
	}
	//lint:ignore SA1019 the deprecated patch type is what many operators still send
	if err := c.Patch(ctx, cm, crclient.Apply, crclient.FieldOwner("patcher"), crclient.ForceOwnership); err != nil {
		t.Fatalf("client.Apply patch: %v", err)
	}
	if cm.UID == "" || cm.Data["owner"] != "patcher" {
		t.Fatalf("object after the apply patch: %+v", cm)
	}
	managedEntry(t, cm, "patcher", metav1.ManagedFieldsOperationApply, "")

	// Client.Apply with a client-go apply configuration.
	ac := corev1ac.ConfigMap("cr", "default").WithData(map[string]string{"owner": "applier"})
	err = c.Apply(ctx, ac, crclient.FieldOwner("applier"))
	wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "patcher": .data.owner`,
		conflictCause(`"patcher"`, ".data.owner"))
	if err := c.Apply(ctx, ac, crclient.FieldOwner("applier"), crclient.ForceOwnership); err != nil {
		t.Fatalf("forced Client.Apply: %v", err)
	}
	if ac.UID == nil || ac.Data["owner"] != "applier" {
		t.Errorf("apply configuration not filled from the answer: uid %v data %v", ac.UID, ac.Data)
	}
	var stored corev1.ConfigMap
	if err := c.Get(ctx, crclient.ObjectKeyFromObject(cm), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Data["owner"] != "applier" {
		t.Errorf("stored data %v", stored.Data)
	}
	for _, e := range stored.ManagedFields {
		if e.Manager == "patcher" {
			t.Errorf("patcher still listed after losing its only field: %s", managersOf(&stored))
		}
	}

	// A custom resource, found through discovery after the client was made.
	installGadgets(t, srv)
	if err := c.Apply(ctx, crclient.ApplyConfigurationFromUnstructured(gadget("cr", map[string]any{"color": "green", "size": int64(3)}, nil)),
		crclient.FieldOwner("operator")); err != nil {
		t.Fatalf("Client.Apply of a custom resource: %v", err)
	}
	patch := gadget("cr", map[string]any{"size": int64(4)}, nil)
	//lint:ignore SA1019 as above
	err = c.Patch(ctx, patch, crclient.Apply, crclient.FieldOwner("other"))
	wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "operator": .spec.size`,
		conflictCause(`"operator"`, ".spec.size"))
	if err := c.Status().Apply(ctx, crclient.ApplyConfigurationFromUnstructured(gadget("cr", nil, map[string]any{"phase": "Ready"})),
		crclient.FieldOwner("operator")); err != nil {
		t.Fatalf("Status().Apply: %v", err)
	}
	got := gadget("cr", nil, nil)
	if err := c.Get(ctx, crclient.ObjectKeyFromObject(got), got); err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("status after Status().Apply: %v", got.Object["status"])
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d, want 3 (the conflicting apply must not land)", size)
	}
	wantFieldSet(t, managedEntry(t, got, "operator", metav1.ManagedFieldsOperationApply, ""), `{"f:spec":{"f:color":{},"f:size":{}}}`)
	wantFieldSet(t, managedEntry(t, got, "operator", metav1.ManagedFieldsOperationApply, "status"), `{"f:status":{"f:phase":{}}}`)

	// Dry run through controller-runtime stores nothing.
	if err := c.Apply(ctx, crclient.ApplyConfigurationFromUnstructured(gadget("dry", map[string]any{"color": "x"}, nil)),
		crclient.FieldOwner("operator"), crclient.DryRunAll); err != nil {
		t.Fatalf("dry-run Client.Apply: %v", err)
	}
	if err := c.Get(ctx, crclient.ObjectKey{Namespace: "default", Name: "dry"}, gadget("dry", nil, nil)); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry run: %v, want NotFound", err)
	}
}

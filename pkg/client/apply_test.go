package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// cmConfig is the apply configuration of ConfigMap cm holding data.
func cmConfig(data map[string]any) map[string]any {
	cfg := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}
	if data != nil {
		cfg["data"] = data
	}
	return cfg
}

// managers maps "manager/Operation[/subresource]" to the fields it owns.
func managers(m metav1.ObjectMeta) map[string]string {
	out := map[string]string{}
	for _, e := range m.ManagedFields {
		key := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			key += "/" + e.Subresource
		}
		out[key] = e.FieldsV1.GetRawString()
	}
	return out
}

// TestApplyOwnership walks a ConfigMap through the life server-side apply
// gives it on kube-apiserver: created by an apply, untouched by the same
// apply again, shared by a second manager applying the same value, a
// conflict on a different value (with the causes reachable), taken with
// force, and a field its manager stops applying removed.
func TestApplyOwnership(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	cms := client.NewResource(c, client.ConfigMaps).Namespace("default")
	alice := client.ApplyOptions{FieldManager: "alice"}
	bob := client.ApplyOptions{FieldManager: "bob"}

	// create by apply
	cm, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "one", "b": "two"}), alice)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"alice/Apply": `{"f:data":{"f:a":{},"f:b":{}}}`}, managers(cm.ObjectMeta)); diff != "" {
		t.Fatalf("created: managedFields (-want +got):\n%s", diff)
	}
	if cm.Namespace != "default" || cm.ResourceVersion == "" {
		t.Fatalf("created %s/%s at resourceVersion %q", cm.Namespace, cm.Name, cm.ResourceVersion)
	}

	// a no-op apply keeps the resourceVersion
	again, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "one", "b": "two"}), alice)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("no-op apply wrote: resourceVersion %s -> %s", cm.ResourceVersion, again.ResourceVersion)
	}

	// a second manager applying the same value co-owns it
	shared, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "one", "c": "three"}), bob)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{
		"alice/Apply": `{"f:data":{"f:a":{},"f:b":{}}}`,
		"bob/Apply":   `{"f:data":{"f:a":{},"f:c":{}}}`,
	}, managers(shared.ObjectMeta)); diff != "" {
		t.Fatalf("shared: managedFields (-want +got):\n%s", diff)
	}

	// a different value conflicts; the causes name field and manager
	_, err = cms.Apply(ctx, cmConfig(map[string]any{"a": "uno", "c": "three"}), bob)
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply: %v, want a Conflict", err)
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("conflict %T is not a StatusError", err)
	}
	wantCauses := []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "alice"`, Field: ".data.a"}}
	if se.ErrStatus.Details == nil || !cmp.Equal(se.ErrStatus.Details.Causes, wantCauses) {
		t.Fatalf("conflict details %+v, want causes %+v", se.ErrStatus.Details, wantCauses)
	}
	if want := `Apply failed with 1 conflict: conflict with "alice": .data.a`; se.ErrStatus.Message != want {
		t.Fatalf("conflict message %q, want %q", se.ErrStatus.Message, want)
	}

	// force takes the field
	bob.Force = true
	forced, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "uno", "c": "three"}), bob)
	if err != nil {
		t.Fatal(err)
	}
	if forced.Data["a"] != "uno" {
		t.Fatalf("forced apply: data %v", forced.Data)
	}
	if diff := cmp.Diff(map[string]string{
		"alice/Apply": `{"f:data":{"f:b":{}}}`,
		"bob/Apply":   `{"f:data":{"f:a":{},"f:c":{}}}`,
	}, managers(forced.ObjectMeta)); diff != "" {
		t.Fatalf("forced: managedFields (-want +got):\n%s", diff)
	}

	// a field its only manager stops applying is removed; others stay
	dropped, err := cms.Apply(ctx, cmConfig(nil), alice)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "uno", "c": "three"}, dropped.Data); diff != "" {
		t.Fatalf("after alice dropped b: data (-want +got):\n%s", diff)
	}
}

// TestApplyDryRun checks that a dry-run apply answers with what would be
// stored and stores nothing, neither a create nor a change.
func TestApplyDryRun(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	cms := client.NewResource(c, client.ConfigMaps).Namespace("default")

	got, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "one"}), client.ApplyOptions{FieldManager: "m", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["a"] != "one" {
		t.Fatalf("dry-run create answered data %v", got.Data)
	}
	if _, err := cms.Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a dry-run create, get: %v, want NotFound", err)
	}

	stored, err := cms.Apply(ctx, cmConfig(map[string]any{"a": "one"}), client.ApplyOptions{FieldManager: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = cms.Apply(ctx, cmConfig(map[string]any{"a": "two"}), client.ApplyOptions{FieldManager: "m", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["a"] != "two" {
		t.Fatalf("dry-run change answered data %v", got.Data)
	}
	now, err := cms.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.Data["a"] != "one" || now.ResourceVersion != stored.ResourceVersion {
		t.Fatalf("a dry-run apply changed the object: data %v resourceVersion %s -> %s", now.Data, stored.ResourceVersion, now.ResourceVersion)
	}
}

// TestApplyStatus checks that the status subresource is applied apart
// from the object: the status changes, the spec does not, and the
// manager's status fields are recorded for subresource "status".
func TestApplyStatus(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	deps := client.NewResource(c, client.Deployments).Namespace("default")
	spec := map[string]any{
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"replicas": 2,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	}
	if _, err := deps.Apply(ctx, spec, client.ApplyOptions{FieldManager: "user"}); err != nil {
		t.Fatal(err)
	}
	status := map[string]any{
		"metadata": map[string]any{"name": "web"},
		"spec":     map[string]any{"replicas": 9}, // ignored by the status subresource
		"status":   map[string]any{"replicas": 2, "readyReplicas": 1},
	}
	got, err := deps.ApplyStatus(ctx, status, client.ApplyOptions{FieldManager: "ctrl"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Replicas != 2 || got.Status.ReadyReplicas != 1 || *got.Spec.Replicas != 2 {
		t.Fatalf("after status apply: spec.replicas %d, status %+v", *got.Spec.Replicas, got.Status)
	}
	owners := managers(got.ObjectMeta)
	if _, ok := owners["ctrl/Apply/status"]; !ok {
		t.Fatalf("no status entry for ctrl in %v", owners)
	}

	// The status of a missing object cannot be applied into existence.
	_, err = deps.ApplyStatus(ctx, map[string]any{"metadata": map[string]any{"name": "nope"}, "status": map[string]any{"replicas": 1}},
		client.ApplyOptions{FieldManager: "ctrl"})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("status apply of a missing object: %v, want NotFound", err)
	}
}

// TestApplyTypedObject shows why a typed object is a poor configuration:
// applying a Deployment built from appsv1 types claims fields it never
// set, such as spec.strategy, so another manager's change to them
// conflicts.
func TestApplyTypedObject(t *testing.T) {
	ctx := context.Background()
	c := startServer(t, memory.Config{})
	deps := client.NewResource(c, client.Deployments).Namespace("default")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d.Spec.Template.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, newPod("", nil).Spec.Containers...)
	got, err := deps.Apply(ctx, d, client.ApplyOptions{FieldManager: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	fields := managers(got.ObjectMeta)["typed/Apply"]
	for _, f := range []string{`"f:strategy":{}`, `"f:resources":{}`} {
		if !strings.Contains(fields, f) {
			t.Errorf("typed apply does not own %s: %s", f, fields)
		}
	}
}

// TestApplyCustomResource applies a custom resource and its status
// through the dynamic client: create, conflict between managers, force,
// and a status apply recorded for the status subresource.
func TestApplyCustomResource(t *testing.T) {
	ctx := context.Background()
	c := startCRDServer(t)
	createCRD(t, c, widgetCRD())
	widgets := client.NewDynamic(c).Resource(widgetsGVR).Namespace("default")
	widget := func(color string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"},
			"spec":     map[string]any{"color": color, "replicas": int64(1)},
		}}
	}

	got, err := widgets.Apply(ctx, widget("red"), client.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "red" {
		t.Fatalf("created widget: spec %v", got.Object["spec"])
	}
	rv := got.GetResourceVersion()
	if again, err := widgets.Apply(ctx, widget("red"), client.ApplyOptions{FieldManager: "alice"}); err != nil || again.GetResourceVersion() != rv {
		t.Fatalf("no-op apply: %v, resourceVersion %s -> %s", err, rv, again.GetResourceVersion())
	}

	_, err = widgets.Apply(ctx, widget("blue"), client.ApplyOptions{FieldManager: "bob"})
	var se *apierrors.StatusError
	if !apierrors.IsConflict(err) || !errors.As(err, &se) || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) != 1 ||
		se.ErrStatus.Details.Causes[0].Field != ".spec.color" {
		t.Fatalf("conflicting apply: %#v", err)
	}
	got, err = widgets.Apply(ctx, widget("blue"), client.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "blue" {
		t.Fatalf("forced widget: spec %v", got.Object["spec"])
	}

	st := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"status":   map[string]any{"replicas": int64(1)},
	}}
	got, err = widgets.ApplyStatus(ctx, st, client.ApplyOptions{FieldManager: "ctrl"})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas"); n != 1 {
		t.Fatalf("status after apply: %v", got.Object["status"])
	}
	var m metav1.ObjectMeta
	m.ManagedFields = got.GetManagedFields()
	if f, ok := managers(m)["ctrl/Apply/status"]; !ok || f != `{"f:status":{"f:replicas":{}}}` {
		t.Fatalf("status owners %v", managers(m))
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// testResources resolves names against a test server serving a CRD too.
func testResources(t *testing.T) *resources {
	t.Helper()
	rs, err := newResources(startWidgetEnv(t).Client)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// startWidgetEnv starts a test server that serves widgets.example.com, a
// namespaced custom resource (short name wd) that keeps unknown fields.
func startWidgetEnv(t *testing.T) *testenv.Env {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	return testenv.Start(t, testenv.WithCRDs(crd))
}

func TestSplitTypeName(t *testing.T) {
	rs := testResources(t)
	tests := []struct {
		args      []string
		resource  string
		names     string
		wantErr   string
		wantGroup string
	}{
		{args: []string{"pods"}, resource: "pods"},
		{args: []string{"po", "a", "b"}, resource: "pods", names: "a,b"},
		{args: []string{"deploy/web"}, resource: "deployments", names: "web", wantGroup: "apps"},
		{args: []string{"Deployment", "web"}, resource: "deployments", names: "web"},
		{args: []string{"deployments.apps/web"}, resource: "deployments", names: "web"},
		{args: []string{"rs"}, resource: "replicasets"},
		{args: []string{"leases.coordination.k8s.io"}, resource: "leases"},
		{args: []string{"deployments.core"}, wantErr: "doesn't have a resource type"},
		{args: []string{"gadgets"}, wantErr: `the server doesn't have a resource type "gadgets"`},
		{args: []string{"wd/a"}, resource: "widgets", names: "a", wantGroup: "example.com"},
		{args: []string{"widget.example.com", "a"}, resource: "widgets", names: "a"},
		{args: []string{"deploy/"}, wantErr: "TYPE/NAME"},
		{args: []string{"deploy/a", "b"}, wantErr: "TYPE/NAME"},
		{args: nil, wantErr: "a resource type is required"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r, names, err := rs.splitTypeName(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.resource != tt.resource || strings.Join(names, ",") != tt.names {
				t.Fatalf("got %s %v, want %s %s", r.resource, names, tt.resource, tt.names)
			}
			if tt.wantGroup != "" && r.group != tt.wantGroup {
				t.Fatalf("group %q, want %q", r.group, tt.wantGroup)
			}
		})
	}
}

func TestResourcePathsAndNames(t *testing.T) {
	rs := testResources(t)
	dep, _ := rs.lookup("deployments")
	node, _ := rs.lookup("nodes")
	for _, tt := range []struct{ got, want string }{
		{dep.path("ns1"), "/apis/apps/v1/namespaces/ns1/deployments"},
		{dep.path(""), "/apis/apps/v1/deployments"},
		{node.path("ns1"), "/api/v1/nodes"},
		{qualifiedName(dep, "web"), "deployment.apps/web"},
		{qualifiedName(node, "n"), "node/n"},
		{qualifiedKind(dep), "deployment.apps"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if _, err := rs.lookupKind("apps/v1", "Deployment"); err != nil {
		t.Error(err)
	}
	if _, err := rs.lookupKind("v1", "Deployment"); err == nil {
		t.Error("Deployment found in v1")
	}
	if w, err := rs.lookupKind("example.com/v1", "Widget"); err != nil || w.resource != "widgets" || !w.namespaced {
		t.Errorf("Widget: %+v, %v", w, err)
	}
}

func TestDeploymentStatus(t *testing.T) {
	three := int32(3)
	dep := func(gen, observed int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &three},
			Status: func() appsv1.DeploymentStatus { st.ObservedGeneration = observed; return st }()}
	}
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		want    string
		done    bool
		wantErr string
	}{
		{"not observed", dep(2, 1, appsv1.DeploymentStatus{}), "spec update to be observed", false, ""},
		{"updating", dep(1, 1, appsv1.DeploymentStatus{UpdatedReplicas: 1, Replicas: 3}), "1 out of 3 new replicas have been updated", false, ""},
		{"old terminating", dep(1, 1, appsv1.DeploymentStatus{UpdatedReplicas: 3, Replicas: 4}), "1 old replicas are pending termination", false, ""},
		{"unavailable", dep(1, 1, appsv1.DeploymentStatus{UpdatedReplicas: 3, Replicas: 3, AvailableReplicas: 2}), "2 of 3 updated replicas are available", false, ""},
		{"done", dep(1, 1, appsv1.DeploymentStatus{UpdatedReplicas: 3, Replicas: 3, AvailableReplicas: 3}), `deployment "web" successfully rolled out`, true, ""},
		{"deadline", dep(1, 1, appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded"}}}), "", false, "exceeded its progress deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, done, err := deploymentStatus(tt.d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || done != tt.done || !strings.Contains(msg, tt.want) {
				t.Fatalf("got %q done=%v err=%v, want %q done=%v", msg, done, err, tt.want, tt.done)
			}
		})
	}
}

func TestUndoTarget(t *testing.T) {
	rs := func(name string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	revs := map[int64]*appsv1.ReplicaSet{1: rs("one"), 3: rs("three"), 7: rs("seven")}
	for _, tt := range []struct {
		to      int64
		want    string
		wantErr string
	}{
		{0, "three", ""},
		{1, "one", ""},
		{2, "", "unable to find the specified revision 2"},
	} {
		got, err := undoTarget(revs, tt.to)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("to %d: err = %v, want %q", tt.to, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Name != tt.want {
			t.Errorf("to %d: got %v %v, want %s", tt.to, got, err, tt.want)
		}
	}
	if _, err := undoTarget(map[int64]*appsv1.ReplicaSet{1: rs("one")}, 0); err == nil {
		t.Error("undo with a single revision succeeded")
	}
}

// runCLI runs the kplane command line with args against env, feeding it
// stdin, and returns what it printed and its error.
func runCLI(t *testing.T, env *testenv.Env, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetArgs(append(args, "--kubeconfig", env.KubeconfigPath))
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

const applyManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {a: one, b: two}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: other}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {color: red, size: 3}
`

// TestApplyCommandServerSide checks kplane apply against kubectl apply
// --server-side: what it prints, that fields dropped from the manifest
// are removed, that a second field manager's change conflicts with the
// message naming field and manager and the advice to force, and that
// --force-conflicts and --dry-run=server do what they say.
func TestApplyCommandServerSide(t *testing.T) {
	env := startWidgetEnv(t)
	ctx := context.Background()
	for _, ns := range []string{"team", "other"} {
		if _, err := client.NewResource(env.Client, client.Namespaces).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("team")
	widgets := client.NewDynamic(env.Client).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("team")
	data := func() map[string]string {
		t.Helper()
		cm, err := cms.Get(ctx, "conf", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}

	// Multi-document manifest from stdin; -n is the namespace of the
	// objects that name none.
	out, err := runCLI(t, env, applyManifest, "apply", "-f", "-", "-n", "team")
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if want := "configmap/conf serverside-applied\ndeployment.apps/web serverside-applied\nwidget.example.com/w serverside-applied\n"; out != want {
		t.Fatalf("apply printed\n%s\nwant\n%s", out, want)
	}
	if _, err := client.NewResource(env.Client, client.Deployments).Namespace("other").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("deployment in the manifest's namespace: %v", err)
	}
	cm, err := cms.Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "kplane" || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managedFields %+v, want one Apply entry of manager kplane", cm.ManagedFields)
	}

	// Fields dropped from the manifest disappear: data b, and the
	// widget's spec.size.
	smaller := strings.NewReplacer("data: {a: one, b: two}", "data: {a: one}", "spec: {color: red, size: 3}", "spec: {color: red}").Replace(applyManifest)
	if out, err := runCLI(t, env, smaller, "apply", "-f", "-", "-n", "team"); err != nil {
		t.Fatalf("second apply: %v\n%s", err, out)
	}
	if diff := cmp.Diff(map[string]string{"a": "one"}, data()); diff != "" {
		t.Fatalf("data after dropping b (-want +got):\n%s", diff)
	}
	w, err := widgets.Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"color": "red"}, w.Object["spec"]); diff != "" {
		t.Fatalf("widget spec after dropping size (-want +got):\n%s", diff)
	}

	// Another field manager changing data a conflicts, and is told how to
	// resolve it; nothing changes.
	conflicting := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: team}\ndata: {a: uno}\n"
	out, err = runCLI(t, env, conflicting, "apply", "-f", "-", "--field-manager", "ops")
	if err == nil {
		t.Fatalf("conflicting apply succeeded:\n%s", out)
	}
	for _, want := range []string{`Apply failed with 1 conflict: conflict with "kplane": .data.a`, "--force-conflicts", "server-side-apply/#conflicts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict error %q does not say %q", err, want)
		}
	}
	if got := data()["a"]; got != "one" {
		t.Fatalf("a conflicting apply changed data a to %q", got)
	}

	// --dry-run=server prints the apply and stores nothing.
	out, err = runCLI(t, env, conflicting, "apply", "-f", "-", "--field-manager", "ops", "--force-conflicts", "--dry-run=server")
	if err != nil || out != "configmap/conf serverside-applied (server dry run)\n" {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if got := data()["a"]; got != "one" {
		t.Fatalf("a dry run changed data a to %q", got)
	}

	// --force-conflicts takes the field.
	if out, err := runCLI(t, env, conflicting, "apply", "-f", "-", "--field-manager", "ops", "--force-conflicts"); err != nil {
		t.Fatalf("forced apply: %v\n%s", err, out)
	}
	if got := data()["a"]; got != "uno" {
		t.Fatalf("after a forced apply data a is %q, want uno", got)
	}
}

func TestApplyCommandRefusesBadInput(t *testing.T) {
	env := startWidgetEnv(t)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\n"
	for _, tt := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"no file", cm, "-f is required", nil},
		{"empty field manager", cm, "--field-manager may not be empty", []string{"-f", "-", "--field-manager="}},
		{"client dry run", cm, "--dry-run=client is not supported", []string{"-f", "-", "--dry-run=client"}},
		{"unknown dry run", cm, `--dry-run must be none or server, not "all"`, []string{"-f", "-", "--dry-run=all"}},
		{"no kind", "metadata: {name: x}\n", "document 1: apiVersion and kind are required", []string{"-f", "-"}},
		{"no name", "apiVersion: v1\nkind: ConfigMap\n", "document 1: metadata.name is required", []string{"-f", "-"}},
		{"unknown kind", "apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n", `no resource for kind "Gadget"`, []string{"-f", "-"}},
		{"invalid object", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Valid}\n", "Not_Valid", []string{"-f", "-"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(t, env, tt.stdin, append([]string{"apply"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tt.want, out)
			}
		})
	}
}

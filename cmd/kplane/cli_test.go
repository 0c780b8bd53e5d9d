package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/testenv"
)

// testResources resolves names against a test server serving a CRD too.
func testResources(t *testing.T) *resources {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	env := testenv.Start(t, testenv.WithCRDs(crd))
	rs, err := newResources(env.Client)
	if err != nil {
		t.Fatal(err)
	}
	return rs
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

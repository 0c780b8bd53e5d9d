package tables

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func objectMeta(name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age), ResourceVersion: "7"}
}

func columnNames(cols []metav1.TableColumnDefinition) []string {
	var out []string
	for _, c := range cols {
		name := c.Name
		if c.Priority > 0 {
			name += "*"
		}
		out = append(out, name)
	}
	return out
}

func TestConvertKinds(t *testing.T) {
	podTemplate := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1"}, {Name: "sidecar", Image: "envoy:1"},
		}},
	}
	tests := []struct {
		name      string
		obj       runtime.Object
		wantCols  []string // names, "*" marking priority 1
		wantCells []any
	}{
		{
			name: "deployment",
			obj: &appsv1.Deployment{
				ObjectMeta: objectMeta("web", 52*time.Hour),
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](3),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: podTemplate,
				},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
			},
			wantCols:  []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"web", "2/3", int64(3), int64(2), "2d4h", "app,sidecar", "nginx:1,envoy:1", "app=web"},
		},
		{
			name: "deployment with expressions in its selector",
			obj: &appsv1.Deployment{
				ObjectMeta: objectMeta("web", 30*time.Second),
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}},
					Template: podTemplate,
				},
			},
			wantCols:  []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"web", "0/0", int64(0), int64(0), "30s", "app,sidecar", "nginx:1,envoy:1", "tier in (api,web)"},
		},
		{
			name: "replica set",
			obj: &appsv1.ReplicaSet{
				ObjectMeta: objectMeta("web-7d4b9", 10*time.Second),
				Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr.To[int32](3),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "7d4b9"}},
					Template: podTemplate,
				},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1},
			},
			wantCols:  []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"},
			wantCells: []any{"web-7d4b9", int64(3), int64(3), int64(1), "10s", "app,sidecar", "nginx:1,envoy:1", "app=web,pod-template-hash=7d4b9"},
		},
		{
			name:      "namespace",
			obj:       &corev1.Namespace{ObjectMeta: objectMeta("default", 200*time.Second), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			wantCols:  []string{"Name", "Status", "Age"},
			wantCells: []any{"default", "Active", "3m20s"},
		},
		{
			name: "terminating namespace",
			obj: &corev1.Namespace{ObjectMeta: objectMeta("old", 400*24*time.Hour),
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			wantCols:  []string{"Name", "Status", "Age"},
			wantCells: []any{"old", "Terminating", "400d"},
		},
		{
			name: "ready, cordoned node with roles",
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(3 * time.Hour), Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker", "node-role.kubernetes.io/": "x",
				}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-1"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.2"}},
					NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "kplane", ContainerRuntimeVersion: "sim://1"},
				},
			},
			wantCols:  []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			wantCells: []any{"node-1", "Ready,SchedulingDisabled", "control-plane,worker", "3h", "v1.37.2", "10.0.0.1", "<none>", "kplane", "<unknown>", "sim://1"},
		},
		{
			name: "not ready node",
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "node-2", CreationTimestamp: ago(time.Minute)},
				Status: corev1.NodeStatus{
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}},
					Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}},
				},
			},
			wantCols:  []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			wantCells: []any{"node-2", "NotReady", "<none>", "60s", "", "<none>", "203.0.113.9", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:      "node without conditions",
			obj:       &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}},
			wantCols:  []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"},
			wantCells: []any{"node-3", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name: "core event",
			obj: &corev1.Event{
				ObjectMeta:     objectMeta("web-1.17a", 5*time.Minute),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{app}"},
				Reason:         "Started", Message: "Started container app\n", Type: corev1.EventTypeNormal,
				Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
				FirstTimestamp: ago(5 * time.Minute), LastTimestamp: ago(30 * time.Second), Count: 3,
			},
			wantCols:  []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			wantCells: []any{"30s", "Normal", "Started", "pod/web-1", "spec.containers{app}", "kubelet, node-1", "Started container app", "5m", int64(3), "web-1.17a"},
		},
		{
			name: "events.k8s.io style event",
			obj: &corev1.Event{
				ObjectMeta:          objectMeta("lease.1", 45*time.Second),
				InvolvedObject:      corev1.ObjectReference{Kind: "Lease"},
				Reason:              "LeaderElection",
				Type:                corev1.EventTypeNormal,
				EventTime:           metav1.NewMicroTime(now.Add(-45 * time.Second)),
				ReportingController: "kplane-controller-manager",
			},
			wantCols:  []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			wantCells: []any{"45s", "Normal", "LeaderElection", "lease", "", "kplane-controller-manager", "", "45s", int64(1), "lease.1"},
		},
		{
			name: "event series",
			obj: &corev1.Event{
				ObjectMeta:     objectMeta("web.2", time.Hour),
				InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web"},
				Type:           corev1.EventTypeWarning, Reason: "Failed",
				FirstTimestamp: ago(time.Hour), LastTimestamp: ago(50 * time.Minute), Count: 2,
				Series:              &corev1.EventSeries{Count: 9, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Second))},
				Source:              corev1.EventSource{Host: "node-9"},
				ReportingController: "deployment-controller",
			},
			wantCols:  []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"},
			wantCells: []any{"5s", "Warning", "Failed", "deployment/web", "", "deployment-controller, node-9", "", "60m", int64(9), "web.2"},
		},
		{
			name: "config map",
			obj: &corev1.ConfigMap{ObjectMeta: objectMeta("settings", 8*24*time.Hour),
				Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {3}}},
			wantCols:  []string{"Name", "Data", "Age"},
			wantCells: []any{"settings", int64(3), "8d"},
		},
		{
			name: "secret",
			obj: &corev1.Secret{ObjectMeta: objectMeta("token", 5*time.Second), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": []byte("a"), "password": []byte("b")}},
			wantCols:  []string{"Name", "Type", "Data", "Age"},
			wantCells: []any{"token", "Opaque", int64(2), "5s"},
		},
		{
			name:      "held lease",
			obj:       &coordinationv1.Lease{ObjectMeta: objectMeta("kplane-controller-manager", 7*time.Hour+59*time.Minute), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("host-a_1234")}},
			wantCols:  []string{"Name", "Holder", "Age"},
			wantCells: []any{"kplane-controller-manager", "host-a_1234", "7h59m"},
		},
		{
			name:      "free lease",
			obj:       &coordinationv1.Lease{ObjectMeta: objectMeta("free", 2*time.Minute)},
			wantCols:  []string{"Name", "Holder", "Age"},
			wantCells: []any{"free", "", "2m"},
		},
		{
			name: "scale subresource",
			obj: &autoscalingv1.Scale{ObjectMeta: objectMeta("web", 52*time.Hour),
				Spec: autoscalingv1.ScaleSpec{Replicas: 3}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}},
			wantCols:  []string{"Name", "Desired", "Available", "Age"},
			wantCells: []any{"web", int64(3), int64(2), "2d4h"},
		},
		{
			name:      "resource without a printer",
			obj:       &metav1.PartialObjectMetadata{ObjectMeta: objectMeta("api", 5*time.Minute)},
			wantCols:  []string{"Name", "Created At"},
			wantCells: []any{"api", "2026-11-29T11:55:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Convert(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCols, columnNames(table.ColumnDefinitions)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if diff := cmp.Diff(tt.wantCells, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			if n, c := len(table.ColumnDefinitions), len(table.Rows[0].Cells); n != c {
				t.Errorf("%d columns but %d cells", n, c)
			}
		})
	}
}

func TestColumnDefinitions(t *testing.T) {
	table, err := Convert(&corev1.PodList{}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
	}
	if diff := cmp.Diff(want, table.ColumnDefinitions); diff != "" {
		t.Fatalf("pod columns (-want +got):\n%s", diff)
	}
	for _, c := range want {
		if c.Description == "" {
			t.Errorf("column %s has no description", c.Name)
		}
	}
	// Returned definitions are the caller's to change.
	table.ColumnDefinitions[0].Name = "changed"
	again, err := Convert(&corev1.PodList{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if again.ColumnDefinitions[0].Name != "Name" {
		t.Fatal("changing one table's columns changed the next table's")
	}
}

func TestConvertList(t *testing.T) {
	remaining := int64(5)
	list := &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next-page", RemainingItemCount: &remaining},
		Items:    []corev1.Pod{*pod("a"), *pod("b")},
	}
	list.Items[0].Name, list.Items[1].Name = "web-a", "web-b"
	list.Items[0].Labels = map[string]string{"app": "web"}
	list.Items[0].UID = "uid-a"
	table, err := Convert(list, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(metav1.ListMeta{ResourceVersion: "42", Continue: "next-page", RemainingItemCount: &remaining}, table.ListMeta); diff != "" {
		t.Errorf("list meta (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, table.TypeMeta); diff != "" {
		t.Errorf("type meta (-want +got):\n%s", diff)
	}
	var names []any
	for _, r := range table.Rows {
		names = append(names, r.Cells[0])
	}
	if diff := cmp.Diff([]any{"web-a", "web-b"}, names); diff != "" {
		t.Errorf("row names (-want +got):\n%s", diff)
	}
	partial, ok := table.Rows[0].Object.Object.(*metav1.PartialObjectMetadata)
	if !ok {
		t.Fatalf("row object is %T, want *metav1.PartialObjectMetadata", table.Rows[0].Object.Object)
	}
	wantPartial := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: list.Items[0].ObjectMeta,
	}
	if diff := cmp.Diff(wantPartial, partial); diff != "" {
		t.Errorf("row metadata (-want +got):\n%s", diff)
	}
	// The table shares no memory with the list.
	partial.Labels["app"] = "changed"
	if list.Items[0].Labels["app"] != "web" {
		t.Error("changing the row metadata changed the listed object")
	}

	t.Run("empty list keeps the kind's columns", func(t *testing.T) {
		table, err := Convert(&appsv1.DeploymentList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := columnNames(table.ColumnDefinitions); got[1] != "Ready" || len(got) != 8 {
			t.Errorf("columns = %v", got)
		}
		if table.Rows == nil || len(table.Rows) != 0 || table.ResourceVersion != "9" {
			t.Errorf("rows = %#v, resourceVersion %q; want an empty, non-nil slice and 9", table.Rows, table.ResourceVersion)
		}
		b, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any
		if err := json.Unmarshal(b, &decoded); err != nil {
			t.Fatal(err)
		}
		if rows, ok := decoded["rows"].([]any); !ok || len(rows) != 0 {
			t.Errorf("rows encode as %v, want []", decoded["rows"])
		}
	})
	t.Run("list of a kind without a printer", func(t *testing.T) {
		table, err := Convert(&metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: objectMeta("api", time.Minute)}}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"Name", "Created At"}, columnNames(table.ColumnDefinitions)); diff != "" {
			t.Errorf("columns (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]any{"api", "2026-11-29T11:59:00Z"}, table.Rows[0].Cells); diff != "" {
			t.Errorf("cells (-want +got):\n%s", diff)
		}
	})
}

func TestConvertOptions(t *testing.T) {
	p := pod("app")
	p.ResourceVersion = "11"
	p.Status.Phase = corev1.PodRunning
	tests := []struct {
		name       string
		opts       metav1.TableOptions
		wantObject runtime.Object
		wantCols   int
	}{
		{
			name: "default is metadata",
			wantObject: &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
				ObjectMeta: p.ObjectMeta,
			},
			wantCols: 9,
		},
		{
			name: "metadata",
			opts: metav1.TableOptions{IncludeObject: metav1.IncludeMetadata},
			wantObject: &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
				ObjectMeta: p.ObjectMeta,
			},
			wantCols: 9,
		},
		{name: "none", opts: metav1.TableOptions{IncludeObject: metav1.IncludeNone}, wantCols: 9},
		{name: "object", opts: metav1.TableOptions{IncludeObject: metav1.IncludeObject}, wantObject: p, wantCols: 9},
		{name: "no headers", opts: metav1.TableOptions{NoHeaders: true, IncludeObject: metav1.IncludeNone}, wantCols: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := ConvertWith(p, now, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if table.ResourceVersion != "11" {
				t.Errorf("table resourceVersion = %q, want the object's, 11", table.ResourceVersion)
			}
			if len(table.ColumnDefinitions) != tt.wantCols {
				t.Errorf("got %d columns, want %d", len(table.ColumnDefinitions), tt.wantCols)
			}
			got := table.Rows[0].Object.Object
			if tt.wantObject == nil {
				if got != nil {
					t.Fatalf("row object = %T, want none", got)
				}
				return
			}
			if diff := cmp.Diff(tt.wantObject, got); diff != "" {
				t.Fatalf("row object (-want +got):\n%s", diff)
			}
			if got == runtime.Object(p) {
				t.Fatal("the row holds the caller's object rather than a copy")
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name     string
		obj      runtime.Object
		opts     metav1.TableOptions
		wantCode int32
	}{
		{"unknown includeObject", pod("app"), metav1.TableOptions{IncludeObject: "Everything"}, http.StatusBadRequest},
		{"nil object", nil, metav1.TableOptions{}, http.StatusBadRequest},
		{"nil pod", (*corev1.Pod)(nil), metav1.TableOptions{}, http.StatusBadRequest},
		{"object without metadata", &metav1.Status{Status: "Success"}, metav1.TableOptions{}, http.StatusNotAcceptable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ConvertWith(tt.obj, now, tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			status, ok := err.(*apierrors.StatusError)
			if !ok {
				t.Fatalf("error %v is a %T, want *apierrors.StatusError", err, err)
			}
			if status.ErrStatus.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d (%v)", status.ErrStatus.Code, tt.wantCode, err)
			}
		})
	}
}

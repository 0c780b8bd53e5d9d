package client

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// TestRequestWire checks that every verb sends what client-go sends: the
// method, path, query, headers and body.
func TestRequestWire(t *testing.T) {
	ctx := context.Background()
	pod := testPod("ns1", "p1")
	served := pod.DeepCopy()
	served.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	served.ResourceVersion = "7"
	servedList := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "tok"},
		Items:    []corev1.Pod{*served},
	}
	scale := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "ns1", ResourceVersion: "3"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 4},
	}
	podBody := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p1","namespace":"ns1","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{}}]},"status":{}}`

	tests := []struct {
		name      string
		reply     any
		call      func(c *Client) error
		want      recorded // Header holds only the headers checked
		wantError bool
	}{{
		name:  "get",
		reply: served,
		call: func(c *Client) error {
			got, err := NewResource(c, Pods).Namespace("ns1").Get(ctx, "p1", metav1.GetOptions{ResourceVersion: "0"})
			if err == nil && got.ResourceVersion != "7" {
				t.Errorf("get returned resourceVersion %q, want 7", got.ResourceVersion)
			}
			return err
		},
		want: recorded{Method: "GET", Path: "/api/v1/namespaces/ns1/pods/p1", Query: "resourceVersion=0",
			Header: http.Header{"Accept": {"application/json"}}},
	}, {
		name:  "get cluster-scoped ignores namespace",
		reply: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		call: func(c *Client) error {
			_, err := NewResource(c, Nodes).Namespace("ns1").Get(ctx, "n1", metav1.GetOptions{})
			return err
		},
		want: recorded{Method: "GET", Path: "/api/v1/nodes/n1"},
	}, {
		name:  "list with every option",
		reply: servedList,
		call: func(c *Client) error {
			l, err := NewResource(c, Pods).Namespace("ns1").List(ctx, metav1.ListOptions{
				LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1",
				ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				Limit: 10, Continue: "abc", TimeoutSeconds: ptr.To[int64](30),
			})
			if err == nil {
				if diff := cmp.Diff([]*corev1.Pod{served}, l.Items); diff != "" {
					t.Errorf("list items (-want +got):\n%s", diff)
				}
				if l.ResourceVersion != "9" || l.Continue != "tok" {
					t.Errorf("list meta = %+v", l.ListMeta)
				}
			}
			return err
		},
		want: recorded{Method: "GET", Path: "/api/v1/namespaces/ns1/pods",
			Query: "continue=abc&fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb&limit=10&resourceVersion=5&resourceVersionMatch=NotOlderThan&timeoutSeconds=30"},
	}, {
		name:  "list all namespaces of a group resource",
		reply: &appsv1.DeploymentList{},
		call: func(c *Client) error {
			_, err := NewResource(c, Deployments).List(ctx, metav1.ListOptions{})
			return err
		},
		want: recorded{Method: "GET", Path: "/apis/apps/v1/deployments"},
	}, {
		name:  "create sets kind and apiVersion, namespace from object",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).Create(ctx, pod, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldManager: "mgr", FieldValidation: "Strict"})
			return err
		},
		want: recorded{Method: "POST", Path: "/api/v1/namespaces/ns1/pods",
			Query:  "dryRun=All&fieldManager=mgr&fieldValidation=Strict",
			Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}},
			Body:   podBody},
	}, {
		name:  "update",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).Namespace("ns1").Update(ctx, pod, metav1.UpdateOptions{})
			return err
		},
		want: recorded{Method: "PUT", Path: "/api/v1/namespaces/ns1/pods/p1", Body: podBody,
			Header: http.Header{"Content-Type": {"application/json"}}},
	}, {
		name:  "update status",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"})
			return err
		},
		want: recorded{Method: "PUT", Path: "/api/v1/namespaces/ns1/pods/p1/status", Query: "fieldManager=kubelet", Body: podBody},
	}, {
		name:  "strategic merge patch",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).Namespace("ns1").Patch(ctx, "p1", types.StrategicMergePatchType,
				[]byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{FieldManager: "m"})
			return err
		},
		want: recorded{Method: "PATCH", Path: "/api/v1/namespaces/ns1/pods/p1", Query: "fieldManager=m",
			Header: http.Header{"Content-Type": {"application/strategic-merge-patch+json"}},
			Body:   `{"metadata":{"labels":{"a":"b"}}}`},
	}, {
		name:  "json patch of the status subresource",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).Namespace("ns1").Patch(ctx, "p1", types.JSONPatchType,
				[]byte(`[{"op":"add","path":"/status/phase","value":"Running"}]`), metav1.PatchOptions{}, "status")
			return err
		},
		want: recorded{Method: "PATCH", Path: "/api/v1/namespaces/ns1/pods/p1/status",
			Header: http.Header{"Content-Type": {"application/json-patch+json"}},
			Body:   `[{"op":"add","path":"/status/phase","value":"Running"}]`},
	}, {
		name:  "merge patch with force",
		reply: served,
		call: func(c *Client) error {
			_, err := NewResource(c, Pods).Namespace("ns1").Patch(ctx, "p1", types.MergePatchType,
				[]byte(`{}`), metav1.PatchOptions{Force: ptr.To(true)})
			return err
		},
		want: recorded{Method: "PATCH", Path: "/api/v1/namespaces/ns1/pods/p1", Query: "force=true",
			Header: http.Header{"Content-Type": {"application/merge-patch+json"}}, Body: `{}`},
	}, {
		name:  "delete sends options as the body",
		reply: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess},
		call: func(c *Client) error {
			return NewResource(c, Deployments).Namespace("ns1").Delete(ctx, "d1", metav1.DeleteOptions{
				PropagationPolicy:  ptr.To(metav1.DeletePropagationForeground),
				GracePeriodSeconds: ptr.To[int64](0),
				Preconditions:      &metav1.Preconditions{UID: ptr.To(types.UID("u1")), ResourceVersion: ptr.To("4")},
			})
		},
		want: recorded{Method: "DELETE", Path: "/apis/apps/v1/namespaces/ns1/deployments/d1",
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","gracePeriodSeconds":0,"preconditions":{"uid":"u1","resourceVersion":"4"},"propagationPolicy":"Foreground"}`},
	}, {
		name:  "delete collection",
		reply: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess},
		call: func(c *Client) error {
			return NewResource(c, ConfigMaps).Namespace("ns1").DeleteCollection(ctx,
				metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "x in (a,b)"})
		},
		want: recorded{Method: "DELETE", Path: "/api/v1/namespaces/ns1/configmaps", Query: "labelSelector=x+in+%28a%2Cb%29",
			Body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`},
	}, {
		name:  "get scale",
		reply: scale,
		call: func(c *Client) error {
			s, err := NewResource(c, Deployments).Namespace("ns1").GetScale(ctx, "d1", metav1.GetOptions{})
			if err == nil && s.Spec.Replicas != 4 {
				t.Errorf("scale replicas = %d, want 4", s.Spec.Replicas)
			}
			return err
		},
		want: recorded{Method: "GET", Path: "/apis/apps/v1/namespaces/ns1/deployments/d1/scale"},
	}, {
		name:  "update scale",
		reply: scale,
		call: func(c *Client) error {
			_, err := NewResource(c, ReplicaSets).Namespace("ns1").UpdateScale(ctx, "d1",
				&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "ns1"}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
				metav1.UpdateOptions{})
			return err
		},
		want: recorded{Method: "PUT", Path: "/apis/apps/v1/namespaces/ns1/replicasets/d1/scale",
			Body: `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"d1","namespace":"ns1"},"spec":{"replicas":2},"status":{"replicas":0}}`},
	}, {
		name:  "lease in coordination group",
		reply: &metav1.Status{},
		call: func(c *Client) error {
			return NewResource(c, Leases).Namespace("kube-system").Delete(ctx, "lock", metav1.DeleteOptions{})
		},
		want: recorded{Method: "DELETE", Path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lock",
			Body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1"}`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, tt.reply) })
			if err := tt.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			got := rec.last(t)
			if got.Method != tt.want.Method || got.Path != tt.want.Path || got.Query != tt.want.Query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, tt.want.Method, tt.want.Path, tt.want.Query)
			}
			if tt.want.Body != "" || got.Body != "" {
				if got.Body != tt.want.Body {
					t.Errorf("body:\n got %s\nwant %s", got.Body, tt.want.Body)
				}
			}
			for k, v := range tt.want.Header {
				if diff := cmp.Diff(v, got.Header.Values(k)); diff != "" {
					t.Errorf("header %s (-want +got):\n%s", k, diff)
				}
			}
			if ua := got.Header.Get("User-Agent"); ua != "kplane-test/1.0" {
				t.Errorf("User-Agent = %q", ua)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer secret" {
				t.Errorf("Authorization = %q", a)
			}
		})
	}
}

// TestCreateDoesNotModifyInput checks that filling in apiVersion and kind
// happens on a copy.
func TestCreateDoesNotModifyInput(t *testing.T) {
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusCreated, testPod("a", "b")) })
	pod := testPod("ns1", "p1")
	want := pod.DeepCopy()
	if _, err := NewResource(c, Pods).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("input changed (-before +after):\n%s", diff)
	}
}

func TestBadArguments(t *testing.T) {
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, testPod("a", "b")) })
	ctx := context.Background()
	pods := NewResource(c, Pods).Namespace("ns1")
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"empty name", func() error { _, err := pods.Get(ctx, "", metav1.GetOptions{}); return err }, "name may not be empty"},
		{"slash in name", func() error { _, err := pods.Get(ctx, "a/b", metav1.GetOptions{}); return err }, "may not contain"},
		{"dot-dot name", func() error { return pods.Delete(ctx, "..", metav1.DeleteOptions{}) }, `may not be ".."`},
		{"bad namespace", func() error {
			_, err := NewResource(c, Pods).Namespace("a%2f").List(ctx, metav1.ListOptions{})
			return err
		}, "namespace"},
		{"nil object", func() error { _, err := pods.Create(ctx, nil, metav1.CreateOptions{}); return err }, "nil"},
		{"update without name", func() error { _, err := pods.Update(ctx, &corev1.Pod{}, metav1.UpdateOptions{}); return err }, "name may not be empty"},
		{"patch without type", func() error { _, err := pods.Patch(ctx, "p", "", nil, metav1.PatchOptions{}); return err }, "patch type"},
		{"nil scale", func() error { _, err := pods.UpdateScale(ctx, "p", nil, metav1.UpdateOptions{}); return err }, "nil"},
		{"namespaced get without namespace", func() error {
			_, err := NewResource(c, Pods).Get(ctx, "p", metav1.GetOptions{})
			return err
		}, "namespaced"},
		{"namespaced create without namespace", func() error {
			_, err := NewResource(c, Pods).Create(ctx, testPod("", "p"), metav1.CreateOptions{})
			return err
		}, "namespaced"},
		{"descriptor without version", func() error {
			_, err := NewResource(c, Resource[*corev1.Pod]{}).List(ctx, metav1.ListOptions{})
			return err
		}, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 0 {
		t.Errorf("bad arguments reached the server: %+v", rec.reqs)
	}
}

// TestDecodeFailures checks that answers that are not the expected object
// are errors, not zero values.
func TestDecodeFailures(t *testing.T) {
	for _, body := range []string{`null`, `{"metadata":`, `[1,2]`} {
		t.Run(body, func(t *testing.T) {
			_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			})
			if _, err := NewResource(c, Pods).Namespace("a").Get(context.Background(), "p", metav1.GetOptions{}); err == nil {
				t.Error("Get succeeded")
			}
		})
	}
	t.Run("null list item", func(t *testing.T) {
		_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"PodList","items":[null]}`))
		})
		if _, err := NewResource(c, Pods).List(context.Background(), metav1.ListOptions{}); err == nil {
			t.Error("List succeeded")
		}
	})
}

// TestCustomResourceDescriptor checks that any type can be described.
func TestCustomResourceDescriptor(t *testing.T) {
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "ServiceAccountList", "items": []any{map[string]any{"metadata": map[string]any{"name": "sa"}}}})
	})
	sas := Resource[*corev1.ServiceAccount]{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount", Namespaced: true}
	l, err := NewResource(c, sas).Namespace("x").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "sa" {
		t.Errorf("items = %+v", l.Items)
	}
	if got := rec.last(t).Path; got != "/api/v1/namespaces/x/serviceaccounts" {
		t.Errorf("path = %s", got)
	}
}

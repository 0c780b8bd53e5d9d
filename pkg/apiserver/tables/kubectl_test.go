package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// tableServer answers discovery and lists of pods and deployments as
// Tables when asked for them, the way kube-apiserver does for kubectl get.
func tableServer(t *testing.T, lists map[string]runtime.Object) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := func(v any) {
			w.Header().Set("Content-Type", "application/json")
			if err := json.NewEncoder(w).Encode(v); err != nil {
				t.Errorf("encode: %v", err)
			}
		}
		resource := func(name, kind string, namespaced bool) metav1.APIResource {
			return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: metav1.Verbs{"get", "list"}}
		}
		switch p := r.URL.Path; p {
		case "/api":
			reply(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
				ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
		case "/apis":
			gv := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
			reply(metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
				Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
		case "/api/v1":
			reply(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
				APIResources: []metav1.APIResource{resource("pods", "Pod", true), resource("nodes", "Node", false)}})
		case "/apis/apps/v1":
			reply(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "apps/v1",
				APIResources: []metav1.APIResource{resource("deployments", "Deployment", true)}})
		default:
			list, ok := lists[p]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				reply(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Reason: metav1.StatusReasonNotFound, Code: 404})
				return
			}
			if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
				reply(list)
				return
			}
			table, err := Convert(list, now)
			if err != nil {
				t.Errorf("convert: %v", err)
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			reply(table)
		}
	})
}

// TestKubectlGet prints Tables with the installed kubectl and compares its
// output with what kubectl shows for the same objects against Kubernetes.
func TestKubectlGet(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	if testing.Short() {
		t.Skip("runs kubectl; skipped under -short")
	}

	ready := pod("app")
	ready.Name, ready.Labels = "web-a", map[string]string{"app": "web"}
	ready.Spec.NodeName = "node-1"
	ready.Status.Phase = corev1.PodRunning
	ready.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}}
	ready.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 0)}

	crashing := pod("app")
	crashing.Name, crashing.Namespace = "web-b", "prod"
	crashing.Status.Phase = corev1.PodRunning
	s := waiting("app", "CrashLoopBackOff")
	s.RestartCount = 5
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(90 * time.Second)}
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{s}

	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}, Items: []corev1.Pod{*ready, *crashing}}
	deployments := &appsv1.DeploymentList{Items: []appsv1.Deployment{{
		ObjectMeta: objectMeta("web", 52*time.Hour),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
	}}}
	srv := httptest.NewServer(tableServer(t, map[string]runtime.Object{
		"/api/v1/namespaces/default/pods":              pods,
		"/api/v1/pods":                                 pods,
		"/apis/apps/v1/namespaces/default/deployments": deployments,
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: default}}]
current-context: fake
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		args []string
		want string
	}{
		{
			args: []string{"get", "pods"},
			want: `
NAME    READY   STATUS             RESTARTS      AGE
web-a   1/1     Running            0             5m
web-b   0/1     CrashLoopBackOff   5 (90s ago)   5m
`,
		},
		{
			args: []string{"get", "pods", "-o", "wide"},
			want: `
NAME    READY   STATUS             RESTARTS      AGE   IP         NODE     NOMINATED NODE   READINESS GATES
web-a   1/1     Running            0             5m    10.0.0.5   node-1   <none>           <none>
web-b   0/1     CrashLoopBackOff   5 (90s ago)   5m    <none>     <none>   <none>           <none>
`,
		},
		{
			// The namespace and labels come from the rows' metadata.
			args: []string{"get", "pods", "--all-namespaces", "--show-labels"},
			want: `
NAMESPACE   NAME    READY   STATUS             RESTARTS      AGE   LABELS
default     web-a   1/1     Running            0             5m    app=web
prod        web-b   0/1     CrashLoopBackOff   5 (90s ago)   5m    <none>
`,
		},
		{
			args: []string{"get", "deployments", "-o", "wide"},
			want: `
NAME   READY   UP-TO-DATE   AVAILABLE   AGE    CONTAINERS   IMAGES    SELECTOR
web    2/3     3            2           2d4h   app          nginx:1   app=web
`,
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(tt.args, "--kubeconfig="+kubeconfig, "--cache-dir="+filepath.Join(dir, "cache"))
			cmd := exec.CommandContext(ctx, kubectl, args...)
			cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+kubeconfig)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, stderr.String())
			}
			if got, want := stdout.String(), strings.TrimPrefix(tt.want, "\n"); got != want {
				t.Fatalf("kubectl %s printed:\n%s\nwant:\n%s", strings.Join(tt.args, " "), got, want)
			}
		})
	}
}

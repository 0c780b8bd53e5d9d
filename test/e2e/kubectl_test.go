package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectlStep is one kubectl invocation of a session and what it must print.
type kubectlStep struct {
	args  []string
	stdin string
	env   []string
	// fail tells whether kubectl must exit non-zero.
	fail bool
	// want are substrings of the combined output, in order; exact, when
	// set, is the whole trimmed output.
	want  []string
	exact string
}

// podEvent is an event about the pod "p1" of namespace "demo"; UID is
// filled in by the session.
const podEvent = `apiVersion: v1
kind: Event
metadata: {name: p1.scheduled, namespace: demo}
involvedObject: {apiVersion: v1, kind: Pod, name: p1, namespace: demo, uid: UID}
reason: Scheduled
message: Successfully assigned demo/p1 to n1
type: Normal
source: {component: default-scheduler}
count: 1
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
`

// readyNode is a node as a node agent registers it: with its status.
const readyNode = `apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady, message: ready, lastHeartbeatTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
  addresses: [{type: InternalIP, address: 10.0.0.1}]
  nodeInfo: {kubeletVersion: v1.37.2, osImage: Linux, kernelVersion: "6.1", containerRuntimeVersion: "containerd://2.0", machineID: m, systemUUID: s, bootID: b, kubeProxyVersion: "", operatingSystem: linux, architecture: amd64}
`

// multiDoc is a manifest of several objects, applied and re-applied.
const multiDoc = `apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: demo}
data: {mode: slow}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: demo, labels: {app: api}}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - {name: api, image: "api:1"}
`

// TestKubectlSession drives the server the way a user at a terminal does,
// and checks what kubectl prints against what it prints for Kubernetes.
func TestKubectlSession(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	// An API server alone, as kube-apiserver without its controller
	// manager: no controller makes default ServiceAccounts, so pods would be
	// refused by ServiceAccount admission (TestUpAdmission covers it).
	s := startAPIServer(t, buildKplane(t), "--disable-admission-plugins=ServiceAccount")
	run := func(t *testing.T, st kubectlStep) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), startupWait)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.kubeconfig}, st.args...)...)
		cmd.Stdin = strings.NewReader(st.stdin)
		cmd.Env = append(os.Environ(), st.env...)
		out, err := cmd.CombinedOutput()
		if (err != nil) != st.fail {
			t.Fatalf("kubectl %s: exit %v, want failure %v\n%s", strings.Join(st.args, " "), err, st.fail, out)
		}
		got := string(out)
		if st.exact != "" && strings.TrimSpace(got) != st.exact {
			t.Fatalf("kubectl %s printed\n%s\nwant\n%s", strings.Join(st.args, " "), got, st.exact)
		}
		rest := got
		for _, w := range st.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Fatalf("kubectl %s printed\n%s\nwant (in order) %q", strings.Join(st.args, " "), got, st.want)
			}
			rest = rest[i+len(w):]
		}
		return got
	}
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/replicas: 1$/replicas: 4/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	steps := []kubectlStep{
		{args: []string{"version"}, want: []string{"Client Version:", "Server Version: v"}},
		{args: []string{"api-resources", "-o", "wide"}, want: []string{
			"configmaps", "cm", "v1", "true", "ConfigMap", "create,delete,deletecollection,get,list,patch,update,watch",
			"namespaces", "ns", "v1", "false", "Namespace", "create,delete,get,list,patch,update,watch",
			"pods", "po", "v1", "true", "Pod", "create,delete,deletecollection,get,list,patch,update,watch", "all",
			"deployments", "deploy", "apps/v1", "true", "Deployment",
			"selfsubjectreviews", "authentication.k8s.io/v1", "false", "SelfSubjectReview", "create",
			"selfsubjectaccessreviews", "authorization.k8s.io/v1", "false", "SelfSubjectAccessReview", "create",
		}},
		// Authorization: nothing is forbidden, and kubectl says so.
		{args: []string{"auth", "can-i", "create", "pods"}, exact: "yes"},
		{args: []string{"auth", "can-i", "delete", "deployments", "-n", "kube-system"}, exact: "yes"},
		{args: []string{"auth", "can-i", "--list"}, want: []string{"Resources", "Verbs", "*.*", "[*]"}},
		{args: []string{"explain", "selfsubjectaccessreviews.spec"}, want: []string{"GROUP:      authorization.k8s.io", "KIND:       SelfSubjectAccessReview", "FIELD: spec <SelfSubjectAccessReviewSpec>", "resourceAttributes"}},
		{args: []string{"explain", "deployments.spec.template"}, want: []string{"KIND:       Deployment", "FIELD: template <PodTemplateSpec>", "metadata", "spec"}},
		{args: []string{"auth", "whoami"}, want: []string{"Username", "kplane-admin", "Groups", "[system:masters system:authenticated]"}},
		// Errors in Kubernetes' words.
		{args: []string{"create", "namespace", "demo"}, exact: "namespace/demo created"},
		{args: []string{"create", "namespace", "demo"}, fail: true, exact: `Error from server (AlreadyExists): namespaces "demo" already exists`},
		{args: []string{"get", "pods", "nope", "-n", "demo"}, fail: true, exact: `Error from server (NotFound): pods "nope" not found`},
		{args: []string{"get", "foos"}, fail: true, exact: `error: the server doesn't have a resource type "foos"`},
		{args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: demo}\nspec:\n  containers: [{name: c}]\n",
			fail: true, exact: `The Pod "bad" is invalid: spec.containers[0].image: Required value`},
		{args: []string{"get", "pods", "-n", "demo", "-l", "bad label!!"}, fail: true,
			exact: `Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label selector "bad label!!", field selector "": unable to parse requirement: found 'label', expected: in, notin, =, ==, !=, gt, lt`},
		{args: []string{"get", "pods", "-n", "demo", "--field-selector", "spec.bogus=x"}, fail: true,
			exact: `Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label selector "", field selector "spec.bogus=x": field label not supported: spec.bogus`},
		{args: []string{"top", "pods"}, fail: true, exact: "error: Metrics API not available"},
		// Nodes.
		{args: []string{"create", "-f", "-"}, stdin: readyNode, exact: "node/n1 created"},
		{args: []string{"get", "nodes", "-o", "wide"}, want: []string{"INTERNAL-IP", "n1", "Ready", "v1.37.2", "10.0.0.1", "<none>", "Linux", "6.1", "containerd://2.0"}},
		{args: []string{"cordon", "n1"}, exact: "node/n1 cordoned"},
		{args: []string{"get", "nodes"}, want: []string{"n1", "Ready,SchedulingDisabled"}},
		{args: []string{"describe", "node", "n1"}, want: []string{"Name:", "n1", "Unschedulable:", "true", "Ready", "True", "KubeletReady", "InternalIP:", "10.0.0.1"}},
		// Pods, labels and describe with the pod's events.
		{args: []string{"run", "p1", "--image=busybox", "-n", "demo", "--labels=app=p"}, exact: "pod/p1 created"},
		{args: []string{"run", "p2", "--image=busybox", "-n", "demo", "--labels=app=q"}, exact: "pod/p2 created"},
		{args: []string{"get", "pods", "-n", "demo", "-l", "app in (p)", "-o", "name"}, exact: "pod/p1"},
		{args: []string{"get", "pods", "-A", "--chunk-size=1", "-o", "name"}, exact: "pod/p1\npod/p2"},
		{args: []string{"get", "pods", "-n", "demo", "--field-selector", "status.phase=Pending,metadata.name!=p1", "-o", "name"}, exact: "pod/p2"},
		{args: []string{"logs", "p1", "-n", "demo"}, fail: true, exact: "Error from server (NotFound): pods/log is not served: kplane runs no kubelet, so there are no containers to reach"},
		{args: []string{"exec", "p1", "-n", "demo", "--", "true"}, fail: true, exact: "Error from server (NotFound): pods/exec is not served: kplane runs no kubelet, so there are no containers to reach"},
		{args: []string{"label", "pod", "p1", "-n", "demo", "env=prod"}, exact: "pod/p1 labeled"},
		{args: []string{"get", "pod", "p1", "-n", "demo", "--show-labels"}, want: []string{"LABELS", "app=p,env=prod"}},
		{args: []string{"describe", "pod", "p1", "-n", "demo"}, want: []string{"Name:", "p1", "Status:", "Pending", "Events:", "Scheduled", "default-scheduler", "Successfully assigned demo/p1 to n1"}},
		{args: []string{"events", "-n", "demo", "--for", "pod/p1"}, want: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE", "Normal", "Scheduled", "Pod/p1"}},
		// Draining the node evicts its pods through pods/eviction.
		{args: []string{"create", "-f", "-"}, stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: d1, namespace: demo}\nspec:\n  nodeName: n1\n  containers: [{name: c, image: busybox}]\n", exact: "pod/d1 created"},
		{args: []string{"drain", "n1", "--force", "--grace-period=0", "--timeout=60s"}, want: []string{"node/n1 already cordoned", "evicting pod demo/d1", "pod/d1 evicted", "node/n1 drained"}},
		{args: []string{"get", "pod", "d1", "-n", "demo"}, fail: true, exact: `Error from server (NotFound): pods "d1" not found`},
		// Apply, diff, dry runs, edit, patch, scale.
		{args: []string{"apply", "-f", "-"}, stdin: multiDoc, exact: "configmap/conf created\ndeployment.apps/api created"},
		{args: []string{"apply", "-f", "-"}, stdin: multiDoc, exact: "configmap/conf unchanged\ndeployment.apps/api unchanged"},
		{args: []string{"diff", "-f", "-"}, stdin: strings.Replace(multiDoc, "slow", "fast", 1), fail: true, want: []string{"-  mode: slow", "+  mode: fast"}},
		{args: []string{"apply", "--dry-run=server", "-f", "-"}, stdin: strings.Replace(multiDoc, "slow", "fast", 1), want: []string{"configmap/conf configured (server dry run)"}},
		{args: []string{"get", "cm", "conf", "-n", "demo", "-o", "jsonpath={.data.mode}"}, exact: "slow"},
		// The same manifest applied server-side takes over from the
		// client-side apply without conflicts.
		{args: []string{"apply", "--server-side", "-f", "-"}, stdin: multiDoc, exact: "configmap/conf serverside-applied\ndeployment.apps/api serverside-applied"},
		{args: []string{"get", "cm", "conf", "-n", "demo", "-o", "jsonpath={.metadata.managedFields[*].manager}"}, want: []string{"kubectl"}},
		{args: []string{"edit", "deploy", "api", "-n", "demo"}, env: []string{"KUBE_EDITOR=" + editor}, exact: "deployment.apps/api edited"},
		{args: []string{"get", "deploy", "api", "-n", "demo", "-o", "jsonpath={.spec.replicas}/{.metadata.generation}"}, exact: "4/2"},
		{args: []string{"patch", "deploy", "api", "-n", "demo", "--type", "merge", "-p", `{"spec":{"replicas":2}}`}, exact: "deployment.apps/api patched"},
		{args: []string{"patch", "deploy", "api", "-n", "demo", "--type", "json", "-p", `[{"op":"replace","path":"/spec/replicas","value":3}]`}, exact: "deployment.apps/api patched"},
		{args: []string{"patch", "deploy", "api", "-n", "demo", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}`}, exact: "deployment.apps/api patched"},
		{args: []string{"get", "deploy", "api", "-n", "demo", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[*].name}"}, exact: "3 side api"},
		{args: []string{"patch", "deploy", "api", "-n", "demo", "-p", `{"spec":{"replicas":-1}}`}, fail: true,
			exact: `The Deployment "api" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		{args: []string{"set", "image", "deploy/api", "-n", "demo", "api=api:2"}, exact: "deployment.apps/api image updated"},
		{args: []string{"scale", "deploy", "api", "-n", "demo", "--replicas=5"}, exact: "deployment.apps/api scaled"},
		{args: []string{"set", "resources", "deploy/api", "-n", "demo", "-c=api", "--requests=cpu=1", "--limits=cpu=500m"}, fail: true,
			exact: `error: failed to patch resources update to pod template Deployment.apps "api" is invalid: spec.template.spec.containers[1].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m`},
		{args: []string{"get", "deploy", "-n", "demo", "-o", "wide"}, want: []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR", "api", "0/5", "side,api", "busybox,api:2", "app=api"}},
		// Deletes.
		{args: []string{"delete", "pods", "-n", "demo", "-l", "app=q"}, exact: `pod "p2" deleted`},
		{args: []string{"delete", "pod", "p1", "-n", "demo", "--grace-period=0", "--force"}, want: []string{`pod "p1" force deleted`}},
		{args: []string{"delete", "cm", "--all", "-n", "demo"}, exact: `configmap "conf" deleted`},
		{args: []string{"wait", "--for=delete", "cm/conf", "-n", "demo", "--timeout=10s"}},
		{args: []string{"delete", "ns", "default"}, fail: true, exact: `Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted`},
	}
	for _, st := range steps {
		if len(st.args) > 1 && st.args[0] == "describe" && st.args[1] == "pod" {
			// The event names the pod by UID, as the scheduler's does.
			uid := run(t, kubectlStep{args: []string{"get", "pod", "p1", "-n", "demo", "-o", "jsonpath={.metadata.uid}"}})
			run(t, kubectlStep{args: []string{"create", "-f", "-"}, stdin: strings.Replace(podEvent, "UID", uid, 1)})
		}
		run(t, st)
	}
	s.stop(t)
}

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

const admissionManifest = `apiVersion: v1
kind: Namespace
metadata: {name: limited, labels: {policy: replicas}}
---
apiVersion: v1
kind: Namespace
metadata: {name: warned, labels: {policy: warn}}
---
apiVersion: v1
kind: Namespace
metadata:
  name: restricted
  labels: {pod-security.kubernetes.io/enforce: restricted}
---
apiVersion: v1
kind: Namespace
metadata: {name: quota}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods, namespace: quota}
spec: {hard: {pods: "1"}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: object.spec.replicas <= 5
    messageExpression: "'replicas must be at most 5, got ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {policy: replicas}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-warn}
spec:
  policyName: replica-limit
  validationActions: [Warn]
  matchResources:
    namespaceSelector: {matchLabels: {policy: warn}}
`

const privilegedPod = `apiVersion: v1
kind: Pod
metadata: {name: priv, namespace: restricted}
spec:
  containers:
  - name: c
    image: nginx
    securityContext: {privileged: true}
`

// eventually runs kubectl until its output contains want (the server's
// admission caches follow what was just applied a moment later), failing
// the test after a minute.
func eventually(t *testing.T, kubeconfig, stdin, want string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, _ := kubectlResult(t, kubeconfig, stdin, args...)
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s: %s\nwant it to contain %q", strings.Join(args, " "), out, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestUpAdmission applies, with kubectl, what clusters use admission for:
// a ValidatingAdmissionPolicy, Pod Security labels, a ResourceQuota; and
// checks kubectl shows Kubernetes' refusals.
func TestUpAdmission(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)
	if out, ok := kubectlResult(t, p.kubeconfig, admissionManifest, "apply", "-f", "-"); !ok {
		t.Fatalf("apply: %s", out)
	}

	out := eventually(t, p.kubeconfig, "", "denied request", "create", "deployment", "big", "--image=nginx", "--replicas=10", "-n", "limited")
	if want := `ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: replicas must be at most 5, got 10`; !strings.Contains(out, want) {
		t.Fatalf("kubectl create: %s\nwant %q", out, want)
	}
	if out, ok := kubectlResult(t, p.kubeconfig, "", "create", "deployment", "small", "--image=nginx", "--replicas=2", "-n", "limited"); !ok {
		t.Fatalf("a deployment within the policy: %s", out)
	}

	out = eventually(t, p.kubeconfig, "", "Warning:", "create", "deployment", "big", "--image=nginx", "--replicas=10", "-n", "warned")
	if want := `Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-warn': replicas must be at most 5, got 10`; !strings.Contains(out, want) || !strings.Contains(out, "deployment.apps/big created") {
		t.Fatalf("kubectl create under a Warn binding: %s\nwant %q and the deployment created", out, want)
	}

	out, ok := kubectlResult(t, p.kubeconfig, privilegedPod, "apply", "-f", "-")
	if ok || !strings.Contains(out, `violates PodSecurity "restricted:latest"`) || !strings.Contains(out, `privileged (container "c" must not set securityContext.privileged=true)`) {
		t.Fatalf("a privileged pod in a restricted namespace: ok=%v %s", ok, out)
	}

	// The quota controller sets status.hard; admission charges from then on.
	eventually(t, p.kubeconfig, "", "1", "get", "resourcequota", "pods", "-n", "quota", "-o", "jsonpath={.status.hard.pods}")
	if out, ok := kubectlResult(t, p.kubeconfig, "", "run", "a", "--image=nginx", "-n", "quota"); !ok {
		t.Fatalf("the first pod: %s", out)
	}
	out, ok = kubectlResult(t, p.kubeconfig, "", "run", "b", "--image=nginx", "-n", "quota")
	if want := `exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`; ok || !strings.Contains(out, want) {
		t.Fatalf("a pod past the quota: ok=%v %s\nwant %q", ok, out, want)
	}
	// ServiceAccount admission mounted the token as Kubernetes does.
	if vol := p.kubectl(t, "get", "pod", "a", "-n", "quota", "-o", "jsonpath={.spec.volumes[0].name} {.spec.serviceAccountName} {.spec.containers[0].volumeMounts[0].mountPath}"); !strings.HasPrefix(vol, "kube-api-access-") || !strings.HasSuffix(vol, " default /var/run/secrets/kubernetes.io/serviceaccount") {
		t.Fatalf("pod a: %q", vol)
	}
}

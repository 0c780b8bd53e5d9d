package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crdManifest is a CRD of two versions (v1 stored, v1beta1 deprecated),
// with status and scale subresources and printer columns.
const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the cron job runs.
            properties:
              cronSpec: {type: string, description: The schedule.}
              image: {type: string}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

const cronTabs = `apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: every-five, namespace: default}
spec: {cronSpec: "*/5 * * * *", image: cron:1, replicas: 1}
---
apiVersion: stable.example.com/v1beta1
kind: CronTab
metadata: {name: hourly, namespace: default}
spec: {cronSpec: "0 * * * *", image: cron:2, replicas: 2}
`

// kubectl applies a CRD and custom resources of both its versions to
// `kplane apiserver` on embedded etcd, reads them with the printer
// columns, explains, scales and patches them, finds them after a restart,
// and deleting the CRD deletes them.
func TestKubectlCustomResources(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	dir := t.TempDir()
	s := startAPIServer(t, buildKplane(t), "--data-dir", dir)
	crd, crs := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "crs.yaml")
	if err := os.WriteFile(crd, []byte(crdManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crs, []byte(cronTabs), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string { t.Helper(); return kubectlWith(t, s.kubeconfig, args...) }

	kubectl("apply", "-f", crd)
	kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")
	out := kubectl("apply", "-f", crs)
	if !strings.Contains(out, "crontab.stable.example.com/every-five created") || !strings.Contains(out, "crontab.stable.example.com/hourly created") {
		t.Fatalf("apply custom resources:\n%s", out)
	}
	out = kubectl("get", "ct")
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SPEC REPLICAS" ||
		strings.Join(strings.Fields(lines[1]), " ") != "every-five */5 * * * * 1" || strings.Join(strings.Fields(lines[2]), " ") != "hourly 0 * * * * 2" {
		t.Fatalf("kubectl get ct:\n%s", out)
	}
	// Stored once, read in either version; the deprecated one warns.
	if got := kubectl("get", "crontabs.v1beta1.stable.example.com", "hourly", "-o", "jsonpath={.apiVersion} {.spec.image}"); got != "Warning: stable.example.com/v1beta1 CronTab is deprecated\nstable.example.com/v1beta1 cron:2" {
		t.Fatalf("v1beta1 read: %q", got)
	}
	if got := kubectl("get", "crontabs.v1.stable.example.com", "hourly", "-o", "jsonpath={.apiVersion}"); got != "stable.example.com/v1" {
		t.Fatalf("v1 read: %q", got)
	}
	if out := kubectl("explain", "crontab.spec.cronSpec"); !strings.Contains(out, "The schedule.") {
		t.Fatalf("kubectl explain:\n%s", out)
	}
	kubectl("scale", "crontab/every-five", "--replicas=3")
	kubectl("patch", "crontab/every-five", "--type=merge", "-p", `{"spec":{"image":"cron:3"}}`)
	if got := kubectl("get", "ct", "every-five", "-o", "jsonpath={.spec.replicas} {.spec.image} {.metadata.generation}"); got != "3 cron:3 3" {
		t.Fatalf("after scale and patch: %q", got)
	}
	if out := kubectl("get", "all", "-o", "name"); !strings.Contains(out, "crontab.stable.example.com/every-five") {
		t.Fatalf("kubectl get all leaves out category all:\n%s", out)
	}

	// Everything survives a restart.
	s.stop(t)
	s = startAPIServer(t, buildKplane(t), "--data-dir", dir)
	if got := kubectl("get", "ct", "-o", "name"); got != "crontab.stable.example.com/every-five\ncrontab.stable.example.com/hourly" {
		t.Fatalf("after restart: %q", got)
	}

	out = kubectl("delete", "crd", "crontabs.stable.example.com", "--timeout=60s")
	if !strings.Contains(out, `customresourcedefinition.apiextensions.k8s.io "crontabs.stable.example.com" deleted`) {
		t.Fatalf("delete crd:\n%s", out)
	}
	cmd := exec.Command("kubectl", "get", "crontabs.stable.example.com")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	gone, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(gone), `the server doesn't have a resource type "crontabs"`) {
		t.Fatalf("after delete crd: %v\n%s", err, gone)
	}
	// Created again, it is empty.
	kubectl("apply", "-f", crd)
	kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")
	if got := kubectl("get", "ct", "-o", "name"); got != "" {
		t.Fatalf("recreated CRD serves old objects: %q", got)
	}
	s.stop(t)
}

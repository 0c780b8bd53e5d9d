package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// On `kplane up`, the garbage collector picks up a CRD applied while it
// runs: a custom resource owned by a Deployment goes with it, a
// Deployment owned by a custom resource goes before it (foreground) with
// its ReplicaSets and pods, a terminating namespace loses its custom
// resources, and deleting the CRD collects what its objects owned.
func TestUpGarbageCollectsAcrossCustomResources(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)
	dir := t.TempDir()
	apply := func(name, manifest string) {
		t.Helper()
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		p.kubectl(t, "apply", "-f", file)
	}
	cronTab := func(ns, name, ownerKind, ownerAPIVersion, ownerName, ownerUID string) string {
		owners := ""
		if ownerUID != "" {
			owners = fmt.Sprintf("\n  ownerReferences: [{apiVersion: %s, kind: %s, name: %s, uid: %s}]", ownerAPIVersion, ownerKind, ownerName, ownerUID)
		}
		return fmt.Sprintf("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: %s\n  namespace: %s%s\nspec: {cronSpec: \"* * * * *\", image: cron:1, replicas: 1}\n", name, ns, owners)
	}
	deployment := func(name, ownerUID string) string {
		owners := ""
		if ownerUID != "" {
			owners = fmt.Sprintf("\n  ownerReferences: [{apiVersion: stable.example.com/v1, kind: CronTab, name: owner, uid: %s, blockOwnerDeletion: true}]", ownerUID)
		}
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: default%s
spec:
  replicas: 2
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: nginx, image: nginx}]
`, name, owners, name, name)
	}

	apply("crd", crdManifest)
	p.kubectl(t, "wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s")

	// A Deployment owns a CronTab.
	apply("web", deployment("web", ""))
	webUID := p.kubectl(t, "get", "deployment", "web", "-o", "jsonpath={.metadata.uid}")
	apply("of-web", cronTab("default", "of-web", "Deployment", "apps/v1", "web", webUID))
	p.kubectl(t, "delete", "deployment", "web")
	p.kubectl(t, "wait", "--for=delete", "crontab/of-web", "--timeout=60s")

	// A CronTab owns a Deployment: deleted in the foreground, the
	// Deployment, its ReplicaSet and its pods go first.
	apply("owner", cronTab("default", "owner", "", "", "", ""))
	ownerUID := p.kubectl(t, "get", "crontab", "owner", "-o", "jsonpath={.metadata.uid}")
	apply("owned", deployment("owned", ownerUID))
	p.kubectl(t, "rollout", "status", "deployment/owned", "--timeout=60s")
	p.kubectl(t, "delete", "crontab", "owner", "--cascade=foreground", "--timeout=60s")
	if got := p.kubectl(t, "get", "deployments,replicasets,pods", "-l", "app=owned", "-o", "name"); got != "" {
		t.Fatalf("left after the foreground deletion of their owner:\n%s", got)
	}

	// A terminating namespace loses its CronTabs.
	p.kubectl(t, "create", "namespace", "crons")
	apply("in-ns", cronTab("crons", "nightly", "", "", "", ""))
	p.kubectl(t, "delete", "namespace", "crons", "--timeout=60s")

	// The CRD goes while a Deployment is owned by one of its CronTabs:
	// the CronTab goes with the CRD, and the Deployment after it.
	apply("owner2", cronTab("default", "owner", "", "", "", ""))
	ownerUID = p.kubectl(t, "get", "crontab", "owner", "-o", "jsonpath={.metadata.uid}")
	apply("owned2", deployment("owned", ownerUID))
	p.kubectl(t, "delete", "crd", "crontabs.stable.example.com", "--timeout=60s")
	p.kubectl(t, "wait", "--for=delete", "deployment/owned", "--timeout=60s")
}

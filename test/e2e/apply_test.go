package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ssaManifest is what a team applies server-side: one object of each
// everyday kind. Its variants below change one field or drop some.
const ssaManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: ssa}
data: {mode: slow, extra: "yes"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ssa, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: bot
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: http, containerPort: 80}]
        env: [{name: MODE, value: prod}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ssa}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bot, namespace: ssa, labels: {app: web}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: ssa}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-bot, namespace: ssa}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: ServiceAccount, name: bot, namespace: ssa}
`

// ssaApplied is what kubectl prints for ssaManifest applied server-side.
const ssaApplied = `configmap/conf serverside-applied
deployment.apps/web serverside-applied
service/web serverside-applied
serviceaccount/bot serverside-applied
role.rbac.authorization.k8s.io/reader serverside-applied
rolebinding.rbac.authorization.k8s.io/reader-bot serverside-applied`

// kubectlConflictAdvice is what kubectl 1.32 prints after the server's
// conflict message.
const kubectlConflictAdvice = `Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the ` + "`--force-conflicts`" + ` flag.`

const gadgetCRDManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.ssa.example.com}
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              users:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties: {name: {type: string}, role: {type: string}}
`

// kubectlResult runs kubectl against kubeconfig with stdin and reports its
// combined output and whether it succeeded.
func kubectlResult(t *testing.T, kubeconfig, stdin string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
	}
	return strings.TrimSpace(string(out)), err == nil
}

// managedMeta reads an object's metadata, managedFields included, with
// kubectl.
func managedMeta(t *testing.T, kubeconfig string, args ...string) metav1.ObjectMeta {
	t.Helper()
	out := kubectlWith(t, kubeconfig, append(append([]string{"get"}, args...), "-o", "json", "--show-managed-fields")...)
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return obj.Metadata
}

// managerList lists the managedFields entries as
// "manager/operation[/subresource]", sorted.
func managerList(m metav1.ObjectMeta) []string {
	var out []string
	for _, e := range m.ManagedFields {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// managerFields returns the fieldsV1 JSON of manager's first entry.
func managerFields(t *testing.T, m metav1.ObjectMeta, manager string) string {
	t.Helper()
	for _, e := range m.ManagedFields {
		if e.Manager == manager && e.FieldsV1 != nil {
			return e.FieldsV1.GetRawString()
		}
	}
	t.Fatalf("no entry for %s in %v", manager, managerList(m))
	return ""
}

// wantSameJSON compares two JSON documents by value.
func wantSameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s\n got %s\nwant %s", what, gb, wb)
	}
}

// TestKubectlServerSideApply drives server-side apply with kubectl as a
// team does: a multi-document manifest into a fresh namespace, a second
// manager's conflict in kubectl's words and --force-conflicts, fields
// dropped from the manifest removed, server dry run, and the migration
// of client-side applied objects.
func TestKubectlServerSideApply(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	s := startAPIServer(t, buildKplane(t))
	kc := s.kubeconfig
	kubectl := func(args ...string) string { t.Helper(); return kubectlWith(t, kc, args...) }
	apply := func(stdin string, args ...string) (string, bool) {
		t.Helper()
		return kubectlResult(t, kc, stdin, append([]string{"apply", "-f", "-"}, args...)...)
	}
	kubectl("create", "namespace", "ssa")

	if out, ok := apply(ssaManifest, "--server-side"); !ok || out != ssaApplied {
		t.Fatalf("apply --server-side printed (ok %v)\n%s\nwant\n%s", ok, out, ssaApplied)
	}
	for _, obj := range [][]string{{"configmap", "conf"}, {"deployment", "web"}, {"service", "web"}, {"serviceaccount", "bot"},
		{"role", "reader"}, {"rolebinding", "reader-bot"}} {
		m := managedMeta(t, kc, append(obj, "-n", "ssa")...)
		if got := strings.Join(managerList(m), " "); got != "kubectl/Apply" {
			t.Errorf("%s managers = %s, want kubectl/Apply alone", strings.Join(obj, "/"), got)
		}
	}
	yaml := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "yaml", "--show-managed-fields")
	if !strings.Contains(yaml, "manager: kubectl\n    operation: Apply") {
		t.Errorf("get -o yaml --show-managed-fields:\n%s", yaml)
	}
	wantSameJSON(t, "kubectl's fields of the ConfigMap", managerFields(t, managedMeta(t, kc, "configmap", "conf", "-n", "ssa"), "kubectl"),
		`{"f:data":{"f:extra":{},"f:mode":{}}}`)
	wantSameJSON(t, "kubectl's fields of the Deployment", managerFields(t, managedMeta(t, kc, "deployment", "web", "-n", "ssa"), "kubectl"), `{
		"f:metadata":{"f:labels":{"f:app":{}}},
		"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{
			"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},
				"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}}}},
			"f:serviceAccountName":{}}}}}`)
	if yaml := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "yaml"); strings.Contains(yaml, "managedFields") {
		t.Errorf("kubectl get -o yaml shows managedFields without --show-managed-fields:\n%s", yaml)
	}
	// Re-applying the same manifest changes nothing.
	before := managedMeta(t, kc, "deployment", "web", "-n", "ssa")
	if out, ok := apply(ssaManifest, "--server-side"); !ok || out != ssaApplied {
		t.Fatalf("re-apply printed (ok %v)\n%s", ok, out)
	}
	if after := managedMeta(t, kc, "deployment", "web", "-n", "ssa"); after.ResourceVersion != before.ResourceVersion || after.Generation != 1 {
		t.Errorf("a no-op re-apply wrote the Deployment: resourceVersion %s -> %s, generation %d", before.ResourceVersion, after.ResourceVersion, after.Generation)
	}

	// Another manager changing kubectl's fields conflicts, in kubectl's
	// words (kubectl prints several errors without its "error: " prefix).
	changed := strings.Replace(strings.Replace(ssaManifest, "mode: slow", "mode: fast", 1), "image: nginx:1.27", "image: nginx:1.28", 1)
	out, ok := apply(changed, "--server-side", "--field-manager=other")
	if ok {
		t.Fatalf("conflicting apply succeeded:\n%s", out)
	}
	for _, want := range []string{
		"\nApply failed with 1 conflict: conflict with \"kubectl\": .data.mode\n" + kubectlConflictAdvice,
		"\nApply failed with 1 conflict: conflict with \"kubectl\": .spec.template.spec.containers[name=\"web\"].image\n" + kubectlConflictAdvice,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("conflict output\n%s\nlacks\n%s", out, want)
		}
	}
	if got := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "jsonpath={.data.mode}"); got != "slow" {
		t.Errorf("mode after the refused apply = %q", got)
	}
	// other forces its two values, and applies extra too (the same value:
	// shared with kubectl).
	other := `apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: ssa}
data: {mode: fast, extra: "yes"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ssa}
spec:
  template:
    spec:
      containers: [{name: web, image: "nginx:1.28"}]
`
	if out, ok := apply(other, "--server-side", "--field-manager=other", "--force-conflicts"); !ok ||
		out != "configmap/conf serverside-applied\ndeployment.apps/web serverside-applied" {
		t.Fatalf("--force-conflicts printed (ok %v)\n%s", ok, out)
	}
	m := managedMeta(t, kc, "configmap", "conf", "-n", "ssa")
	if got := strings.Join(managerList(m), " "); got != "kubectl/Apply other/Apply" {
		t.Errorf("managers after the forced apply = %s", got)
	}
	wantSameJSON(t, "kubectl's fields after other forced .data.mode", managerFields(t, m, "kubectl"), `{"f:data":{"f:extra":{}}}`)
	wantSameJSON(t, "other's fields", managerFields(t, m, "other"), `{"f:data":{"f:extra":{},"f:mode":{}}}`)
	if got := kubectl("get", "deployment", "web", "-n", "ssa", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != "nginx:1.28" {
		t.Errorf("image after the forced apply = %q", got)
	}

	// kubectl drops the ConfigMap's extra key and the env var from its
	// manifest and takes its values back: the env var, which only kubectl
	// held, goes; extra, which other still applies, stays.
	smaller := strings.Replace(strings.Replace(ssaManifest, `data: {mode: slow, extra: "yes"}`, "data: {mode: slow}", 1),
		"        env: [{name: MODE, value: prod}]\n", "", 1)
	if out, ok := apply(smaller, "--server-side", "--force-conflicts"); !ok || out != ssaApplied {
		t.Fatalf("apply of the smaller manifest printed (ok %v)\n%s", ok, out)
	}
	if got := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "jsonpath={.data}"); got != `{"extra":"yes","mode":"slow"}` {
		t.Errorf("data after kubectl dropped extra = %s, want extra kept (other holds it) and mode slow", got)
	}
	if got := kubectl("get", "deployment", "web", "-n", "ssa", "-o", "jsonpath={.spec.template.spec.containers[0].env}|{.spec.template.spec.containers[0].image}"); got != "|nginx:1.27" {
		t.Errorf("env and image after the smaller apply = %q, want no env and nginx:1.27", got)
	}
	if out, ok := kubectlResult(t, kc, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: ssa}\n",
		"apply", "-f", "-", "--server-side", "--field-manager=other"); !ok {
		t.Fatalf("other's empty apply: %s", out)
	}
	if got := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "jsonpath={.data}"); got != `{"mode":"slow"}` {
		t.Errorf("data after other dropped extra too = %s", got)
	}

	// Server dry run stores nothing.
	ghost := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ghost, namespace: ssa}\ndata: {k: v}\n"
	if out, ok := kubectlResult(t, kc, ghost, "apply", "-f", "-", "--server-side", "--dry-run=server"); !ok || out != "configmap/ghost serverside-applied (server dry run)" {
		t.Fatalf("dry run printed (ok %v)\n%s", ok, out)
	}
	if out, ok := kubectlResult(t, kc, "", "get", "configmap", "ghost", "-n", "ssa"); ok || out != `Error from server (NotFound): configmaps "ghost" not found` {
		t.Errorf("get after the dry run (ok %v): %s", ok, out)
	}
	if out, ok := kubectlResult(t, kc, changed, "apply", "-f", "-", "--server-side", "--dry-run=server", "--force-conflicts"); !ok {
		t.Fatalf("dry run of a change: %s", out)
	}
	if got := kubectl("get", "configmap", "conf", "-n", "ssa", "-o", "jsonpath={.data.mode}"); got != "slow" {
		t.Errorf("mode after a dry run = %q, want slow", got)
	}

	// kubectl diff --server-side (a dry-run apply): nothing for the
	// manifest as applied, the change for a changed one.
	if out, ok := kubectlResult(t, kc, smaller, "diff", "--server-side", "-f", "-"); !ok || out != "" {
		t.Errorf("diff of the applied manifest (ok %v):\n%s", ok, out)
	}
	out, ok = kubectlResult(t, kc, strings.Replace(smaller, "image: nginx:1.27", "image: nginx:1.29", 1), "diff", "--server-side", "-f", "-")
	if ok || !strings.Contains(out, "-      - image: nginx:1.27") || !strings.Contains(out, "+      - image: nginx:1.29") || strings.Contains(out, "managedFields") {
		t.Errorf("diff of a changed image (ok %v, want exit 1):\n%s", ok, out)
	}

	// kubectl scale writes the scale subresource as manager kubectl (its
	// user agent); the next apply of replicas conflicts with it.
	if out := kubectl("scale", "deployment", "web", "-n", "ssa", "--replicas=5"); out != "deployment.apps/web scaled" {
		t.Errorf("scale printed %s", out)
	}
	if got := strings.Join(managerList(managedMeta(t, kc, "deployment", "web", "-n", "ssa")), " "); !strings.Contains(got, "kubectl/Update/scale") {
		t.Errorf("deployment managers after kubectl scale = %s, want kubectl/Update/scale among them", got)
	}
	out, ok = apply(smaller, "--server-side")
	if ok || !strings.Contains(out, `Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas`) {
		t.Errorf("apply of replicas after kubectl scale (ok %v):\n%s", ok, out)
	}
}

// legacyConfigMaps are applied client-side first, then server-side.
const legacyConfigMaps = `apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: default}
data: {mode: slow}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: moved, namespace: default}
data: {mode: slow}
`

// TestKubectlClientSideToServerSideApply applies objects client-side and
// then server-side, as a team moving to server-side apply does: no
// conflict with the client-side manager, even for a changed value (the
// server reads the last-applied annotation), the annotation follows the
// server-side applies, and the managers end as kubectl 1.32 leaves them
// on kube-apiserver: it applies the annotation alone as
// kubectl-last-applied, folds kubectl-client-side-apply's entry into
// kubectl's with a JSON patch of managedFields, and re-applies, so kubectl
// owns exactly its manifest and kubectl-last-applied the annotation.
func TestKubectlClientSideToServerSideApply(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	s := startAPIServer(t, buildKplane(t))
	kc := s.kubeconfig

	out, ok := kubectlResult(t, kc, legacyConfigMaps, "apply", "-f", "-")
	if !ok || out != "configmap/same created\nconfigmap/moved created" {
		t.Fatalf("client-side apply printed (ok %v)\n%s", ok, out)
	}
	m := managedMeta(t, kc, "configmap", "same")
	if got := strings.Join(managerList(m), " "); got != "kubectl-client-side-apply/Update" {
		t.Fatalf("managers after client-side apply = %s", got)
	}
	if _, ok := m.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Fatalf("no last-applied annotation: %v", m.Annotations)
	}

	ssa := strings.Replace(legacyConfigMaps, "name: moved, namespace: default}\ndata: {mode: slow}", "name: moved, namespace: default}\ndata: {mode: fast}", 1)
	out, ok = kubectlResult(t, kc, ssa, "apply", "-f", "-", "--server-side")
	if !ok || out != "configmap/same serverside-applied\nconfigmap/moved serverside-applied" {
		t.Fatalf("server-side apply after client-side apply printed (ok %v)\n%s", ok, out)
	}
	for _, name := range []string{"same", "moved"} {
		m := managedMeta(t, kc, "configmap", name)
		if got := strings.Join(managerList(m), " "); got != "kubectl-last-applied/Apply kubectl/Apply" {
			t.Errorf("%s: managers after the migration = %s, want kubectl-last-applied/Apply kubectl/Apply", name, got)
		}
		wantSameJSON(t, name+": kubectl's fields after the migration", managerFields(t, m, "kubectl"), `{"f:data":{"f:mode":{}}}`)
		wantSameJSON(t, name+": kubectl-last-applied's fields", managerFields(t, m, "kubectl-last-applied"),
			`{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
		var last struct {
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal([]byte(m.Annotations["kubectl.kubernetes.io/last-applied-configuration"]), &last); err != nil {
			t.Fatalf("%s: last-applied annotation: %v", name, err)
		}
		want := map[string]string{"same": "slow", "moved": "fast"}[name]
		if last.Data["mode"] != want {
			t.Errorf("%s: last-applied data %v, want mode %s (it follows kubectl's server-side applies)", name, last.Data, want)
		}
		if got := kubectlWith(t, kc, "get", "configmap", name, "-o", "jsonpath={.data.mode}"); got != want {
			t.Errorf("%s: mode = %q, want %q", name, got, want)
		}
	}
	// Back to a client-side apply: kubectl reads the annotation the
	// server kept and patches the changed value back.
	if out, ok := kubectlResult(t, kc, legacyConfigMaps, "apply", "-f", "-"); !ok {
		t.Fatalf("client-side apply after server-side apply: %s", out)
	}
	if got := kubectlWith(t, kc, "get", "configmap", "moved", "-o", "jsonpath={.data.mode}"); got != "slow" {
		t.Errorf("mode after the client-side apply = %q, want slow", got)
	}
}

// TestKubectlServerSideApplyCustomResources applies a CRD and a custom
// resource server-side: the CRD schema's list map merges two managers'
// items, and a conflict names the owner.
func TestKubectlServerSideApplyCustomResources(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	dir := t.TempDir()
	s := startAPIServer(t, buildKplane(t))
	kc := s.kubeconfig
	crd := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crd, []byte(gadgetCRDManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := kubectlWith(t, kc, "apply", "--server-side", "-f", crd); out != "customresourcedefinition.apiextensions.k8s.io/gadgets.ssa.example.com serverside-applied" {
		t.Fatalf("apply CRD printed %s", out)
	}
	kubectlWith(t, kc, "wait", "--for=condition=Established", "crd/gadgets.ssa.example.com", "--timeout=30s")
	if got := strings.Join(managerList(managedMeta(t, kc, "crd", "gadgets.ssa.example.com")), " "); !strings.Contains(got, "kubectl/Apply") {
		t.Errorf("CRD managers = %s", got)
	}

	g := "apiVersion: ssa.example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec:\n  color: red\n  users: [{name: ann, role: admin}]\n"
	if out, ok := kubectlResult(t, kc, g, "apply", "-f", "-", "--server-side"); !ok || out != "gadget.ssa.example.com/g serverside-applied" {
		t.Fatalf("apply custom resource printed (ok %v) %s", ok, out)
	}
	bo := "apiVersion: ssa.example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec:\n  users: [{name: bo, role: dev}]\n"
	if out, ok := kubectlResult(t, kc, bo, "apply", "-f", "-", "--server-side", "--field-manager=team-b"); !ok {
		t.Fatalf("second manager's apply: %s", out)
	}
	if got := kubectlWith(t, kc, "get", "gadget", "g", "-o", "jsonpath={.spec.users[*].name}"); got != "ann bo" {
		t.Errorf("users merged by name = %q, want \"ann bo\"", got)
	}
	blue := strings.Replace(g, "color: red", "color: blue", 1)
	out, ok := kubectlResult(t, kc, blue, "apply", "-f", "-", "--server-side", "--field-manager=team-b")
	if ok || !strings.Contains(out, "error: Apply failed with 1 conflict: conflict with \"kubectl\": .spec.color\n"+kubectlConflictAdvice) {
		t.Fatalf("conflicting apply of the custom resource (ok %v):\n%s", ok, out)
	}
	m := managedMeta(t, kc, "gadget", "g")
	if got := strings.Join(managerList(m), " "); got != "kubectl/Apply team-b/Apply" {
		t.Errorf("custom resource managers = %s", got)
	}
	wantSameJSON(t, "team-b's fields", managerFields(t, m, "team-b"), `{"f:spec":{"f:users":{"k:{\"name\":\"bo\"}":{".":{},"f:name":{},"f:role":{}}}}}`)
}

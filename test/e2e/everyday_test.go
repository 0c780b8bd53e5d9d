package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// everydayManifest holds one of each kind a typical application's install
// manifest or Helm chart holds, in the order people write them.
const everydayManifest = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: shop, namespace: shop}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: shop-reader, namespace: shop}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: shop-reader, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: shop-reader}
subjects:
- {kind: ServiceAccount, name: shop, namespace: shop}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: shop-aggregate
  labels: {shop.example.com/aggregate: "true"}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: shop-operator}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {shop.example.com/aggregate: "true"}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: shop-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: shop-operator}
subjects:
- {kind: ServiceAccount, name: shop, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-config, namespace: shop}
data: {mode: production}
---
apiVersion: v1
kind: Secret
metadata: {name: shop-secret, namespace: shop}
type: Opaque
stringData: {password: hunter2}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: shop-high}
value: 100000
description: for the shop
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: shop-fast}
provisioner: example.com/fast
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shop-data, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: shop-fast
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: shop-quota, namespace: shop}
spec: {hard: {pods: "50"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: shop-limits, namespace: shop}
spec:
  limits:
  - type: Container
    default: {cpu: 500m}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: shop
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: http, containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: shop}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres:17}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox:1.36}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox:1.36, command: [sh, -c, "true"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox:1.36}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: shop-nginx}
spec: {controller: example.com/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  ingressClassName: shop-nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - ports: [{port: 80}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
`

// On `kplane up`, kubectl applies a manifest holding one of every kind
// real install manifests use, reads it back (get all, describe, explain),
// exposes a Deployment and deletes everything.
func TestUpEverydayManifest(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)
	manifest := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(manifest, []byte(everydayManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	out := p.kubectl(t, "apply", "-f", manifest)
	if n := strings.Count(out, " created"); n != strings.Count(everydayManifest, "\nkind: ") {
		t.Fatalf("kubectl apply created %d objects:\n%s", n, out)
	}

	all := p.kubectl(t, "get", "all", "-n", "shop", "-o", "name")
	for _, want := range []string{"service/web", "service/web-nodeport", "service/db", "deployment.apps/web",
		"statefulset.apps/db", "daemonset.apps/agent", "job.batch/migrate", "cronjob.batch/nightly",
		"horizontalpodautoscaler.autoscaling/web"} {
		if !strings.Contains(all, want+"\n") && !strings.HasSuffix(all, want) {
			t.Errorf("kubectl get all lacks %s:\n%s", want, all)
		}
	}

	// Services got addresses from the service range; the headless one none.
	if ip := p.kubectl(t, "get", "svc", "web", "-n", "shop", "-o", "jsonpath={.spec.clusterIP}"); !strings.HasPrefix(ip, "10.") {
		t.Errorf("service web clusterIP %q", ip)
	}
	if ip := p.kubectl(t, "get", "svc", "db", "-n", "shop", "-o", "jsonpath={.spec.clusterIP}"); ip != "None" {
		t.Errorf("headless service clusterIP %q", ip)
	}
	if port := p.kubectl(t, "get", "svc", "web-nodeport", "-n", "shop", "-o", "jsonpath={.spec.ports[0].nodePort}"); len(port) != 5 || port < "30000" || port > "32767" {
		t.Errorf("nodePort %q", port)
	}
	if got := p.kubectl(t, "get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"); got != "10.96.0.1" {
		t.Errorf("the kubernetes service has clusterIP %q", got)
	}
	// The aggregated ClusterRole took the rules of the one it selects.
	p.kubectl(t, "wait", "clusterrole/shop-operator", "--for=jsonpath={.rules[0].resources[0]}=deployments", "--timeout=30s")

	for _, kind := range []string{"svc", "sa", "role", "rolebinding", "pvc", "sts", "ds", "job", "cj", "ing", "netpol", "pdb", "hpa", "quota", "limits"} {
		out := p.kubectl(t, "describe", kind, "-n", "shop")
		if !strings.Contains(out, "Name:") {
			t.Errorf("kubectl describe %s:\n%s", kind, out)
		}
	}
	for _, field := range []string{"service.spec.clusterIP", "job.spec.backoffLimit", "cronjob.spec.schedule", "ingress.spec.rules",
		"statefulset.spec.podManagementPolicy", "horizontalpodautoscaler.spec.metrics", "clusterrole.aggregationRule", "storageclass.provisioner"} {
		if out := p.kubectl(t, "explain", field); !strings.Contains(out, "FIELD:") {
			t.Errorf("kubectl explain %s:\n%s", field, out)
		}
	}

	out = p.kubectl(t, "expose", "deployment", "web", "-n", "shop", "--name", "web-exposed", "--port", "8080", "--target-port", "80")
	if !strings.Contains(out, "service/web-exposed exposed") {
		t.Fatalf("kubectl expose:\n%s", out)
	}
	if got := p.kubectl(t, "get", "svc", "web-exposed", "-n", "shop", "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}"); got != "web 8080 80" {
		t.Errorf("exposed service: %q", got)
	}

	out = p.kubectl(t, "delete", "-f", manifest, "--timeout=90s")
	if !strings.Contains(out, `namespace "shop" deleted`) {
		t.Fatalf("kubectl delete -f:\n%s", out)
	}
	for _, kind := range []string{"clusterrole/shop-operator", "priorityclass/shop-high", "storageclass/shop-fast", "ingressclass/shop-nginx"} {
		cmd := exec.Command("kubectl", "get", kind)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("%s still there after delete -f:\n%s", kind, out)
		}
	}

	// The same manifest again, server-side: every kind is created by
	// apply, owned by kubectl, and a second apply changes nothing.
	out = p.kubectl(t, "apply", "--server-side", "-f", manifest)
	if n := strings.Count(out, " serverside-applied"); n != strings.Count(everydayManifest, "\nkind: ") {
		t.Fatalf("kubectl apply --server-side applied %d objects:\n%s", n, out)
	}
	all = p.kubectl(t, "get", "all", "-n", "shop", "-o", "name")
	for _, want := range []string{"service/web", "deployment.apps/web", "statefulset.apps/db", "daemonset.apps/agent",
		"job.batch/migrate", "cronjob.batch/nightly", "horizontalpodautoscaler.autoscaling/web"} {
		if !strings.Contains(all, want) {
			t.Errorf("after the server-side apply, kubectl get all lacks %s:\n%s", want, all)
		}
	}
	if got := p.kubectl(t, "get", "svc", "web", "-n", "shop", "-o", "jsonpath={.metadata.managedFields[0].manager}/{.metadata.managedFields[0].operation}"); got != "kubectl/Apply" {
		t.Errorf("service web managed by %q", got)
	}
	rv := p.kubectl(t, "get", "cm", "-n", "shop", "-o", "jsonpath={.items[*].metadata.resourceVersion}")
	// As on Kubernetes, the aggregated ClusterRole's rules now belong to
	// the aggregation controller, which applies them forced: the
	// manifest's `rules: []` conflicts with them, and only with them.
	cmd := exec.Command("kubectl", "apply", "--server-side", "-f", manifest)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
	again, err := cmd.CombinedOutput()
	if err == nil || strings.Count(string(again), "Apply failed") != 1 ||
		!strings.Contains(string(again), `Apply failed with 1 conflict: conflict with "clusterrole-aggregation-controller": .rules`) {
		t.Errorf("second server-side apply: %v\n%s", err, again)
	}
	if again := p.kubectl(t, "get", "cm", "-n", "shop", "-o", "jsonpath={.items[*].metadata.resourceVersion}"); again != rv {
		t.Errorf("an unchanged server-side apply wrote: resourceVersions %q then %q", rv, again)
	}
}

package registry

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func deployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: pod("").Spec},
		},
	}
}

func replicaSet(name string) *appsv1.ReplicaSet {
	d := deployment(name)
	return &appsv1.ReplicaSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

func errFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestBuiltinIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, st := range Builtin() {
		info := st.Info()
		gvr := info.GroupVersionResource().String()
		if seen[gvr] {
			t.Errorf("%s twice", gvr)
		}
		seen[gvr] = true
		if info.Resource == "" || info.Singular == "" || info.GVK.Kind == "" || info.GVK.Version == "" {
			t.Errorf("%s: incomplete info %+v", gvr, info)
		}
		if _, ok := st.New().(Object); !ok {
			t.Errorf("%s: New returns %T without metadata", gvr, st.New())
		}
		if !strings.HasSuffix(fmt.Sprintf("%T", st.NewList()), "List") {
			t.Errorf("%s: NewList returns %T", gvr, st.NewList())
		}
		labels := st.FieldLabels()
		if !slices.Contains(labels, "metadata.name") || !slices.Contains(labels, "metadata.namespace") {
			t.Errorf("%s: field labels %v", gvr, labels)
		}
	}
	// Every family's resources, none lost in Builtin: 10 first, 5 of
	// services, 12 workloads, 11 of policy, 19 of the platform.
	if len(seen) != 57 {
		t.Errorf("%d resources", len(seen))
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name     string
		strategy Strategy
		obj      runtime.Object
		want     []string // fields with errors; nil means valid
	}{
		{"valid pod", Pods(), pod("p"), nil},
		{"pod bad name", Pods(), pod("P_1"), []string{"metadata.name"}},
		{"pod without namespace", Pods(), func() runtime.Object { p := pod("p"); p.Namespace = ""; return p }(), []string{"metadata.namespace"}},
		{"pod no containers", Pods(), func() runtime.Object { p := pod("p"); p.Spec.Containers = nil; return p }(), []string{"spec.containers"}},
		{"pod duplicate containers", Pods(), func() runtime.Object {
			p := pod("p")
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
			return p
		}(), []string{"spec.containers[1].name"}},
		{"pod missing image", Pods(), func() runtime.Object { p := pod("p"); p.Spec.Containers[0].Image = ""; return p }(), []string{"spec.containers[0].image"}},
		{"pod bad port", Pods(), func() runtime.Object {
			p := pod("p")
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
			return p
		}(), []string{"spec.containers[0].ports[0].containerPort"}},
		{"pod request above limit", Pods(), func() runtime.Object {
			p := pod("p")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}
			return p
		}(), []string{"spec.containers[0].resources.requests"}},
		{"pod negative quantities", Pods(), func() runtime.Object {
			p := pod("p")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")},
			}
			return p
		}(), []string{"spec.containers[0].resources.requests[memory]", "spec.containers[0].resources.limits[cpu]"}},
		{"deployment request above limit", Deployments(), func() runtime.Object {
			d := deployment("d")
			d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
			return d
		}(), []string{"spec.template.spec.containers[0].resources.requests"}},
		{"pod bad label", Pods(), func() runtime.Object { p := pod("p"); p.Labels = map[string]string{"-x": "y"}; return p }(), []string{"metadata.labels"}},
		{"valid deployment", Deployments(), deployment("d"), nil},
		{"deployment no selector", Deployments(), func() runtime.Object { d := deployment("d"); d.Spec.Selector = nil; return d }(), []string{"spec.selector"}},
		{"deployment selector mismatch", Deployments(), func() runtime.Object {
			d := deployment("d")
			d.Spec.Template.Labels = map[string]string{"app": "x"}
			return d
		}(), []string{"spec.template.metadata.labels"}},
		{"deployment negative replicas", Deployments(), func() runtime.Object { d := deployment("d"); d.Spec.Replicas = ptr[int32](-1); return d }(), []string{"spec.replicas"}},
		{"deployment template restartPolicy", Deployments(), func() runtime.Object {
			d := deployment("d")
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			return d
		}(), []string{"spec.template.spec.restartPolicy"}},
		{"valid replicaset", ReplicaSets(), replicaSet("r"), nil},
		{"replicaset empty selector", ReplicaSets(), func() runtime.Object { r := replicaSet("r"); r.Spec.Selector = &metav1.LabelSelector{}; return r }(), []string{"spec.selector"}},
		{"namespace dns label", Namespaces(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}, []string{"metadata.name"}},
		{"node cluster scoped", Nodes(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "x"}}, []string{"metadata.namespace"}},
		{"configmap bad key", ConfigMaps(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d"}, Data: map[string]string{"a b": "x"}}, []string{"data[a b]"}},
		{"secret bad key", Secrets(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "d"}, Data: map[string][]byte{"/": nil}}, []string{"data[/]"}},
		{"lease bad duration", Leases(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "d"}, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr[int32](0)}}, []string{"spec.leaseDurationSeconds"}},
		{"event type", Events(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "d"}, Type: "Odd"}, []string{"type"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.strategy.Default(tc.obj)
			got := errFields(tc.strategy.Validate(tc.obj))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("errors on %v, want one on %s", got, w)
				}
			}
			if tc.want == nil && len(got) > 0 {
				t.Errorf("unexpected errors %v", tc.strategy.Validate(tc.obj))
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	d := deployment("d")
	Deployments().Default(d)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" || *d.Spec.RevisionHistoryLimit != 10 ||
		*d.Spec.ProgressDeadlineSeconds != 600 || d.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("deployment defaults %+v", d.Spec)
	}
	for image, want := range map[string]corev1.PullPolicy{
		"nginx": corev1.PullAlways, "nginx:latest": corev1.PullAlways, "nginx:1.25": corev1.PullIfNotPresent,
		"reg:5000/nginx": corev1.PullAlways, "reg:5000/nginx:2": corev1.PullIfNotPresent, "nginx@sha256:abc": corev1.PullIfNotPresent,
	} {
		p := pod("p")
		p.Spec.Containers[0].Image = image
		Pods().Default(p)
		if got := p.Spec.Containers[0].ImagePullPolicy; got != want {
			t.Errorf("%s: pull policy %s, want %s", image, got, want)
		}
	}
	// A pod's limits are its requests where it sets none; a template's are not.
	lim := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	p := pod("p")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: lim, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	Pods().Default(p)
	if got := p.Spec.Containers[0].Resources.Requests; got.Cpu().String() != "100m" || got.Memory().String() != "1Gi" {
		t.Errorf("pod requests %v", got)
	}
	if errs := Pods().Validate(p); len(errs) > 0 {
		t.Errorf("defaulted pod invalid: %v", errs)
	}
	d = deployment("d")
	d.Spec.Template.Spec.Containers[0].Resources.Limits = lim
	Deployments().Default(d)
	if got := d.Spec.Template.Spec.Containers[0].Resources.Requests; got != nil {
		t.Errorf("template requests defaulted: %v", got)
	}
	s := &corev1.Secret{StringData: map[string]string{"k": "v"}}
	Secrets().Default(s)
	if string(s.Data["k"]) != "v" || s.StringData != nil || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret defaults %+v", s)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	Namespaces().Default(ns)
	if ns.Labels[corev1.LabelMetadataName] != "team" {
		t.Errorf("namespace labels %v", ns.Labels)
	}
}

func TestUpdateRules(t *testing.T) {
	st := Deployments()
	old := deployment("d")
	st.Default(old)
	st.PrepareForCreate(old)
	if old.Generation != 1 {
		t.Fatalf("generation %d after create", old.Generation)
	}
	old.Status.Replicas = 3

	// Main resource: status kept, generation bumped only on spec change.
	upd := old.DeepCopy()
	upd.Status.Replicas = 9
	upd.Labels = map[string]string{"x": "y"}
	st.PrepareForUpdate(upd, old)
	if upd.Status.Replicas != 3 || upd.Generation != 1 {
		t.Errorf("label update: status %d generation %d", upd.Status.Replicas, upd.Generation)
	}
	upd.Spec.Replicas = ptr[int32](4)
	st.PrepareForUpdate(upd, old)
	if upd.Generation != 2 {
		t.Errorf("spec update: generation %d", upd.Generation)
	}

	// Status: only status changes.
	stat := old.DeepCopy()
	stat.Status.Replicas = 5
	stat.Spec.Replicas = ptr[int32](8)
	stat.ResourceVersion = "42"
	out := st.PrepareForStatusUpdate(stat, old).(*appsv1.Deployment)
	if out.Status.Replicas != 5 || *out.Spec.Replicas != *old.Spec.Replicas || out.ResourceVersion != "42" {
		t.Errorf("status update: %+v", out)
	}

	// Immutable selector.
	sel := old.DeepCopy()
	sel.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d", "more": "x"}}
	sel.Spec.Template.Labels = sel.Spec.Selector.MatchLabels
	if errs := st.ValidateUpdate(sel, old); !slices.Contains(errFields(errs), "spec.selector") {
		t.Errorf("selector change allowed: %v", errs)
	}

	// Nodes keep the status they are created with (node agents register
	// that way), but a main-resource update still cannot change it.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
	}}
	Nodes().PrepareForCreate(n)
	if len(n.Status.Addresses) != 1 {
		t.Errorf("node status dropped on create: %+v", n.Status)
	}
	nu := n.DeepCopy()
	nu.Status.Addresses = nil
	Nodes().PrepareForUpdate(nu, n)
	if len(nu.Status.Addresses) != 1 {
		t.Errorf("node update changed status: %+v", nu.Status)
	}
	// Other resources start with an empty status.
	d := deployment("fresh")
	d.Status.Replicas = 7
	Deployments().PrepareForCreate(d)
	if d.Status.Replicas != 0 {
		t.Errorf("deployment status kept on create: %+v", d.Status)
	}

	// Pods: spec mostly immutable, images may change, binding once.
	p := pod("p")
	p.ResourceVersion = "1"
	Pods().Default(p)
	img := p.DeepCopy()
	img.Spec.Containers[0].Image = "nginx:2"
	img.Spec.NodeName = "n1"
	if errs := Pods().ValidateUpdate(img, p); len(errs) > 0 {
		t.Errorf("image change and binding refused: %v", errs)
	}
	rebound := img.DeepCopy()
	rebound.Spec.NodeName = "n2"
	if errs := Pods().ValidateUpdate(rebound, img); !slices.Contains(errFields(errs), "spec") {
		t.Error("rebinding allowed")
	}
}

func TestAttrsScaleAndGrace(t *testing.T) {
	p := pod("p")
	p.Spec.NodeName = "n1"
	p.Labels = map[string]string{"a": "b"}
	Pods().Default(p)
	Pods().PrepareForCreate(p)
	l, f, err := Pods().GetAttrs(p)
	if err != nil || l["a"] != "b" || f["spec.nodeName"] != "n1" || f["status.phase"] != "Pending" || f["metadata.namespace"] != "default" {
		t.Errorf("attrs %v %v %v", l, f, err)
	}
	if _, _, err := Pods().GetAttrs(&corev1.Node{}); err == nil {
		t.Error("GetAttrs accepted a node")
	}
	graceful, grace := Pods().GracefulDelete(p, nil)
	if !graceful || grace != 30 {
		t.Errorf("bound pod: %v %d", graceful, grace)
	}
	if graceful, _ := Pods().GracefulDelete(p, ptr[int64](0)); graceful {
		t.Error("grace 0 is graceful")
	}
	if graceful, _ := Pods().GracefulDelete(pod("unbound"), nil); graceful {
		t.Error("unbound pod is graceful")
	}
	if graceful, _ := ConfigMaps().GracefulDelete(&corev1.ConfigMap{}, nil); graceful {
		t.Error("configmap is graceful")
	}

	d := deployment("d")
	d.Spec.Replicas = ptr[int32](3)
	d.Status.Replicas = 2
	sc, err := Deployments().Scale(d)
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=d" {
		t.Errorf("scale %+v %v", sc, err)
	}
	if err := Deployments().SetReplicas(d, 7); err != nil || *d.Spec.Replicas != 7 {
		t.Errorf("set replicas %v", err)
	}
	if _, err := Pods().Scale(p); err == nil {
		t.Error("pods have a scale")
	}
}

package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// recordingPlugin records what the chain shows it, labels the objects it
// may change, and refuses what carries the label deny=<phase>.
type recordingPlugin struct {
	mu   sync.Mutex
	seen []string
}

func (p *recordingPlugin) Handles(admission.Operation) bool { return true }

func (p *recordingPlugin) record(phase string, a *admission.Attributes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := "-"
	if a.OldObject != nil {
		old = fmt.Sprintf("%T", a.OldObject)
	}
	obj := "-"
	if a.Object != nil {
		obj = fmt.Sprintf("%T", a.Object)
	}
	user := ""
	if a.User != nil {
		user = a.User.Name
	}
	p.seen = append(p.seen, fmt.Sprintf("%s %s %s %s/%s %s %s/%s obj=%s old=%s dry=%v opts=%T user=%s", phase, a.Operation, a.Kind.Kind, a.Resource.Resource, a.Subresource, a.Kind.Version, a.Namespace, a.Name, obj, old, a.DryRun, a.Options, user))
}

func denied(a *admission.Attributes, phase string) bool {
	if a.Object == nil {
		return false
	}
	m, ok := a.Object.(metav1.Object)
	return ok && m.GetLabels()["deny"] == phase
}

func (p *recordingPlugin) Admit(_ context.Context, a *admission.Attributes) error {
	p.record("admit", a)
	if denied(a, "admit") {
		return fmt.Errorf("refused while mutating")
	}
	switch o := a.Object.(type) {
	case *corev1.ConfigMap:
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels["admitted"] = strings.ToLower(string(a.Operation))
	case *autoscalingv1.Scale:
		if o.Spec.Replicas > 10 {
			o.Spec.Replicas = 10
		}
	}
	a.AddWarning("seen by the test plugin")
	return nil
}

func (p *recordingPlugin) Validate(_ context.Context, a *admission.Attributes) error {
	p.record("validate", a)
	if denied(a, "validate") {
		return apierrors.NewBadRequest("refused while validating")
	}
	return nil
}

func (p *recordingPlugin) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

func newAdmissionEnv(t *testing.T) (*testEnv, *recordingPlugin) {
	p := &recordingPlugin{}
	e := newTestEnv(t, func(c *Config) {
		c.Admission.Enable = []string{admission.AlwaysAdmit}
		c.Admission.Plugins = admission.Plugins{admission.AlwaysAdmit: func(*admission.Config) (admission.Interface, error) { return p, nil }}
	})
	return e, p
}

func TestAdmissionChainSeesEveryWriteAsKubernetesShowsIt(t *testing.T) {
	e, p := newAdmissionEnv(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "1"}}
	r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", cm)
	r.expect(t, http.StatusCreated, "")
	var got corev1.ConfigMap
	r.decode(t, &got)
	if got.Labels["admitted"] != "create" {
		t.Fatalf("the mutation of the create was not stored: labels %v", got.Labels)
	}
	if w := r.header.Values("Warning"); len(w) == 0 || !strings.Contains(w[0], "seen by the test plugin") {
		t.Fatalf("warning header = %q", w)
	}
	want := []string{
		"admit CREATE ConfigMap configmaps/ v1 default/c obj=*v1.ConfigMap old=- dry=false opts=*v1.CreateOptions user=system:anonymous",
		"validate CREATE ConfigMap configmaps/ v1 default/c obj=*v1.ConfigMap old=- dry=false opts=*v1.CreateOptions user=system:anonymous",
	}
	checkSeen(t, p.take(), want)

	got.Data["a"] = "2"
	e.do(http.MethodPut, "/api/v1/namespaces/default/configmaps/c?dryRun=All", &got).expect(t, http.StatusOK, "")
	checkSeen(t, p.take(), []string{
		"admit UPDATE ConfigMap configmaps/ v1 default/c obj=*v1.ConfigMap old=*v1.ConfigMap dry=true opts=*v1.UpdateOptions user=system:anonymous",
		"validate UPDATE ConfigMap configmaps/ v1 default/c obj=*v1.ConfigMap old=*v1.ConfigMap dry=true opts=*v1.UpdateOptions user=system:anonymous",
	})
	r = e.do(http.MethodPatch, "/api/v1/namespaces/default/configmaps/c", `{"data":{"b":"x"}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, http.StatusOK, "")
	r.decode(t, &got)
	if got.Labels["admitted"] != "update" || got.Data["a"] != "1" {
		t.Fatalf("after the patch: labels %v data %v (the dry run must not have stored)", got.Labels, got.Data)
	}
	p.take()
	e.do(http.MethodDelete, "/api/v1/namespaces/default/configmaps/c", nil).expect(t, http.StatusOK, "")
	checkSeen(t, p.take(), []string{
		"admit DELETE ConfigMap configmaps/ v1 default/c obj=- old=*v1.ConfigMap dry=false opts=*v1.DeleteOptions user=system:anonymous",
		"validate DELETE ConfigMap configmaps/ v1 default/c obj=- old=*v1.ConfigMap dry=false opts=*v1.DeleteOptions user=system:anonymous",
	})
}

func checkSeen(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the chain saw:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAdmissionRefusalStoresNothing(t *testing.T) {
	e, _ := newAdmissionEnv(t)
	for _, phase := range []string{"admit", "validate"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c-" + phase, Labels: map[string]string{"deny": phase}}}
		r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", cm)
		if phase == "admit" {
			r.expect(t, http.StatusForbidden, metav1.StatusReasonForbidden)
			if msg := r.status(t).Message; msg != `configmaps "c-admit" is forbidden: refused while mutating` {
				t.Fatalf("message = %q", msg)
			}
		} else {
			r.expect(t, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		}
		e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/c-"+phase, nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)
	}
	// An update refused keeps the stored object.
	e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"a": "1"}}).expect(t, http.StatusCreated, "")
	r := e.do(http.MethodPatch, "/api/v1/namespaces/default/configmaps/kept", `{"metadata":{"labels":{"deny":"validate"}},"data":{"a":"2"}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	var cm corev1.ConfigMap
	e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/kept", nil).decode(t, &cm)
	if cm.Data["a"] != "1" {
		t.Fatalf("a refused update was stored: %v", cm.Data)
	}
}

func TestAdmissionOfTheScaleSubresourceSeesScales(t *testing.T) {
	e, p := newAdmissionEnv(t)
	e.mustCreate("/apis/apps/v1/namespaces/default/deployments", testDeployment("d", 1), nil)
	p.take()
	r := e.do(http.MethodPatch, "/apis/apps/v1/namespaces/default/deployments/d/scale", `{"spec":{"replicas":50}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, http.StatusOK, "")
	checkSeen(t, p.take(), []string{
		"admit UPDATE Scale deployments/scale v1 default/d obj=*v1.Scale old=*v1.Scale dry=false opts=*v1.UpdateOptions user=system:anonymous",
		"validate UPDATE Scale deployments/scale v1 default/d obj=*v1.Scale old=*v1.Scale dry=false opts=*v1.UpdateOptions user=system:anonymous",
	})
	var d appsv1.Deployment
	e.do(http.MethodGet, deployPath("default", "d"), nil).decode(t, &d)
	if *d.Spec.Replicas != 10 {
		t.Fatalf("replicas = %d, want the 10 the plugin capped the Scale to", *d.Spec.Replicas)
	}
}

func TestAdmissionPluginFlagsAsKubeAPIServer(t *testing.T) {
	for _, tc := range []struct {
		enable, disable []string
		err             string
	}{
		{enable: []string{"NoSuchPlugin"}, err: `enable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{enable: []string{admission.AlwaysDeny}, disable: []string{admission.AlwaysDeny}, err: "AlwaysDeny in enable-admission-plugins and disable-admission-plugins overlapped"},
	} {
		if _, err := admission.Enabled(tc.enable, tc.disable); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Enabled(%v, %v) = %v, want %q", tc.enable, tc.disable, err, tc.err)
		}
	}
	e := newTestEnv(t, func(c *Config) { c.Admission.Enable = []string{admission.AlwaysDeny} })
	r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	r.expect(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if msg := r.status(t).Message; msg != `configmaps "x" is forbidden: admission control is denying all modifications` {
		t.Fatalf("message = %q", msg)
	}
}

func TestAdmissionSourceFollowsTheStore(t *testing.T) {
	e := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.server.RunControllers(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	src := e.server.admSource
	// The follower starts on first use, listing what exists.
	var created corev1.ConfigMap
	e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}).decode(t, &created)
	if err := e.server.WaitForAdmission(ctx, gvr, created.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	objs, rev1, err := src.List(ctx, gvr, "default")
	if err != nil || len(objs) != 1 || accessor(objs[0]).GetName() != "a" {
		t.Fatalf("List = %v, %v", objs, err)
	}
	if k := objs[0].GetObjectKind().GroupVersionKind().Kind; k != "ConfigMap" {
		t.Fatalf("listed objects have kind %q", k)
	}
	// Later changes arrive through the watch, with a new revision.
	e.do(http.MethodPost, "/api/v1/namespaces/kube-system/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}).decode(t, &created)
	if err := e.server.WaitForAdmission(ctx, gvr, created.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	all, rev2, err := src.List(ctx, gvr, "")
	if err != nil || len(all) < 2 || rev2 == rev1 {
		t.Fatalf("List(all) = %d objects, revision %d (was %d), %v", len(all), rev2, rev1, err)
	}
	if _, err := src.Get(ctx, gvr, "kube-system", "b"); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodDelete, "/api/v1/namespaces/kube-system/configmaps/b", nil).expect(t, http.StatusOK, "")
	var list corev1.ConfigMapList
	e.do(http.MethodGet, "/api/v1/configmaps", nil).decode(t, &list)
	if err := e.server.WaitForAdmission(ctx, gvr, list.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Get(ctx, gvr, "kube-system", "b"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a deleted object = %v, want NotFound", err)
	}
}

func TestServiceAccountAdmissionOnlyWhenEnabled(t *testing.T) {
	pod := testPod("p", nil)
	// The library default, as envtest: pods need no ServiceAccount.
	e := newTestEnv(t, func(c *Config) { c.Admission = AdmissionConfig{} })
	e.do(http.MethodPost, podPath("default", ""), pod).expect(t, http.StatusCreated, "")
	// Enabled, as kplane apiserver and up do: kube's refusal.
	e = newTestEnv(t, func(c *Config) { c.Admission = AdmissionConfig{Enable: []string{admission.ServiceAccount}} })
	pod.Spec.ServiceAccountName = "robot"
	r := e.do(http.MethodPost, podPath("default", ""), pod)
	r.expect(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if msg := r.status(t).Message; msg != `pods "p" is forbidden: error looking up service account default/robot: serviceaccount "robot" not found` {
		t.Fatalf("message = %q", msg)
	}
	e.do(http.MethodPost, "/api/v1/namespaces/default/serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}).expect(t, http.StatusCreated, "")
	r = e.do(http.MethodPost, podPath("default", ""), pod)
	r.expect(t, http.StatusCreated, "")
	var got corev1.Pod
	r.decode(t, &got)
	if len(got.Spec.Volumes) != 1 || !strings.HasPrefix(got.Spec.Volumes[0].Name, "kube-api-access-") || got.Spec.Containers[0].VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
		t.Fatalf("the token volume is not mounted: %+v %+v", got.Spec.Volumes, got.Spec.Containers[0].VolumeMounts)
	}
}

func TestAdmissionSeesBindings(t *testing.T) {
	e, p := newAdmissionEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	p.take()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	e.do(http.MethodPost, podPath("default", "p")+"/binding", b).expect(t, http.StatusCreated, "")
	seen := p.take()
	if len(seen) < 2 || seen[0] != "admit CREATE Binding pods/binding v1 default/p obj=*v1.Binding old=- dry=false opts=*v1.CreateOptions user=system:anonymous" {
		t.Fatalf("the chain saw %q", seen)
	}
}

func TestAdmissionEquivalentResourcesAreTheOtherServedVersions(t *testing.T) {
	e := newTestEnv(t)
	v2 := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	o := admissionObjects{s: e.server, res: e.server.lookup(v2)}
	got := o.EquivalentResources(v2, "")
	if len(got) != 1 || got[0].Resource.Version != "v1" || got[0].Kind.Kind != "HorizontalPodAutoscaler" {
		t.Fatalf("equivalents of %s = %+v", v2, got)
	}
	if got := o.EquivalentResources(v2, "status"); len(got) != 1 || got[0].Resource.Version != "v1" {
		t.Fatalf("equivalents of %s/status = %+v", v2, got)
	}
	if got := o.EquivalentResources(corev1.SchemeGroupVersion.WithResource("pods"), ""); len(got) != 0 {
		t.Fatalf("pods have equivalents %+v", got)
	}
}

func TestAdmissionResolverListsSubresources(t *testing.T) {
	e := newTestEnv(t)
	seen := map[string]schema.GroupVersionKind{}
	for _, sr := range (admissionResolver{e.server}).Served() {
		seen[sr.Resource.String()+"/"+sr.Subresource] = sr.Kind
	}
	deploy := "apps/v1, Resource=deployments/"
	if _, ok := seen[deploy]; !ok {
		t.Fatalf("deployments missing: %v", seen)
	}
	if k := seen[deploy+"status"]; k.Kind != "Deployment" {
		t.Fatalf("deployments/status kind %v", k)
	}
	if k := seen[deploy+"scale"]; k != scaleGVK {
		t.Fatalf("deployments/scale kind %v", k)
	}
}

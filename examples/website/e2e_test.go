package website

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// startE2E starts a kplane API server serving the Website CRD of
// config/crd, with the operator running against it, and returns it with a
// fresh namespace for the test.
func startE2E(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	env := testenv.Start(t,
		testenv.WithCRDsFromDir("config/crd"),
		testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
			ctrl, err := New(Config{Client: env.Client, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
			if err != nil {
				return err
			}
			return ctrl.Run(ctx, 2)
		}),
	)
	return env, env.Namespace(t)
}

// patchWebsite merge-patches the spec of ns/name, which conflicts with no
// write of the operator's.
func patchWebsite(t *testing.T, env *testenv.Env, ns, name, patch string) {
	t.Helper()
	if _, err := client.NewResource(env.Client, Websites).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// markReady writes the status a Deployment controller writes once every
// replica of d's current generation is ready (there is no Deployment
// controller in a testenv).
func markReady(t *testing.T, env *testenv.Env, d *appsv1.Deployment) {
	t.Helper()
	rc := client.NewResource(env.Client, client.Deployments).Namespace(d.Namespace)
	n := *d.Spec.Replicas
	d = d.DeepCopy()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	if _, err := rc.UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForEvent waits for an event of the operator's with reason about the
// Website name, listing events and watching for the next change.
func waitForEvent(t *testing.T, env *testenv.Env, ns, name, reason string) {
	t.Helper()
	rc := client.NewResource(env.Client, client.Events).Namespace(ns)
	ctx, cancel := context.WithTimeout(t.Context(), testenvWait)
	defer cancel()
	for {
		list, err := rc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("waiting for event %s on %s: %v", reason, name, err)
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == name && ev.InvolvedObject.Kind == "Website" &&
				ev.InvolvedObject.APIVersion == GroupVersion.String() && ev.Reason == reason && ev.Source.Component == Name {
				return
			}
		}
		w, err := rc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("waiting for event %s on %s: %v", reason, name, err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
		}
		w.Stop()
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for event %s on %s", reason, name)
		}
	}
}

// testenvWait bounds waitForEvent as testenv bounds WaitFor by default.
const testenvWait = 30 * time.Second

func controlledBy(d *appsv1.Deployment, site *Website) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == site.UID && ref.Kind == "Website" && ref.APIVersion == GroupVersion.String() &&
		ref.Name == site.Name && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

func webContainer(d *appsv1.Deployment) corev1.Container {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			return c
		}
	}
	return corev1.Container{}
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, ns := startE2E(t)
	ctx := t.Context()
	sites := client.NewResource(env.Client, Websites).Namespace(ns)
	key := ns + "/blog"

	// A new Website: the server defaults it, the operator puts its
	// finalizer on and creates a Deployment it controls.
	site, err := sites.Create(ctx, &Website{ObjectMeta: metav1.ObjectMeta{Name: "blog"}, Spec: WebsiteSpec{Image: "nginx:1.27"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if site.Spec.Replicas == nil || *site.Spec.Replicas != 1 || site.Spec.Port == nil || *site.Spec.Port != 8080 {
		t.Fatalf("schema defaults not applied: %+v", site.Spec)
	}
	d := testenv.WaitFor(t, env, client.Deployments, key, func(d *appsv1.Deployment) bool {
		c := webContainer(d)
		return controlledBy(d, site) && c.Image == "nginx:1.27" && len(c.Ports) == 1 && c.Ports[0].ContainerPort == 8080 &&
			d.Spec.Replicas != nil && *d.Spec.Replicas == 1
	})
	if d.Labels[NameLabel] != "blog" || d.Spec.Selector.MatchLabels[NameLabel] != "blog" || d.Spec.Template.Labels[NameLabel] != "blog" {
		t.Errorf("deployment labels %v, selector %v, template labels %v", d.Labels, d.Spec.Selector, d.Spec.Template.Labels)
	}
	testenv.WaitFor(t, env, Websites, key, func(w *Website) bool {
		return len(w.Finalizers) == 1 && w.Finalizers[0] == Finalizer &&
			meta.IsStatusConditionFalse(w.Status.Conditions, ConditionReady) && w.Status.ObservedGeneration == w.Generation
	})
	waitForEvent(t, env, ns, "blog", ReasonCreated)

	// A new image and replica count: the Deployment follows.
	patchWebsite(t, env, ns, "blog", `{"spec":{"image":"nginx:1.28","replicas":3}}`)
	d = testenv.WaitFor(t, env, client.Deployments, key, func(d *appsv1.Deployment) bool {
		return webContainer(d).Image == "nginx:1.28" && *d.Spec.Replicas == 3
	})
	waitForEvent(t, env, ns, "blog", ReasonUpdated)

	// The Deployment's pods become ready: so does the Website.
	markReady(t, env, d)
	site = testenv.WaitFor(t, env, Websites, key, func(w *Website) bool {
		return meta.IsStatusConditionTrue(w.Status.Conditions, ConditionReady) && w.Status.ReadyReplicas == 3 && w.Status.ObservedGeneration == w.Generation
	})
	if site.Generation != 2 {
		t.Errorf("generation %d after one spec change, want 2", site.Generation)
	}
	for _, typ := range []string{ConditionReady, ConditionProgressing} {
		c := meta.FindStatusCondition(site.Status.Conditions, typ)
		if c == nil || c.Reason == "" || c.Message == "" || c.LastTransitionTime.IsZero() || c.ObservedGeneration != site.Generation {
			t.Errorf("condition %s = %+v", typ, c)
		}
	}
	if !meta.IsStatusConditionFalse(site.Status.Conditions, ConditionProgressing) {
		t.Errorf("Progressing = %+v, want False once rolled out", meta.FindStatusCondition(site.Status.Conditions, ConditionProgressing))
	}

	// The printer columns.
	table := getTable(t, env, ns)
	want := []string{"Name", "Image", "Replicas", "Ready", "Age"}
	if got := table.columns(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("columns %v, want %v", got, want)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[:4]) != "[blog nginx:1.28 3 3]" {
		t.Errorf("rows %+v", table.Rows)
	}

	// Deleting the Website: the Deployment goes first, then the
	// finalizer, then the Website.
	if err := sites.Delete(ctx, "blog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Deployments, key)
	testenv.WaitForDeletion(t, env, Websites, key)
	waitForEvent(t, env, ns, "blog", ReasonCleanedUp)
}

// TestDeletionWaitsForDeployment: the finalizer stays on a deleted
// Website for as long as the server has its Deployment, here held by a
// finalizer of someone else's.
func TestDeletionWaitsForDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, ns := startE2E(t)
	ctx := t.Context()
	sites := client.NewResource(env.Client, Websites).Namespace(ns)
	deployments := client.NewResource(env.Client, client.Deployments).Namespace(ns)
	key := ns + "/slow"
	site, err := sites.Create(ctx, &Website{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: WebsiteSpec{Image: "nginx:1.27"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Deployments, key, func(d *appsv1.Deployment) bool { return controlledBy(d, site) })
	const hold = "test.examples.kplane.dev/hold"
	if _, err := deployments.Patch(ctx, "slow", types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+hold+`"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := sites.Delete(ctx, "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Deployments, key, func(d *appsv1.Deployment) bool { return d.DeletionTimestamp != nil })
	waitForEvent(t, env, ns, "slow", ReasonDeleting)
	got, err := sites.Get(ctx, "slow", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("website gone while its deployment is not: %v", err)
	}
	if got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != Finalizer {
		t.Fatalf("deleted website's metadata: %+v", got.ObjectMeta)
	}

	// Once the Deployment goes, so do the finalizer and the Website.
	if _, err := deployments.Patch(ctx, "slow", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Deployments, key)
	testenv.WaitForDeletion(t, env, Websites, key)
	waitForEvent(t, env, ns, "slow", ReasonCleanedUp)
}

// TestInvalidWebsite: the server refuses what the CRD's schema and CEL
// rule forbid, with 422 and the reasons.
func TestInvalidWebsite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, ns := startE2E(t)
	sites := client.NewResource(env.Client, Websites).Namespace(ns)
	for _, tc := range []struct {
		name string
		spec WebsiteSpec
		want []string
	}{
		{"no tag", WebsiteSpec{Image: "nginx"}, []string{"image must name a tag"}},
		{"too many replicas", WebsiteSpec{Image: "nginx:1.27", Replicas: int32p(11)}, []string{"spec.replicas", "should be less than or equal to 10"}},
		{"negative replicas", WebsiteSpec{Image: "nginx:1.27", Replicas: int32p(-1)}, []string{"spec.replicas", "should be greater than or equal to 0"}},
		{"both", WebsiteSpec{Image: "nginx", Replicas: int32p(11)}, []string{"image must name a tag", "should be less than or equal to 10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sites.Create(t.Context(), &Website{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec}, metav1.CreateOptions{})
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != 422 || !apierrors.IsInvalid(err) {
				t.Fatalf("create = %v, want 422 Invalid", err)
			}
			t.Logf("server said: %s", se.ErrStatus.Message)
			for _, w := range tc.want {
				if !strings.Contains(se.ErrStatus.Message, w) {
					t.Errorf("message %q does not say %q", se.ErrStatus.Message, w)
				}
			}
		})
	}
	// A valid one is accepted, and a change to an invalid spec refused.
	if _, err := sites.Create(t.Context(), &Website{ObjectMeta: metav1.ObjectMeta{Name: "good"}, Spec: WebsiteSpec{Image: "nginx:1.27"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := sites.Patch(t.Context(), "good", types.MergePatchType, []byte(`{"spec":{"image":"nginx"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "image must name a tag") {
		t.Fatalf("patch to an untagged image = %v, want 422", err)
	}
}

// TestForeignDeployment: a Deployment of the Website's name that the
// Website does not control is left alone, with a Warning.
func TestForeignDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, ns := startE2E(t)
	ctx := t.Context()
	theirs, err := client.NewResource(env.Client, client.Deployments).Namespace(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sites := client.NewResource(env.Client, Websites).Namespace(ns)
	if _, err := sites.Create(ctx, &Website{ObjectMeta: metav1.ObjectMeta{Name: "taken"}, Spec: WebsiteSpec{Image: "nginx:1.27"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, env, ns, "taken", ReasonResourceExists)
	// Deleting the Website leaves their Deployment.
	if err := sites.Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, Websites, ns+"/taken")
	got, err := client.NewResource(env.Client, client.Deployments).Namespace(ns).Get(ctx, "taken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != theirs.ResourceVersion {
		t.Errorf("foreign deployment changed: %+v", got.ObjectMeta)
	}
}

// table is the part of a meta.k8s.io/v1 Table the test reads.
type table struct {
	ColumnDefinitions []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
}

func (tb table) columns() []string {
	var out []string
	for _, c := range tb.ColumnDefinitions {
		out = append(out, c.Name)
	}
	return out
}

// getTable lists the Websites of ns as kubectl get does: as a Table.
func getTable(t *testing.T, env *testenv.Env, ns string) table {
	t.Helper()
	resp, err := env.Client.Do(t.Context(), client.Request{
		Path:   client.CollectionPath(Websites.GroupVersionResource, ns),
		Header: map[string][]string{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var tb table
	if err := json.Unmarshal(resp.Body, &tb); err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestNewRequiresClient keeps New's validation honest.
func TestNewRequiresClient(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, errNoClient) {
		t.Fatalf("New = %v", err)
	}
}

// testWriter sends log lines to the test's log, shown when it fails.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

package compat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// wantApplyConflict checks that err is the 409 kube-apiserver answers for
// an apply conflict: reason Conflict, the message naming the managers and
// paths, one FieldManagerConflict cause per conflicting field, and no
// object name or kind in the details.
func wantApplyConflict(t testing.TB, err error, message string, causes ...metav1.StatusCause) {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want an apply conflict", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("err %T carries no Status", err)
	}
	st := status.Status()
	if st.Code != 409 || st.Status != metav1.StatusFailure {
		t.Errorf("status code %d status %q, want 409 Failure", st.Code, st.Status)
	}
	if st.Message != message {
		t.Errorf("conflict message\n got %q\nwant %q", st.Message, message)
	}
	want := &metav1.StatusDetails{Causes: causes}
	if diff := cmp.Diff(want, st.Details); diff != "" {
		t.Errorf("conflict details (-want +got):\n%s", diff)
	}
}

// conflictCause is the cause kube-apiserver lists for one field held by
// manager (already printed, quoted, as the server prints it).
func conflictCause(manager, field string) metav1.StatusCause {
	return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: "conflict with " + manager, Field: field}
}

// managedEntry returns the managedFields entry of manager for operation
// and subresource, failing when there is none.
func managedEntry(t testing.TB, obj metav1.Object, manager string, op metav1.ManagedFieldsOperationType, subresource string) metav1.ManagedFieldsEntry {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == op && e.Subresource == subresource {
			return e
		}
	}
	t.Fatalf("no managedFields entry for %s %s %q in %s", manager, op, subresource, managersOf(obj))
	return metav1.ManagedFieldsEntry{}
}

// managersOf lists obj's managedFields as "manager/operation/subresource".
func managersOf(obj metav1.Object) string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// wantFieldSet decodes an entry's fieldsV1 with structured-merge-diff,
// as client-go and kube-apiserver do, and compares it with want (the
// same JSON encoding, in any key order).
func wantFieldSet(t testing.TB, e metav1.ManagedFieldsEntry, want string) {
	t.Helper()
	if e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
		t.Fatalf("entry %s: fieldsType %q fieldsV1 %v", e.Manager, e.FieldsType, e.FieldsV1)
	}
	var got, exp fieldpath.Set
	if err := got.FromJSON(strings.NewReader(e.FieldsV1.GetRawString())); err != nil {
		t.Fatalf("entry %s: fieldsV1 does not decode: %v\n%s", e.Manager, err, e.FieldsV1.GetRawString())
	}
	if err := exp.FromJSON(strings.NewReader(want)); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	if !got.Equals(&exp) {
		t.Errorf("entry %s fields\n got %s\nwant %s\n only in got: %s\n only in want: %s", e.Manager, e.FieldsV1.GetRawString(), want,
			got.Difference(&exp), exp.Difference(&got))
	}
}

// TestApplyConfigMapWithApplyConfigurations drives server-side apply of a
// ConfigMap with client-go's typed apply configurations: ownership,
// conflicts with appliers and updaters, sharing, force, removal of fields
// an applier stops sending, extraction of what a manager applied, and dry
// run.
func TestApplyConfigMapWithApplyConfigurations(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cms := srv.clientset(t).CoreV1().ConfigMaps("default")

	alice := corev1ac.ConfigMap("settings", "default").
		WithLabels(map[string]string{"app": "web"}).
		WithData(map[string]string{"a": "1", "b": "2", "c": "3"})
	got, err := cms.Apply(ctx, alice, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("first apply: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"a": "1", "b": "2", "c": "3"}, got.Data); diff != "" {
		t.Errorf("data after create (-want +got):\n%s", diff)
	}
	e := managedEntry(t, got, "alice", metav1.ManagedFieldsOperationApply, "")
	if e.APIVersion != "v1" || e.Time == nil || len(got.ManagedFields) != 1 {
		t.Errorf("managedFields after first apply: %+v", got.ManagedFields)
	}
	wantFieldSet(t, e, `{"f:data":{"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`)
	extracted, err := corev1ac.ExtractConfigMap(got, "alice")
	if err != nil {
		t.Fatalf("extract alice: %v", err)
	}
	if diff := cmp.Diff(alice, extracted); diff != "" {
		t.Errorf("ExtractConfigMap(alice) is not what alice applied (-applied +extracted):\n%s", diff)
	}

	// Another applier changing alice's value conflicts, and a missing
	// fieldManager is refused the way kube-apiserver refuses it.
	bob := corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "9"})
	_, err = cms.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "alice": .data.a`, conflictCause(`"alice"`, ".data.a"))
	two := corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "9", "b": "9"})
	_, err = cms.Apply(ctx, two, metav1.ApplyOptions{FieldManager: "bob"})
	wantApplyConflict(t, err, "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b",
		conflictCause(`"alice"`, ".data.a"), conflictCause(`"alice"`, ".data.b"))

	// Applying the value alice holds shares the field.
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "1"}),
		metav1.ApplyOptions{FieldManager: "bob"}); err != nil {
		t.Fatalf("apply of the same value: %v", err)
	}
	// Force takes the field from alice.
	got, err = cms.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if got.Data["a"] != "9" {
		t.Errorf("data after force = %v", got.Data)
	}
	extracted, err = corev1ac.ExtractConfigMap(got, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantAlice := corev1ac.ConfigMap("settings", "default").
		WithLabels(map[string]string{"app": "web"}).
		WithData(map[string]string{"b": "2", "c": "3"})
	if diff := cmp.Diff(wantAlice, extracted); diff != "" {
		t.Errorf("alice after bob forced .data.a (-want +extracted):\n%s", diff)
	}

	// A field alice stops applying, and nobody else holds, is removed.
	got, err = cms.Apply(ctx, corev1ac.ConfigMap("settings", "default").
		WithLabels(map[string]string{"app": "web"}).
		WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply without c: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"a": "9", "b": "2"}, got.Data); diff != "" {
		t.Errorf("data after alice dropped c (-want +got):\n%s", diff)
	}

	// An update takes the fields it changes; the conflict names the
	// updater (the first word of client-go's user agent) and its version.
	got.Data["b"] = "5"
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("settings", "default").
		WithLabels(map[string]string{"app": "web"}).
		WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "kplane-compat" using v1: .data.b`,
		conflictCause(`"kplane-compat" using v1`, ".data.b"))

	// Dry run answers with the result and stores nothing.
	draft := corev1ac.ConfigMap("draft", "default").WithData(map[string]string{"k": "v"})
	dry, err := cms.Apply(ctx, draft, metav1.ApplyOptions{FieldManager: "alice", DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run apply: %v", err)
	}
	if dry.Data["k"] != "v" || len(dry.ManagedFields) != 1 || dry.ManagedFields[0].Manager != "alice" {
		t.Errorf("dry-run answer: data %v managedFields %s", dry.Data, managersOf(dry))
	}
	if _, err := cms.Get(ctx, "draft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry-run apply: %v, want NotFound", err)
	}
	if _, err := cms.Apply(ctx, bob.WithData(map[string]string{"a": "dry"}), metav1.ApplyOptions{FieldManager: "bob", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run apply of a change: %v", err)
	}
	if stored, err := cms.Get(ctx, "settings", metav1.GetOptions{}); err != nil || stored.Data["a"] != "9" {
		t.Errorf("after dry-run change: %v, %v", stored.Data, err)
	}

	// Apply without a fieldManager (client-go refuses to send one, so a
	// raw patch): 422 with the cause kube-apiserver gives.
	_, err = cms.Patch(ctx, "settings", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("apply without fieldManager: %v, want Invalid", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Field != "fieldManager" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueRequired {
		t.Errorf("apply without fieldManager: %+v", st.Details)
	}
}

// webDeployment is alice's apply configuration of a Deployment with a
// container, a port and an environment variable.
func webDeployment(withEnv bool) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "web"}
	c := corev1ac.Container().WithName("web").WithImage("nginx:1.27").
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(80).WithProtocol(corev1.ProtocolTCP))
	if withEnv {
		c.WithEnv(corev1ac.EnvVar().WithName("MODE").WithValue("prod"))
	}
	return appsv1ac.Deployment("web", "default").
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(c))))
}

// TestApplyDeploymentWithApplyConfigurations applies a Deployment and its
// status with client-go's apply configurations: containers merge by name,
// a second applier's container is kept beside the first, a conflicting
// image is refused, dropped env is removed, and what each manager applied
// is extracted back.
func TestApplyDeploymentWithApplyConfigurations(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	deps := srv.clientset(t).AppsV1().Deployments("default")

	alice := webDeployment(true)
	got, err := deps.Apply(ctx, alice, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got.Generation != 1 || got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		got.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("applied deployment not defaulted: generation %d strategy %q", got.Generation, got.Spec.Strategy.Type)
	}
	extracted, err := appsv1ac.ExtractDeployment(got, "alice")
	if err != nil {
		t.Fatalf("extract alice: %v", err)
	}
	if diff := cmp.Diff(alice, extracted); diff != "" {
		t.Errorf("ExtractDeployment(alice) is not what alice applied (-applied +extracted):\n%s", diff)
	}

	// A second applier adds a sidecar: containers are a map keyed by name.
	bob := appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().
		WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("sidecar").WithImage("busybox")))))
	got, err = deps.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("bob's apply: %v", err)
	}
	if names := containerNames(got); names != "web,sidecar" {
		t.Errorf("containers after bob = %s, want web,sidecar", names)
	}
	extracted, err = appsv1ac.ExtractDeployment(got, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bob, extracted); diff != "" {
		t.Errorf("ExtractDeployment(bob) (-applied +extracted):\n%s", diff)
	}

	// Changing alice's image conflicts on the keyed path.
	carol := appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().
		WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("web").WithImage("nginx:1.28")))))
	_, err = deps.Apply(ctx, carol, metav1.ApplyOptions{FieldManager: "carol"})
	wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "alice": .spec.template.spec.containers[name="web"].image`,
		conflictCause(`"alice"`, `.spec.template.spec.containers[name="web"].image`))

	// alice drops the env var: it goes; bob's sidecar stays.
	got, err = deps.Apply(ctx, webDeployment(false), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply without env: %v", err)
	}
	if env := got.Spec.Template.Spec.Containers[0].Env; len(env) != 0 || containerNames(got) != "web,sidecar" {
		t.Errorf("after alice dropped env: env %v containers %s", env, containerNames(got))
	}

	// Status through the status subresource, extracted back by manager.
	status := appsv1ac.Deployment("web", "default").WithStatus(appsv1ac.DeploymentStatus().
		WithReplicas(2).WithReadyReplicas(1).
		WithConditions(appsv1ac.DeploymentCondition().WithType(appsv1.DeploymentAvailable).
			WithStatus(corev1.ConditionFalse).WithReason("MinimumReplicasUnavailable")))
	got, err = deps.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "status-writer"})
	if err != nil {
		t.Fatalf("apply status: %v", err)
	}
	if got.Status.Replicas != 2 || got.Status.ReadyReplicas != 1 || got.Generation != 3 {
		t.Errorf("after status apply: status %+v generation %d", got.Status, got.Generation)
	}
	e := managedEntry(t, got, "status-writer", metav1.ManagedFieldsOperationApply, "status")
	wantFieldSet(t, e, `{"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:readyReplicas":{},"f:replicas":{}}}`)
	extractedStatus, err := appsv1ac.ExtractDeploymentStatus(got, "status-writer")
	if err != nil {
		t.Fatalf("extract status: %v", err)
	}
	if diff := cmp.Diff(status, extractedStatus); diff != "" {
		t.Errorf("ExtractDeploymentStatus (-applied +extracted):\n%s", diff)
	}

	// Status sent to the main resource is dropped, as kube-apiserver's
	// strategy resets it, and the applier does not come to own it.
	withStatus := webDeployment(false).WithStatus(appsv1ac.DeploymentStatus().WithReplicas(7))
	got, err = deps.Apply(ctx, withStatus, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply with status to the main resource: %v", err)
	}
	if got.Status.Replicas != 2 {
		t.Errorf("status.replicas = %d after a main-resource apply, want 2 (status ignored)", got.Status.Replicas)
	}
	extracted, err = appsv1ac.ExtractDeployment(got, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(webDeployment(false), extracted); diff != "" {
		t.Errorf("alice after applying status to the main resource (-want +extracted):\n%s", diff)
	}

	// Dry run of a new Deployment stores nothing.
	other := webDeployment(false)
	other.WithName("dry")
	if _, err := deps.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "alice", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run apply: %v", err)
	}
	if _, err := deps.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry run: %v, want NotFound", err)
	}
}

func containerNames(d *appsv1.Deployment) string {
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// TestManagedFieldsOfClientGoWrites checks the managedFields kplane keeps
// for client-go's create, update, patch and status update: each entry
// validates and decodes with apimachinery's managedfields and
// structured-merge-diff, names the manager kube-apiserver would (the
// fieldManager option, else the first word of the user agent), and holds
// the fields kube-apiserver would list, defaults included.
func TestManagedFieldsOfClientGoWrites(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cfg := srv.restConfig()
	cfg.UserAgent = "" // client-go's default: "<binary>/<version> (<os>/<arch>) kubernetes/<commit>"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ua := strings.Split(rest.DefaultKubernetesUserAgent(), "/")[0]
	if ua == "" {
		t.Fatal("no default user agent")
	}
	cms := cs.CoreV1().ConfigMaps("default")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"app": "web"}},
		Data: map[string]string{"a": "1", "b": "2"}}
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, created)
	e := managedEntry(t, created, ua, metav1.ManagedFieldsOperationUpdate, "")
	if e.APIVersion != "v1" || e.Time == nil || len(created.ManagedFields) != 1 {
		t.Errorf("managedFields after create: %+v", created.ManagedFields)
	}
	wantFieldSet(t, e, `{"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)

	// An update with a fieldManager adds its own entry for what it changed.
	created.Data["c"] = "3"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, updated)
	wantFieldSet(t, managedEntry(t, updated, "updater", metav1.ManagedFieldsOperationUpdate, ""), `{"f:data":{"f:c":{}}}`)
	wantFieldSet(t, managedEntry(t, updated, ua, metav1.ManagedFieldsOperationUpdate, ""),
		`{"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)

	// A patch changing the updater's field takes it over.
	patched, err := cms.Patch(ctx, "m", types.MergePatchType, []byte(`{"data":{"c":"4"},"metadata":{"labels":{"tier":"x"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, patched)
	if len(patched.ManagedFields) != 1 {
		t.Errorf("managers after the patch = %s, want the patcher alone (the updater's only field was taken)", managersOf(patched))
	}
	wantFieldSet(t, managedEntry(t, patched, ua, metav1.ManagedFieldsOperationUpdate, ""),
		`{"f:data":{".":{},"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}}}`)

	// A status update is recorded against the status subresource.
	dep := deployment("web", 1)
	depCreated, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, depCreated)
	depCreated.Status.Replicas = 1
	depCreated.Status.ObservedGeneration = 1
	st, err := cs.AppsV1().Deployments("default").UpdateStatus(ctx, depCreated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, st)
	e = managedEntry(t, st, ua, metav1.ManagedFieldsOperationUpdate, "status")
	if e.APIVersion != "apps/v1" {
		t.Errorf("status entry apiVersion %q", e.APIVersion)
	}
	wantFieldSet(t, e, `{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}`)
}

// checkManagedFields validates obj's managedFields with apimachinery's
// managedfields package and decodes every entry with structured-merge-diff.
func checkManagedFields(t testing.TB, obj metav1.Object) {
	t.Helper()
	if err := managedfields.ValidateManagedFields(obj.GetManagedFields()); err != nil {
		t.Errorf("managedFields of %s do not validate: %v", obj.GetName(), err)
	}
	for _, e := range obj.GetManagedFields() {
		var s fieldpath.Set
		if e.FieldsV1 == nil {
			t.Errorf("entry %s has no fieldsV1", e.Manager)
			continue
		}
		if err := s.FromJSON(strings.NewReader(e.FieldsV1.GetRawString())); err != nil {
			t.Errorf("entry %s fieldsV1 does not decode: %v", e.Manager, err)
		}
		raw, _ := json.Marshal(e)
		if strings.Contains(string(raw), `"subresource":""`) {
			t.Errorf("entry %s serialises an empty subresource: %s", e.Manager, raw)
		}
	}
}

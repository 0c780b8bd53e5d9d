package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// wantAPIStatus checks err is an API error with this code, reason and
// message.
func wantAPIStatus(t testing.TB, err error, code int32, reason metav1.StatusReason, message string) {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("err = %v, want %d %s", err, code, reason)
	}
	s := st.Status()
	if s.Code != code || s.Reason != reason || s.Message != message {
		t.Errorf("status %d %s %q\nwant %d %s %q", s.Code, s.Reason, s.Message, code, reason, message)
	}
}

// TestApplyEdgesWithClientGo checks the server-side apply behaviours
// clients meet less often, each against what kube-apiserver answers.
func TestApplyEdgesWithClientGo(t *testing.T) {
	srv := startServer(t)
	cs := srv.clientset(t)
	cms := cs.CoreV1().ConfigMaps("default")
	deps := cs.AppsV1().Deployments("default")
	ctx := context.Background()

	tests := []struct {
		name string
		run  func(t *testing.T, cs *kubernetes.Clientset)
	}{
		{"an update of the scale subresource takes spec.replicas and the conflict names its subresource and version", func(t *testing.T, _ *kubernetes.Clientset) {
			if _, err := deps.Apply(ctx, webDeployment(false).WithName("scaled"), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
				t.Fatal(err)
			}
			if _, err := deps.UpdateScale(ctx, "scaled", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: "default"},
				Spec: autoscalingv1.ScaleSpec{Replicas: 5}}, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update scale: %v", err)
			}
			got, err := deps.Get(ctx, "scaled", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkManagedFields(t, got)
			e := managedEntry(t, got, "kplane-compat", metav1.ManagedFieldsOperationUpdate, "scale")
			if e.APIVersion != "apps/v1" {
				t.Errorf("scale entry apiVersion %q, want apps/v1 (the parent's)", e.APIVersion)
			}
			wantFieldSet(t, e, `{"f:spec":{"f:replicas":{}}}`)
			_, err = deps.Apply(ctx, webDeployment(false).WithName("scaled"), metav1.ApplyOptions{FieldManager: "alice"})
			wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "kplane-compat" with subresource "scale" using apps/v1: .spec.replicas`,
				conflictCause(`"kplane-compat" with subresource "scale" using apps/v1`, ".spec.replicas"))
		}},
		{"a stale resourceVersion in the applied object is a conflict", func(t *testing.T, _ *kubernetes.Clientset) {
			cur, err := cms.Apply(ctx, corev1ac.ConfigMap("rv", "default").WithData(map[string]string{"k": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Apply(ctx, corev1ac.ConfigMap("rv", "default").WithResourceVersion(cur.ResourceVersion).WithData(map[string]string{"k": "2"}),
				metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
				t.Fatalf("apply at the current resourceVersion: %v", err)
			}
			_, err = cms.Apply(ctx, corev1ac.ConfigMap("rv", "default").WithResourceVersion(cur.ResourceVersion).WithData(map[string]string{"k": "3"}),
				metav1.ApplyOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 409, metav1.StatusReasonConflict,
				`Operation cannot be fulfilled on configmaps "rv": the object has been modified; please apply your changes to the latest version and try again`)
		}},
		{"an apply of another version is a bad request", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := cms.Patch(ctx, "v", types.ApplyPatchType, []byte(`{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"v"}}`),
				metav1.PatchOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 400, metav1.StatusReasonBadRequest, "invalid object type: /v2, Kind=ConfigMap")
		}},
		{"an apply carrying managedFields is a bad request", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := cms.Patch(ctx, "mf", types.ApplyPatchType,
				[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mf","managedFields":[{"manager":"x","operation":"Apply"}]}}`),
				metav1.PatchOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 400, metav1.StatusReasonBadRequest, "metadata.managedFields must be nil")
		}},
		{"an apply naming another object is a bad request", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := cms.Patch(ctx, "url-name", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"body-name"}}`),
				metav1.PatchOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 400, metav1.StatusReasonBadRequest, "the name of the object (body-name) does not match the name on the URL (url-name)")
		}},
		{"force on a patch that is not an apply is refused", func(t *testing.T, _ *kubernetes.Clientset) {
			if _, err := cms.Apply(ctx, corev1ac.ConfigMap("force", "default"), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
				t.Fatal(err)
			}
			_, err := cms.Patch(ctx, "force", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{Force: new(true)})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("merge patch with force: %v, want Invalid", err)
			}
			if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) != 1 ||
				st.Details.Causes[0].Field != "force" || st.Details.Causes[0].Type != metav1.CauseType("FieldValueForbidden") {
				t.Errorf("causes %+v", st.Details)
			}
		}},
		{"a YAML body is accepted as it is by kubectl and curl", func(t *testing.T, cs *kubernetes.Clientset) {
			body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\ndata:\n  k: v # a comment\n"
			res := cs.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace("default").Resource("configmaps").Name("yaml").
				Param("fieldManager", "curl").Body([]byte(body)).Do(ctx)
			if err := res.Error(); err != nil {
				t.Fatalf("YAML apply: %v", err)
			}
			var code int
			res.StatusCode(&code)
			if code != 201 {
				t.Errorf("creating apply answered %d, want 201", code)
			}
			got, err := cms.Get(ctx, "yaml", metav1.GetOptions{})
			if err != nil || got.Data["k"] != "v" {
				t.Fatalf("after YAML apply: %v, %v", got, err)
			}
		}},
		{"more than ten updaters are folded into ancient-changes", func(t *testing.T, _ *kubernetes.Clientset) {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "many"}, Data: map[string]string{"k0": "v"}},
				metav1.CreateOptions{FieldManager: "m0"}); err != nil {
				t.Fatal(err)
			}
			var got *corev1.ConfigMap
			for i := 1; i <= 10; i++ {
				var err error
				got, err = cms.Patch(ctx, "many", types.MergePatchType, fmt.Appendf(nil, `{"data":{"k%d":"v"}}`, i),
					metav1.PatchOptions{FieldManager: fmt.Sprintf("m%d", i)})
				if err != nil {
					t.Fatal(err)
				}
			}
			checkManagedFields(t, got)
			if len(got.ManagedFields) != 10 {
				t.Errorf("%d entries, want 10 (the cap on updaters): %s", len(got.ManagedFields), managersOf(got))
			}
			managedEntry(t, got, "ancient-changes", metav1.ManagedFieldsOperationUpdate, "")
			all := &fieldpath.Set{}
			for _, e := range got.ManagedFields {
				var s fieldpath.Set
				if err := s.FromJSON(strings.NewReader(e.FieldsV1.GetRawString())); err != nil {
					t.Fatal(err)
				}
				all = all.Union(&s)
			}
			for i := 0; i <= 10; i++ {
				if p := fieldpath.MakePathOrDie("data", fmt.Sprintf("k%d", i)); !all.Has(p) {
					t.Errorf("no entry owns %s after folding: %s", p, managersOf(got))
				}
			}
		}},
		{"the default manager is the user agent before its first slash, at most 128 bytes", func(t *testing.T, _ *kubernetes.Clientset) {
			for i, tc := range []struct{ ua, want string }{
				{"my tool with spaces/1.0 (linux)", "my tool with spaces"},
				{strings.Repeat("a", 200) + "/1", strings.Repeat("a", 128)},
			} {
				cfg := srv.restConfig()
				cfg.UserAgent = tc.ua
				c, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("ua%d", i)
				got, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != tc.want {
					t.Errorf("user agent %q: managers %s, want %q", tc.ua, managersOf(got), tc.want)
				}
			}
		}},
		{"a fieldManager longer than 128 bytes is invalid", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := cms.Apply(ctx, corev1ac.ConfigMap("long", "default"), metav1.ApplyOptions{FieldManager: strings.Repeat("m", 129)})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("apply with a long fieldManager: %v, want Invalid", err)
			}
			if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) != 1 ||
				st.Details.Causes[0].Field != "fieldManager" || st.Details.Causes[0].Type != metav1.CauseType("FieldValueTooLong") {
				t.Errorf("causes %+v", st.Details)
			}
		}},
		{"an apply into a missing namespace is not found", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := cs.CoreV1().ConfigMaps("nope").Apply(ctx, corev1ac.ConfigMap("x", "nope"), metav1.ApplyOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 404, metav1.StatusReasonNotFound, `namespaces "nope" not found`)
		}},
		{"an apply of the status of a missing object is not found and creates nothing", func(t *testing.T, _ *kubernetes.Clientset) {
			_, err := deps.ApplyStatus(ctx, appsv1ac.Deployment("ghost", "default").WithStatus(appsv1ac.DeploymentStatus().WithReplicas(1)),
				metav1.ApplyOptions{FieldManager: "alice"})
			wantAPIStatus(t, err, 404, metav1.StatusReasonNotFound, `deployments.apps "ghost" not found`)
			if _, err := deps.Get(ctx, "ghost", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after the status apply: %v", err)
			}
		}},
		{"managedFields set to one empty entry are cleared, and later updates are untracked until an apply", func(t *testing.T, _ *kubernetes.Clientset) {
			cur, err := cms.Apply(ctx, corev1ac.ConfigMap("clear", "default").WithLabels(map[string]string{"l": "v"}).WithData(map[string]string{"k": "v"}),
				metav1.ApplyOptions{FieldManager: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			cur.ManagedFields = []metav1.ManagedFieldsEntry{{}}
			got, err := cms.Update(ctx, cur, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update clearing managedFields: %v", err)
			}
			if len(got.ManagedFields) != 0 {
				t.Errorf("managedFields after clearing = %s, want none", managersOf(got))
			}
			// With nothing tracked, updates stay untracked until an apply.
			got, err = cms.Patch(ctx, "clear", types.MergePatchType, []byte(`{"data":{"k2":"v"}}`), metav1.PatchOptions{FieldManager: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ManagedFields) != 0 {
				t.Errorf("managedFields after an update of an untracked object = %s, want none", managersOf(got))
			}
			got, err = cms.Apply(ctx, corev1ac.ConfigMap("clear", "default").WithData(map[string]string{"k3": "v"}), metav1.ApplyOptions{FieldManager: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			wantFieldSet(t, managedEntry(t, got, "bob", metav1.ManagedFieldsOperationApply, ""), `{"f:data":{"f:k3":{}}}`)
			// A JSON patch of managedFields to one empty entry clears them too.
			got, err = cms.Patch(ctx, "clear", types.JSONPatchType, []byte(`[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("JSON patch clearing managedFields: %v", err)
			}
			if len(got.ManagedFields) != 0 {
				t.Errorf("managedFields after the clearing JSON patch = %s, want none", managersOf(got))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, cs) })
	}
}

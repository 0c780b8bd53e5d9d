package clusterroleaggregation

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func startEnv(t *testing.T) (*testenv.Env, *client.ResourceClient[*rbacv1.ClusterRole]) {
	t.Helper()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 2)
	}))
	return env, client.NewResource(env.Client, client.ClusterRoles)
}

func TestEnvAggregates(t *testing.T) {
	t.Parallel()
	env, roles := startEnv(t)
	ctx := t.Context()
	create := func(r *rbacv1.ClusterRole) {
		t.Helper()
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRules := func(what string, want []rbacv1.PolicyRule) {
		t.Helper()
		t.Log("waiting for", what)
		testenv.WaitFor(t, env, client.ClusterRoles, "monitoring", func(r *rbacv1.ClusterRole) bool {
			return cmp.Equal(want, r.Rules, cmpEmpty)
		})
	}
	sel := map[string]string{"aggregate-to-monitoring": "true"}
	create(aggregating("monitoring", nil, sel))
	create(cr("pods-reader", sel, getPods))
	waitRules("pods", []rbacv1.PolicyRule{getPods})

	// A second matching role, one with the same rule, and one not matching.
	create(cr("a-services-reader", sel, getSvcs, getPods))
	create(cr("unrelated", nil, putPods))
	waitRules("services then pods", []rbacv1.PolicyRule{getSvcs, getPods})

	// A change of a matched role, and a deletion.
	r, err := roles.Get(ctx, "pods-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Rules = []rbacv1.PolicyRule{putPods}
	if _, err := roles.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules("after update", []rbacv1.PolicyRule{getSvcs, getPods, putPods})
	if err := roles.Delete(ctx, "a-services-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules("after delete", []rbacv1.PolicyRule{putPods})

	// The rules are applied server-side, as kube-controller-manager's
	// controller does: owned by its field manager, operation Apply.
	got, err := roles.Get(ctx, "monitoring", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, e := range got.ManagedFields {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1.GetRawString() == `{"f:rules":{}}` {
			owned = true
		}
	}
	if !owned {
		t.Fatalf("rules not applied by %s: %+v", FieldManager, got.ManagedFields)
	}
}

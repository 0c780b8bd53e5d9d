package disruption

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/deployment"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// runner is a controller's Run.
type runner interface {
	Run(ctx context.Context, workers int) error
}

// withController runs the controller build makes on an informer factory
// of its own.
func withController(name string, build func(f *informers.Factory, c *client.Client, logger *slog.Logger) (runner, error)) testenv.Option {
	return testenv.WithController(name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		r, err := build(f, env.Client, logger)
		if err != nil {
			return err
		}
		f.Start(ctx)
		return r.Run(ctx, 2)
	})
}

func TestEnvBudgetStatusFollowsADeploymentsReadyPods(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t,
		withController(Name, func(f *informers.Factory, c *client.Client, l *slog.Logger) (runner, error) {
			return New(Config{Client: c, Informers: f, Logger: l})
		}),
		withController(deployment.Name, func(f *informers.Factory, c *client.Client, l *slog.Logger) (runner, error) {
			return deployment.New(deployment.Config{Client: c, Informers: f, Logger: l})
		}),
		withController(replicaset.Name, func(f *informers.Factory, c *client.Client, l *slog.Logger) (runner, error) {
			return replicaset.New(replicaset.Config{Client: c, Informers: f, Logger: l})
		}),
		withController("nodesim", func(f *informers.Factory, c *client.Client, l *slog.Logger) (runner, error) {
			return nodesim.New(nodesim.Config{Nodes: 2, Client: c, Informers: f, Logger: l, StartupDelay: -1})
		}),
	)
	ctx := t.Context()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	deployments := client.NewResource(env.Client, client.Deployments).Namespace(ns)
	if _, err := deployments.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	half := intstr.FromString("50%")
	if _, err := client.NewResource(env.Client, client.PodDisruptionBudgets).Namespace(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &half, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus := func(what string, want policyv1.PodDisruptionBudgetStatus, allowed bool) {
		t.Helper()
		t.Log("waiting for", what)
		testenv.WaitFor(t, env, client.PodDisruptionBudgets, ns+"/web", func(pdb *policyv1.PodDisruptionBudget) bool {
			st := pdb.Status
			return st.ObservedGeneration == pdb.Generation && st.ExpectedPods == want.ExpectedPods &&
				st.DesiredHealthy == want.DesiredHealthy && st.CurrentHealthy == want.CurrentHealthy &&
				st.DisruptionsAllowed == want.DisruptionsAllowed &&
				apimeta.IsStatusConditionTrue(st.Conditions, policyv1.DisruptionAllowedCondition) == allowed
		})
	}
	waitStatus("4 ready pods", policyv1.PodDisruptionBudgetStatus{ExpectedPods: 4, DesiredHealthy: 2, CurrentHealthy: 4, DisruptionsAllowed: 2}, true)

	// Scaled down to 1: half of it rounds up to 1, which leaves nothing to
	// disrupt.
	if _, err := deployments.Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus("1 ready pod", policyv1.PodDisruptionBudgetStatus{ExpectedPods: 1, DesiredHealthy: 1, CurrentHealthy: 1, DisruptionsAllowed: 0}, false)
}

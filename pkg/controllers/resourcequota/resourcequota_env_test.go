package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestEnvQuotaUsedFollowsPodsAndConfigMaps(t *testing.T) {
	t.Parallel()
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
	ctx := t.Context()
	ns := env.Namespace(t)
	if _, err := client.NewResource(env.Client, client.ResourceQuotas).Namespace(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: list(map[string]string{
			"pods": "10", "requests.cpu": "4", "configmaps": "5", "count/configmaps": "5", "count/endpoints": "5",
		})},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed := func(what string, want map[string]string) {
		t.Helper()
		t.Log("waiting for", what)
		testenv.WaitFor(t, env, client.ResourceQuotas, ns+"/q", func(q *corev1.ResourceQuota) bool {
			got := strs(q.Status.Used)
			for k, v := range want {
				if got[k] != v {
					return false
				}
			}
			return len(q.Status.Hard) == 5
		})
	}
	waitUsed("an empty namespace", map[string]string{"pods": "0", "requests.cpu": "0", "configmaps": "0", "count/configmaps": "0", "count/endpoints": "0"})

	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	for i := range 2 {
		p := pod(fmt.Sprintf("p%d", i), requests(map[string]string{"cpu": "500m"}))
		p.Namespace = ns
		p.Spec.Containers[0].Image = "nginx"
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("two pods and a config map", map[string]string{"pods": "2", "requests.cpu": "1", "configmaps": "1", "count/configmaps": "1"})

	if err := pods.Delete(ctx, "p0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("one pod and no config map", map[string]string{"pods": "1", "requests.cpu": "500m", "configmaps": "0", "count/configmaps": "0"})
}

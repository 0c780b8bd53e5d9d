package testenv_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// runLabeler is the controller under test: it labels every ConfigMap
// checked=true. It runs until ctx ends.
func runLabeler(ctx context.Context, env *testenv.Env) error {
	cms := client.NewResource(env.Client, client.ConfigMaps)
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		cm := ev.Object
		if ev.Type != watch.Added || cm.Labels["checked"] == "true" {
			continue
		}
		cm.Labels = map[string]string{"checked": "true"}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func TestLabeler(t *testing.T) {
	t.Parallel() // every environment is private: run as many as you like
	env := testenv.Start(t,
		testenv.WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seeded"}}),
		testenv.WithController("labeler", runLabeler),
	)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	if _, err := client.NewResource(env.Client, client.ConfigMaps).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"default/seeded", ns + "/app"} {
		testenv.WaitFor(t, env, client.ConfigMaps, key, func(cm *corev1.ConfigMap) bool {
			return cm.Labels["checked"] == "true"
		})
	}
}

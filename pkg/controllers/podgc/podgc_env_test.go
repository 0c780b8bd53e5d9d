package podgc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestEnvOrphanedPodsOfADeletedNodeAreRemoved(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		// Short passes and quarantine on the real clock keep the test fast.
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger, Period: 20 * time.Millisecond, Quarantine: 50 * time.Millisecond})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 1)
	}))
	ctx := t.Context()
	ns := env.Namespace(t)
	nodes := client.NewResource(env.Client, client.Nodes)
	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	nodeName := ns + "-node"
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orphan", "pending"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
		if name == "orphan" {
			p.Spec.NodeName = nodeName
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes.Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Pods, ns+"/orphan")
	// The unscheduled pod that is not being deleted stays.
	if _, err := pods.Get(ctx, "pending", metav1.GetOptions{}); err != nil {
		t.Fatalf("unscheduled pod: %v", err)
	}
}

package replicationcontroller

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestEnvReplicationControllerKeepsItsReplicasAndScales(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		rec, err := record.New(record.Config{
			Sink:      record.ClientSink{Events: client.NewResource(env.Client, client.Events)},
			Component: Name,
			Logger:    logger,
		})
		if err != nil {
			return err
		}
		c, err := New(Config{Client: env.Client, Informers: f, Recorder: rec, Logger: logger})
		if err != nil {
			return err
		}
		sim, err := nodesim.New(nodesim.Config{Nodes: 2, Client: env.Client, Informers: f, Logger: logger, StartupDelay: -1})
		if err != nil {
			return err
		}
		f.Start(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = rec.Run(ctx) })
		wg.Go(func() { _ = sim.Run(ctx, 2) })
		err = c.Run(ctx, 2)
		wg.Wait()
		return err
	}))
	ctx := t.Context()
	ns := env.Namespace(t)
	rcs := client.NewResource(env.Client, client.ReplicationControllers).Namespace(ns)
	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	rc, err := rcs.Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](3),
			Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus := func(what string, n int32) *corev1.ReplicationController {
		t.Helper()
		t.Log("waiting for", what)
		return testenv.WaitFor(t, env, client.ReplicationControllers, ns+"/web", func(rc *corev1.ReplicationController) bool {
			st := rc.Status
			return st.ObservedGeneration == rc.Generation && st.Replicas == n && st.FullyLabeledReplicas == n &&
				st.ReadyReplicas == n && st.AvailableReplicas == n
		})
	}
	waitStatus("3 ready replicas", 3)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID {
			t.Errorf("pod %s controlled by %+v, want the ReplicationController", p.Name, ref)
		}
	}

	// A deleted pod is replaced.
	if err := pods.Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Pods, ns+"/"+list.Items[0].Name)
	waitStatus("the deleted pod replaced", 3)

	// Scaled through the scale subresource, as `kubectl scale rc` does.
	if _, err := rcs.UpdateScale(ctx, "web", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 5},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus("scaled up to 5", 5)
	if _, err := rcs.Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	waitStatus("scaled down to 1", 1)
}

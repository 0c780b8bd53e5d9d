package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

func TestWaitSeesEveryState(t *testing.T) {
	env := Start(t)
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("default")
	ctx := context.Background()
	// The condition holds at step 3 only. The writer waits for Wait to
	// have seen each state before writing the next, so Wait must follow
	// the changes as they happen (no state is skipped, none is polled).
	seen := make(chan string)
	writerDone := make(chan error, 1)
	go func() {
		writerDone <- func() error {
			cm, err := cms.Create(ctx, configMap("default", "c", map[string]string{"step": "1"}), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			for _, step := range []string{"2", "3"} {
				<-seen
				cm.Data["step"] = step
				if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	var steps []string
	got := WaitFor(t, env, client.ConfigMaps, "default/c", func(cm *corev1.ConfigMap) bool {
		steps = append(steps, cm.Data["step"])
		if cm.Data["step"] == "3" {
			return true
		}
		seen <- cm.Data["step"]
		return false
	})
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	if got.Data["step"] != "3" || strings.Join(steps, ",") != "1,2,3" {
		t.Errorf("got step %q after seeing %v, want 3 after 1,2,3", got.Data["step"], steps)
	}
}

func TestWaitAlreadyTrue(t *testing.T) {
	env := Start(t, WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"ready": "yes"}}}))
	n := WaitFor(t, env, client.Nodes, "n", func(n *corev1.Node) bool { return n.Labels["ready"] == "yes" })
	if n.Name != "n" {
		t.Errorf("got %q", n.Name)
	}
}

func TestWaitTimeoutMessages(t *testing.T) {
	env := Start(t, WithObjects(
		configMap("default", "stuck", map[string]string{"phase": "pending"}),
		configMap("default", "doomed", map[string]string{"phase": "pending"}),
	))
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("default")
	never := func(*corev1.ConfigMap) bool { return false }

	// A context already past its deadline: Wait still lists once, so the
	// message shows the object's state.
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()

	t.Run("last state", func(t *testing.T) {
		_, err := Wait(expired, env.Client, client.ConfigMaps, "default/stuck", never)
		checkErr(t, err, "ConfigMap default/stuck: condition not met", "current state:", "phase: pending", "name: stuck")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("errors.Is(%v, DeadlineExceeded) = false", err)
		}
	})
	t.Run("never existed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Wait(ctx, env.Client, client.ConfigMaps, "default/absent", never)
		checkErr(t, err, "ConfigMap default/absent", "does not exist")
	})
	t.Run("cancelled after a state", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := Wait(ctx, env.Client, client.ConfigMaps, "default/stuck", func(*corev1.ConfigMap) bool {
			cancel()
			return false
		})
		checkErr(t, err, "1 states seen; last state:", "phase: pending")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("errors.Is(%v, Canceled) = false", err)
		}
	})
	t.Run("deleted", func(t *testing.T) {
		// The condition deletes the object it is shown; the watch then
		// reports the deletion and the context's end is reported with
		// the state before it.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := waiter[*corev1.ConfigMap]{res: client.ConfigMaps, key: "default/doomed", goal: "condition not met",
			done: func(cm *corev1.ConfigMap, exists bool) bool { return exists && never(cm) }}
		obj := configMap("default", "doomed", map[string]string{"phase": "pending"})
		w.see(obj, true)
		w.see(obj, false)
		cancel()
		checkErr(t, w.failed(ctx, ctx.Err()), "ConfigMap default/doomed: condition not met", "was deleted after 1 states seen", "phase: pending")
	})
	t.Run("deleted and created again", func(t *testing.T) {
		var phases []string
		got := WaitFor(t, env, client.ConfigMaps, "default/doomed", func(cm *corev1.ConfigMap) bool {
			phases = append(phases, cm.Data["phase"])
			if len(phases) == 1 {
				if err := cms.Delete(context.Background(), "doomed", metav1.DeleteOptions{}); err != nil {
					t.Error(err)
				}
				if _, err := cms.Create(context.Background(), configMap("default", "doomed", map[string]string{"phase": "reborn"}), metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
			return cm.Data["phase"] == "reborn"
		})
		if got.Data["phase"] != "reborn" || strings.Join(phases, ",") != "pending,reborn" {
			t.Errorf("got %v after %v", got.Data, phases)
		}
	})
	t.Run("deletion", func(t *testing.T) {
		if _, err := cms.Create(context.Background(), configMap("default", "finalized", map[string]string{"phase": "going"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Not deleted: the failure shows the object.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		checkErr(t, WaitDeleted(ctx, env.Client, client.ConfigMaps, "default/finalized"), "ConfigMap default/finalized: not deleted", "phase: going")
		// Deleted while waiting: the first state seen triggers the
		// deletion, which the wait's watch then reports.
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := wait(ctx, env.Client, client.ConfigMaps, "default/finalized", "not deleted",
			func(_ *corev1.ConfigMap, exists bool) bool {
				if exists {
					if err := cms.Delete(context.Background(), "finalized", metav1.DeleteOptions{}); err != nil {
						t.Error(err)
					}
				}
				return !exists
			})
		if err != nil {
			t.Errorf("wait for deletion: %v", err)
		}
		// Already gone: returns at once.
		WaitForDeletion(t, env, client.ConfigMaps, "default/finalized")
		WaitForDeletion(t, env, client.ConfigMaps, "default/never-was")
	})
	t.Run("bad keys", func(t *testing.T) {
		_, err := Wait(context.Background(), env.Client, client.ConfigMaps, "noNamespace", never)
		checkErr(t, err, "must be namespace/name")
		_, err = Wait(context.Background(), env.Client, client.Nodes, "ns/node", func(*corev1.Node) bool { return false })
		checkErr(t, err, "cluster-scoped")
	})
	t.Run("WaitFor fails the test", func(t *testing.T) {
		rec := newRecorder(t)
		short := Start(t, WithWaitTimeout(time.Nanosecond), WithObjects(configMap("default", "stuck", map[string]string{"phase": "pending"})))
		inGoroutine(func() { WaitFor(rec, short, client.ConfigMaps, "default/stuck", never) })
		checkErr(t, errors.New(rec.allErrors()), "default/stuck: condition not met", "phase: pending")
	})
}

func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

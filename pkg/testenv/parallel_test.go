package testenv

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

// TestFiftyParallelEnvironments runs 50 environments in parallel
// subtests, half over TLS, each with a controller, and checks that each
// sees its own objects only and that no two share a port. With the
// package's default -parallel (see TestMain) all 50 are alive at once.
func TestFiftyParallelEnvironments(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	urls := map[string]int{}
	alive, maxAlive := 0, 0
	// When -parallel allows (it does by default here, see TestMain), every
	// subtest waits after its Start until all have started, so that all
	// 50 environments serve and run their controllers at the same time.
	together := flag.Lookup("test.parallel").Value.(flag.Getter).Get().(int) >= n
	var started sync.WaitGroup
	started.Add(n)
	t.Run("group", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				var once sync.Once
				hasStarted := func() { once.Do(started.Done) }
				defer hasStarted() // also when Start fails
				id := fmt.Sprint(i)
				// The controller labels every ConfigMap with the env's id.
				labeler := func(ctx context.Context, env *Env) error {
					cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("default")
					_, err := Wait(ctx, env.Client, client.ConfigMaps, "default/mine", func(*corev1.ConfigMap) bool { return true })
					if err != nil {
						return err
					}
					cm, err := cms.Get(ctx, "mine", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cm.Labels = map[string]string{"env": id}
					_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					return err
				}
				env := Start(t, WithTLS(i%2 == 1), WithController("labeler", labeler),
					WithObjects(configMap("default", "mine", map[string]string{"id": id})))
				mu.Lock()
				urls[env.URL]++
				alive++
				maxAlive = max(maxAlive, alive)
				mu.Unlock()
				t.Cleanup(func() {
					mu.Lock()
					alive--
					mu.Unlock()
				})
				hasStarted()
				if together {
					started.Wait()
				}
				ns := env.Namespace(t)
				if _, err := client.NewResource(env.Client, client.ConfigMaps).Create(context.Background(),
					configMap(ns, "x", nil), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				WaitFor(t, env, client.ConfigMaps, "default/mine", func(cm *corev1.ConfigMap) bool { return cm.Labels["env"] == id })
				list, err := client.NewResource(env.Client, client.ConfigMaps).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Items) != 2 {
					t.Errorf("env %s holds %d configmaps, want its own 2", id, len(list.Items))
				}
				for _, cm := range list.Items {
					if cm.Name == "mine" && cm.Data["id"] != id {
						t.Errorf("env %s sees env %s's object", id, cm.Data["id"])
					}
				}
			})
		}
	})
	if len(urls) != n {
		t.Errorf("%d distinct URLs for %d environments", len(urls), n)
	}
	t.Logf("%d environments, at most %d alive at once", n, maxAlive)
	if together && maxAlive != n {
		t.Errorf("at most %d environments alive at once, want %d", maxAlive, n)
	}
}

package garbagecollector

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// The collector finishes the work it finds when it starts: deletions
// begun while it was not running, and dependents whose owners went then.
func TestGarbageCollectorStartsOnExistingState(t *testing.T) {
	env := testenv.Start(t)
	h := &harness{t: t, env: env, cms: client.NewResource(env.Client, client.ConfigMaps), rec: newFakeRecorder()}
	ns := env.Namespace(t)

	gone := h.createCM(ns, "gone", nil)
	orphanOfGone := h.createCM(ns, "orphan-of-gone", nil, cmRef(gone, false))
	h.deleteCM(gone, metav1.DeletePropagationBackground)

	fg := h.createCM(ns, "foreground", nil)
	fgDep := h.createCM(ns, "foreground-dep", []string{"example.com/hold"}, cmRef(fg, true))
	h.deleteCM(fg, metav1.DeletePropagationForeground)

	orph := h.createCM(ns, "orphaning", nil)
	orphDep := h.createCM(ns, "orphaning-dep", nil, cmRef(orph, true))
	h.deleteCM(orph, metav1.DeletePropagationOrphan)

	// Nothing acts yet: the owners wait with their finalizers.
	if got := h.getCM(fg); got.DeletionTimestamp == nil {
		t.Fatal("foreground owner is not being deleted")
	}
	if got := h.getCM(orph); got.DeletionTimestamp == nil {
		t.Fatal("orphaning owner is not being deleted")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	logger := slog.New(slog.DiscardHandler)
	f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := New(Config{Client: env.Client, Informers: f, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	wg.Go(func() {
		defer f.Shutdown()
		if err := gc.Run(ctx, 2); err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	testenv.WaitForDeletion(t, env, client.ConfigMaps, testenv.Key(orphanOfGone))
	testenv.WaitForDeletion(t, env, client.ConfigMaps, testenv.Key(orph))
	if got := ownerUIDs(h.getCM(orphDep)); len(got) != 0 {
		t.Errorf("orphaned dependent has owners %v", got)
	}
	testenv.WaitFor(t, env, client.ConfigMaps, testenv.Key(fgDep), func(cm *corev1.ConfigMap) bool { return cm.DeletionTimestamp != nil })
	h.removeFinalizers(fgDep)
	testenv.WaitForDeletion(t, env, client.ConfigMaps, testenv.Key(fg))
}

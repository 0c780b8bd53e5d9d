package rootcacertpublisher

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestEnvPublishes(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger, RootCA: []byte(ca)})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 2)
	}))
	ctx := t.Context()
	published := func(cm *corev1.ConfigMap) bool {
		return cm.Data[DataKey] == ca && len(cm.Data) == 1 && cm.Annotations[DescriptionAnnotation] == Description
	}
	testenv.WaitFor(t, env, client.ConfigMaps, "default/"+ConfigMapName, published)

	nss := client.NewResource(env.Client, client.Namespaces)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := "team-a/" + ConfigMapName
	cm := testenv.WaitFor(t, env, client.ConfigMaps, key, published)

	// Edited: set back.
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("team-a")
	cm = cm.DeepCopy()
	cm.Data[DataKey] = "not a CA"
	delete(cm.Annotations, DescriptionAnnotation)
	edited, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.ConfigMaps, key, func(cm *corev1.ConfigMap) bool {
		return cm.ResourceVersion != edited.ResourceVersion && published(cm)
	})

	// Deleted: made again.
	if err := cms.Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.ConfigMaps, key, func(got *corev1.ConfigMap) bool { return got.UID != cm.UID && published(got) })
}

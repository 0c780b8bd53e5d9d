package serviceaccount

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

func TestEnvDefaultServiceAccount(t *testing.T) {
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
	// Namespaces there at start get one.
	testenv.WaitFor(t, env, client.ServiceAccounts, "default/default", func(*corev1.ServiceAccount) bool { return true })

	nss := client.NewResource(env.Client, client.Namespaces)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := testenv.WaitFor(t, env, client.ServiceAccounts, "team-a/default", func(*corev1.ServiceAccount) bool { return true })

	sas := client.NewResource(env.Client, client.ServiceAccounts).Namespace("team-a")
	if err := sas.Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.ServiceAccounts, "team-a/default", func(sa *corev1.ServiceAccount) bool { return sa.UID != first.UID })
}

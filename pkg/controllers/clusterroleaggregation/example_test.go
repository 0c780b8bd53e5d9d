package clusterroleaggregation_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/clusterroleaggregation"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// A ClusterRole with an aggregationRule gets the rules of the ClusterRoles
// its selectors match.
func ExampleNew() {
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c, _ := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})

	logger := slog.New(slog.DiscardHandler)
	f, _ := informers.New(informers.Config{Client: c, Logger: logger})
	ctrl, err := clusterroleaggregation.New(clusterroleaggregation.Config{Client: c, Informers: f, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Start(ctx)
	wg.Go(func() { _ = ctrl.Run(ctx, 1) })
	defer func() { cancel(); wg.Wait(); f.Shutdown() }()

	roles := client.NewResource(c, client.ClusterRoles)
	label := map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}
	for _, r := range []*rbacv1.ClusterRole{
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "monitoring"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: label}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "monitoring-pods", Labels: label},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
		},
	} {
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	got, err := testenv.Wait(wctx, c, client.ClusterRoles, "monitoring", func(r *rbacv1.ClusterRole) bool { return len(r.Rules) > 0 })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Rules[0].Resources, got.Rules[0].Verbs)
	// Output:
	// [pods] [get list watch]
}

package namespace_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/namespace"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// Deleting a namespace marks it Terminating; the namespace controller
// deletes its content and then finalizes it, and the namespace goes.
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
	// A short delay and recheck keep the example quick; the defaults follow
	// kube-controller-manager.
	nsc, err := namespace.New(namespace.Config{Client: c, Informers: f, Logger: logger, SyncDelay: time.Millisecond, RecheckInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Start(ctx)
	wg.Go(func() { _ = nsc.Run(ctx, 1) })
	defer func() { cancel(); wg.Wait(); f.Shutdown() }()

	nss := client.NewResource(c, client.Namespaces)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"}}
	if _, err := client.NewResource(c, client.ConfigMaps).Namespace("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := testenv.WaitDeleted(wctx, c, client.ConfigMaps, "team/conf"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("content deleted")
	if err := testenv.WaitDeleted(wctx, c, client.Namespaces, "team"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("namespace deleted")
	// Output:
	// content deleted
	// namespace deleted
}

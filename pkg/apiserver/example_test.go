package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// A server over an in-memory backend, reached through httptest.
func ExampleNew() {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/api/v1/namespaces/kube-system")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var ns corev1.Namespace
	if err := json.NewDecoder(resp.Body).Decode(&ns); err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, ns.Kind, ns.Name, ns.Status.Phase)
	// Output: 200 Namespace kube-system Active
}

// Run serves a listener until its context ends.
func ExampleServer_Run() {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	cancel()
	fmt.Println(<-done)
	// Output:
	// 200 OK
	// <nil>
}

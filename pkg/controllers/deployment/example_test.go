package deployment_test

import (
	"context"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/deployment"
	"github.com/kplane/kplane/pkg/informers"
)

// Example wires the Deployment controller to an API server: the owner of
// the shared informer factory starts it once every controller has asked
// for its informers, and Run blocks until ctx ends.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := client.New(client.Config{Host: "http://127.0.0.1:8080"})
	if err != nil {
		slog.Error("client", "err", err)
		return
	}
	f, err := informers.New(informers.Config{Client: c})
	if err != nil {
		slog.Error("informers", "err", err)
		return
	}
	defer f.Shutdown()
	dc, err := deployment.New(deployment.Config{Informers: f, Client: c})
	if err != nil {
		slog.Error("deployment controller", "err", err)
		return
	}
	f.Start(ctx)
	if err := dc.Run(ctx, 5); err != nil {
		slog.Error("deployment controller", "err", err)
	}
}

package garbagecollector_test

import (
	"context"
	"log/slog"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/garbagecollector"
	"github.com/kplane/kplane/pkg/informers"
)

// A controller manager builds the collector on its shared informer
// factory, starts the factory, and runs the collector until it stops.
func Example() {
	run := func(ctx context.Context, c *client.Client, logger *slog.Logger) error {
		f, err := informers.New(informers.Config{Client: c, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		gc, err := garbagecollector.New(garbagecollector.Config{
			Client:    c,
			Informers: f,
			Logger:    logger,
			// Resources defaults to every built-in resource but events.
		})
		if err != nil {
			return err
		}
		f.Start(ctx) // after New: the collector registers its informers there
		return gc.Run(ctx, 5)
	}
	_ = run
}

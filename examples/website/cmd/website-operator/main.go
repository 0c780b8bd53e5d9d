// Command website-operator runs the Website operator (examples/website)
// against the cluster of a kubeconfig context, kplane's or any Kubernetes
// cluster's:
//
//	kubectl apply -f examples/website/config/crd
//	website-operator --kubeconfig kplane-data/kubeconfig --workers 2
//
// It installs nothing: the Website CRD must have been applied. With
// --leader-elect (the default) any number of replicas may run; a Lease in
// --leader-elect-namespace picks the one that acts, and a replica that
// loses the Lease exits non-zero so that it is restarted as a candidate.
// It stops on SIGINT or SIGTERM once its workers have finished, releasing
// the Lease.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kplane/kplane/examples/website"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/leaderelection"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "website-operator:", err)
		os.Exit(1)
	}
}

// run parses args and runs the operator until ctx ends or leadership is
// lost; it returns after everything it started has stopped.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("website-operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	kubeContext := fs.String("context", "", "kubeconfig context (default the current context)")
	workers := fs.Int("workers", 2, "number of workers")
	leaderElect := fs.Bool("leader-elect", true, "campaign for a Lease and act only while holding it")
	leaseNamespace := fs.String("leader-elect-namespace", "default", "namespace of the Lease")
	leaseName := fs.String("leader-elect-name", website.Name, "name of the Lease")
	identity := fs.String("identity", "", "this replica's identity in the Lease (default host name and a random suffix)")
	leaseDuration := fs.Duration("leader-elect-lease-duration", 15*time.Second, "how long other candidates wait before taking over an unrenewed Lease")
	renewDeadline := fs.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps acting without renewing")
	retryPeriod := fs.Duration("leader-elect-retry-period", 2*time.Second, "time between attempts to acquire or renew")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: *kubeconfig, Context: *kubeContext})
	if err != nil {
		return err
	}
	c, err := client.New(kc.Config)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ctrl, err := website.New(website.Config{Client: c, Logger: logger})
	if err != nil {
		return err
	}
	logger.Info("running", "context", kc.Context, "server", kc.Config.Host)
	if !*leaderElect {
		return ctrl.Run(ctx, *workers)
	}

	if *identity == "" {
		if *identity, err = defaultIdentity(); err != nil {
			return err
		}
	}
	lock, err := leaderelection.NewLeaseLock(leaderelection.LeaseLockConfig{
		Client: c, Namespace: *leaseNamespace, Name: *leaseName, Identity: *identity,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// ctrlErr is written by OnStartedLeading, which Run waits for before
	// it returns.
	var ctrlErr error
	elector, err := leaderelection.New(leaderelection.Config{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: true,
		Logger:          logger,
		Callbacks: leaderelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("started leading", "identity", *identity)
				if ctrlErr = ctrl.Run(ctx, *workers); ctrlErr != nil {
					cancel()
				}
			},
			OnNewLeader: func(id string) { logger.Info("leader", "identity", id, "self", id == *identity) },
		},
	})
	if err != nil {
		return err
	}
	logger.Info("campaigning for leadership", "lease", *leaseNamespace+"/"+*leaseName, "identity", *identity)
	// Run returns nil when ctx ended and ErrLeadershipLost when the Lease
	// was lost; then the process exits, and a new one campaigns afresh
	// with fresh caches (a Controller runs once).
	err = elector.Run(ctx)
	if ctrlErr != nil {
		return ctrlErr
	}
	return err
}

// defaultIdentity is the host name and a random suffix, unique per process.
func defaultIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return host + "_" + hex.EncodeToString(b), nil
}

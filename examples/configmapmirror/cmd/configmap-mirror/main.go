// Command configmap-mirror runs the sample ConfigMap-to-Secret mirror
// controller against the cluster of a kubeconfig context, kplane's or any
// Kubernetes cluster's:
//
//	configmap-mirror --kubeconfig ~/.kube/config --workers 2
//
// It stops on SIGINT or SIGTERM once its workers have finished.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/kplane/kplane/examples/configmapmirror"
	"github.com/kplane/kplane/pkg/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "configmap-mirror:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	kubeContext := flag.String("context", "", "kubeconfig context (default the current context)")
	workers := flag.Int("workers", 2, "number of workers")
	flag.Parse()

	kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: *kubeconfig, Context: *kubeContext})
	if err != nil {
		return err
	}
	c, err := client.New(kc.Config)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctrl, err := configmapmirror.New(configmapmirror.Config{Client: c, Logger: logger})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("running", "context", kc.Context, "server", kc.Config.Host)
	return ctrl.Run(ctx, *workers)
}

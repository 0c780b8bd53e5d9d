package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authorization/rbac/bootstrap"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllermanager"
	"github.com/kplane/kplane/pkg/featuregate"
)

// controllerManagerOptions are the flags the controller manager shares
// between `kplane controller-manager` and `kplane up`.
type controllerManagerOptions struct {
	controllers   []string
	workers       int
	nodes         int
	leaderElect   bool
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	leaseName     string
	leaseNS       string
	healthAddress string
	gates         *featuregate.Registry
	// rootCAFile is --root-ca-file; rootCA, when set, is used instead
	// (kplane up passes its server's CA).
	rootCAFile string
	rootCA     []byte
	// nodeRunTime is --node-run-time.
	nodeRunTime time.Duration
	// nodeScheduling is --node-scheduling.
	nodeScheduling bool
	// serviceAccountCredentials is --use-service-account-credentials.
	serviceAccountCredentials bool
}

// newControllerManagerOptions returns the options with a feature-gate
// registry holding every feature the controller manager reads.
func newControllerManagerOptions() (*controllerManagerOptions, error) {
	reg, err := featuregate.New(featuregate.Config{})
	if err != nil {
		return nil, err
	}
	if err := reg.AddVersioned(controllermanager.Features()); err != nil {
		return nil, err
	}
	return &controllerManagerOptions{gates: reg}, nil
}

// addFlags registers the flags; defaultControllers is the --controllers
// default and healthAddress the --health-address default.
func (o *controllerManagerOptions) addFlags(f *pflag.FlagSet, defaultControllers []string, healthAddress string) {
	f.StringSliceVar(&o.controllers, "controllers", defaultControllers, fmt.Sprintf(
		"controllers to run: '*' runs those on by default, 'foo' enables foo, '-foo' disables foo. Known: %s; on by default: %s",
		strings.Join(controllermanager.KnownControllers(), ", "), strings.Join(controllermanager.DefaultControllers(), ", ")))
	f.IntVar(&o.workers, "workers", controllermanager.DefaultWorkers, "workers per controller")
	f.IntVar(&o.nodes, "nodes", 3, "simulated nodes the nodesim controller runs")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader through a Lease before running controllers, so several replicas can run")
	f.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long non-leaders wait after the last renewal before taking the lease")
	f.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before giving up leadership")
	f.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "time between attempts to acquire or renew the lease")
	f.StringVar(&o.leaseName, "leader-elect-resource-name", controllermanager.DefaultLeaseName, "name of the Lease")
	f.StringVar(&o.leaseNS, "leader-elect-resource-namespace", controllermanager.DefaultLeaseNamespace, "namespace of the Lease")
	f.StringVar(&o.healthAddress, "health-address", healthAddress, "host:port serving /healthz and /metrics; empty serves none")
	f.DurationVar(&o.nodeRunTime, "node-run-time", time.Second, "how long simulated nodes run pods with restartPolicy Never or OnFailure (Jobs' pods) before they succeed, unless the pod's nodesim.kplane.io/* annotations say otherwise; 0 runs them until deleted")
	f.BoolVar(&o.nodeScheduling, "node-scheduling", true, "simulated nodes schedule pods that have no spec.nodeName; false leaves them to a scheduler such as kube-scheduler")
	f.BoolVar(&o.serviceAccountCredentials, "use-service-account-credentials", true,
		"run each controller with the credentials of its own ServiceAccount in kube-system (created when missing, tokens from the TokenRequest API), so it may do only what its system:controller:* role grants; false runs every controller as the manager's own user, which then needs every controller's role")
	f.StringVar(&o.rootCAFile, "root-ca-file", "", "PEM CA bundle published as the kube-root-ca.crt ConfigMap in every namespace; empty publishes none")
	o.gates.AddFlag(f)
}

// managerInFlight bounds the requests the controllers (and, in kplane up,
// the simulated nodes) have outstanding at once: half of the API server's
// default --max-mutating-requests-inflight, so that a burst such as a
// ReplicaSet's slow-start batch of 256 pod creations waits for free slots
// in the client instead of being refused with 429 and retried a second
// later. Watches do not count.
const managerInFlight = 100

// run runs the controller manager against the server cfg reaches (the
// node simulator writing through nodeClient when not nil) until ctx ends.
// identity "" picks a unique one; releaseOnCancel gives the lease up on
// shutdown.
func (o *controllerManagerOptions) run(ctx context.Context, cfg client.Config, nodeClient *client.Client, logger *slog.Logger, identity string, releaseOnCancel bool, out func(string)) error {
	if cfg.InFlight == nil {
		limit, err := client.NewInFlightLimit(managerInFlight)
		if err != nil {
			return err
		}
		cfg.InFlight = limit
	}
	if o.workers <= 0 {
		return fmt.Errorf("--workers must be positive, not %d", o.workers)
	}
	if o.nodes <= 0 {
		return fmt.Errorf("--nodes must be positive, not %d", o.nodes)
	}
	rootCA := o.rootCA
	if rootCA == nil && o.rootCAFile != "" {
		data, err := os.ReadFile(o.rootCAFile)
		if err != nil {
			return fmt.Errorf("--root-ca-file: %w", err)
		}
		rootCA = data
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ln net.Listener
	if o.healthAddress != "" {
		if ln, err = net.Listen("tcp", o.healthAddress); err != nil {
			return fmt.Errorf("--health-address: %w", err)
		}
	}
	m, err := controllermanager.New(controllermanager.Config{
		Client:       c,
		ClientConfig: cfg,
		NodeClient:   nodeClient,
		RootCA:       rootCA,
		Gates:        o.gates.Freeze(),
		Controllers:  o.controllers,
		Workers:      o.workers,
		Nodes:        o.nodes,

		UseServiceAccountCredentials: o.serviceAccountCredentials,
		NodeRunTime:                  o.nodeRunTime,
		NoNodeScheduling:             !o.nodeScheduling,
		LeaderElection: controllermanager.LeaderElectionConfig{
			Disabled:        !o.leaderElect,
			Namespace:       o.leaseNS,
			Name:            o.leaseName,
			LeaseDuration:   o.leaseDuration,
			RenewDeadline:   o.renewDeadline,
			RetryPeriod:     o.retryPeriod,
			ReleaseOnCancel: releaseOnCancel,
		},
		Identity:        identity,
		Logger:          logger,
		MetricsRegistry: reg,
		HealthListener:  ln,
	})
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	msg := fmt.Sprintf("controller manager running %s as %s", strings.Join(m.Controllers(), ", "), m.Identity())
	if ln != nil {
		msg += fmt.Sprintf("; health and metrics on http://%s", ln.Addr())
	}
	out(msg)
	return m.Run(ctx)
}

func newControllerManagerCommand() *cobra.Command {
	o, err := newControllerManagerOptions()
	if err != nil {
		// The features are fixed at build time; failing to add them is a
		// programming error.
		panic(err)
	}
	var (
		kubeconfig string
		kubeCtx    string
		log        logOptions
	)
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers against an API server",
		Long: `Run kplane's controllers (Deployment, ReplicaSet, garbage collector, namespace, and optionally the node
simulator) against a Kubernetes API server: kplane's own or a real cluster.

With --use-service-account-credentials (the default) each controller runs as
its own ServiceAccount in kube-system, as kube-controller-manager does with
that flag: the kubeconfig's user (system:kube-controller-manager) creates the
ServiceAccounts and requests their tokens, and itself only reads (for the
informers) and keeps the Lease. With --use-service-account-credentials=false
every controller runs as that user, which then needs every
system:controller:* role bound to it (kplane's bootstrap policy, like
Kubernetes', does not do that).

With --leader-elect (the default) several replicas may run: they compete for a
Lease and only the leader runs controllers. A leader that loses its lease stops
every controller and exits with an error, to be restarted.

The command stops cleanly on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := log.logger()
			if err != nil {
				return err
			}
			kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: kubeconfig, Context: kubeCtx})
			if err != nil {
				return err
			}
			kc.Config.UserAgent = "kplane-controller-manager"
			err = o.run(cmd.Context(), kc.Config, nil, logger, "", false, func(s string) { fmt.Fprintln(cmd.OutOrStdout(), s) })
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&kubeCtx, "context", "", "kubeconfig context (default its current-context)")
	o.addFlags(f, []string{"*"}, "127.0.0.1:10257")
	log.addFlags(cmd)
	return cmd
}

// hostname names this process in a Lease.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// grantManagerControllerRoles creates, through admin, the bindings of the
// controller manager's user to every controller's role
// (bootstrap.ManagerControllerRoleBindings), which a manager running its
// controllers as itself (--use-service-account-credentials=false) needs;
// bindings that exist are left as they are. `kplane up`, which runs both
// the server and the manager, calls it; against another server that grant
// is its administrator's.
func grantManagerControllerRoles(ctx context.Context, admin *client.Client) error {
	crbs := client.NewResource(admin, client.ClusterRoleBindings)
	for _, b := range bootstrap.ManagerControllerRoleBindings() {
		if _, err := crbs.Create(ctx, &b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("grant the controller manager %s: %w", b.RoleRef.Name, err)
		}
	}
	return nil
}

// upGrantManagerControllerRoles is grantManagerControllerRoles for
// `kplane up --use-service-account-credentials=false`, as the
// administrator of creds.
func upGrantManagerControllerRoles(ctx context.Context, serverURL string, creds *pki) error {
	admin, err := client.New(client.Config{Host: serverURL, CAData: creds.caPEM, GetClientCertificate: creds.admin.clientCertificate, UserAgent: "kplane-up"})
	if err != nil {
		return err
	}
	defer admin.CloseIdleConnections()
	return grantManagerControllerRoles(ctx, admin)
}

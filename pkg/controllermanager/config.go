package controllermanager

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/informers"
)

// Defaults of Config.
const (
	DefaultWorkers        = 5
	DefaultLeaseName      = "kplane-controller-manager"
	DefaultLeaseNamespace = "kube-system"
	// HealthMaxOverdue is how far past its retry period a leader's renewal
	// may be before /healthz fails, as kube-controller-manager allows.
	HealthMaxOverdue = 20 * time.Second
)

// Config configures New. Zero-valued fields get the documented defaults.
type Config struct {
	// Client reaches the API server as the manager's own user
	// (system:kube-controller-manager). Required. The informers, the
	// leader election and, unless UseServiceAccountCredentials, every
	// controller share it.
	Client *client.Client
	// UseServiceAccountCredentials runs each controller with a client of
	// its own that authenticates as the ServiceAccount
	// kube-system/<controller's name> (deployment-controller,
	// replicaset-controller, generic-garbage-collector, ...; the subjects
	// of the bootstrap system:controller:* bindings), as
	// kube-controller-manager's --use-service-account-credentials: the
	// manager creates the ServiceAccount when missing and gets its tokens
	// with the TokenRequest API, renewing each at 80% of its hour. So a
	// controller may write only what its own role allows, and the API
	// server's audit and authorization see which controller acted.
	// The informers, the leader election and the node simulator keep
	// Client (and NodeClient). False, the zero value, runs every
	// controller with Client, whose user then needs every controller's
	// role besides system:kube-controller-manager (which does not have
	// them); `kplane controller-manager` and `kplane up` default it to
	// true.
	UseServiceAccountCredentials bool
	// ClientConfig is what Client was built from. With
	// UseServiceAccountCredentials the controllers' clients are built from
	// it, without its credentials (client.Config.WithoutCredentials: no
	// client certificate, which the server would take over the token) and
	// with a ServiceAccount token source; its Host is then required.
	// Otherwise it is not used.
	ClientConfig client.Config
	// NodeClient, when set, is what the node simulator writes through (its
	// own identity, such as a system:node user); it still reads through
	// the shared informers. Default Client.
	NodeClient *client.Client
	// Gates are the feature gates (see Features). Default: every feature
	// at its default.
	Gates featuregate.Gates
	// Controllers selects the controllers in kube-controller-manager's
	// --controllers syntax. Default {"*"}.
	Controllers []string
	// Workers is how many workers each controller runs. Default
	// DefaultWorkers; must not be negative.
	Workers int
	// Nodes is how many nodes the node simulator runs, when enabled.
	// Default nodesim.DefaultNodes; must not be negative.
	Nodes int
	// NodeRunTime is how long the simulated nodes run the containers of
	// Job-like pods (restartPolicy Never or OnFailure, no nodesim run
	// annotations) before they succeed; zero runs them until deleted.
	NodeRunTime time.Duration
	// NoNodeScheduling makes the node simulator leave unbound pods to
	// another scheduler (kube-scheduler) and only run the pods bound to
	// its nodes. False, the default, has it schedule them itself.
	NoNodeScheduling bool
	// RootCA is the PEM CA bundle the root-ca-cert-publisher puts in every
	// namespace's kube-root-ca.crt ConfigMap: the API server's CA. When
	// empty (the default) that controller is not started, even when
	// enabled.
	RootCA []byte
	// LeaderElection configures the election. It is on by default.
	LeaderElection LeaderElectionConfig
	// Identity is this process's identity in the Lease. Default the host
	// name plus a random suffix.
	Identity string
	// Clock is given to the controllers and the election. Default the
	// real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// MetricsRegistry receives the controllers' and the election's
	// metrics, and is what /metrics serves. Default a new registry.
	MetricsRegistry *prometheus.Registry
	// HealthListener, when set, is where Run serves /healthz and /metrics
	// until it returns; Run closes it.
	HealthListener net.Listener

	// informers is the factory New builds, shared by every controller.
	informers *informers.Factory
}

// LeaderElectionConfig configures the manager's leader election.
type LeaderElectionConfig struct {
	// Disabled runs the controllers at once, without an election: only
	// safe when a single manager runs.
	Disabled bool
	// Namespace and Name name the Lease. Defaults DefaultLeaseNamespace
	// and DefaultLeaseName.
	Namespace string
	Name      string
	// LeaseDuration, RenewDeadline and RetryPeriod default to
	// leaderelection's defaults (15s, 10s, 2s).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ReleaseOnCancel gives the lease up when Run's context ends, so a
	// successor takes over at once.
	ReleaseOnCancel bool
}

// withDefaults fills in defaults and validates cfg.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.Client == nil:
		return cfg, errors.New("controllermanager: Client is required")
	case cfg.Workers < 0:
		return cfg, fmt.Errorf("controllermanager: Workers (%d) must not be negative", cfg.Workers)
	case cfg.Nodes < 0:
		return cfg, fmt.Errorf("controllermanager: Nodes (%d) must not be negative", cfg.Nodes)
	case cfg.UseServiceAccountCredentials && cfg.ClientConfig.Host == "":
		return cfg, errors.New("controllermanager: ClientConfig.Host is required with UseServiceAccountCredentials")
	}
	if cfg.Gates == nil {
		g, err := defaultGates()
		if err != nil {
			return cfg, fmt.Errorf("controllermanager: %w", err)
		}
		cfg.Gates = g
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.LeaderElection.Namespace == "" {
		cfg.LeaderElection.Namespace = DefaultLeaseNamespace
	}
	if cfg.LeaderElection.Name == "" {
		cfg.LeaderElection.Name = DefaultLeaseName
	}
	if cfg.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "kplane"
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.Identity = host + "_" + hex.EncodeToString(b[:])
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MetricsRegistry == nil {
		cfg.MetricsRegistry = prometheus.NewRegistry()
	}
	return cfg, nil
}

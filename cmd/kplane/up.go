package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllermanager"
)

func newUpCommand() *cobra.Command {
	api := &apiServerOptions{}
	var prof profileOptions
	cm, err := newControllerManagerOptions()
	if err != nil {
		// The features are fixed at build time; failing to add them is a
		// programming error.
		panic(err)
	}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole control plane in one process",
		Long: `Run the API server, the controllers and simulated nodes in one process:
a control plane on which Deployments roll out to running pods.

The API server takes the flags of 'kplane apiserver' (embedded etcd in
<data-dir>/etcd by default, HTTPS with certificates in <data-dir>/pki). The
controller manager connects to it over loopback as
system:kube-controller-manager with <data-dir>/controller-manager.kubeconfig,
the simulated nodes as system:node:kplane-nodesim with
<data-dir>/node.kubeconfig; <data-dir>/kubeconfig is the admin's. It elects itself
leader through a Lease (so a second 'kplane controller-manager' against the
same server waits), and runs the Deployment and ReplicaSet controllers and the
garbage collector plus
--nodes simulated nodes that schedule pods and report them Running and Ready.

Everything stops cleanly on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			logger, err := api.log.logger()
			if err != nil {
				return err
			}
			stopProfiles, err := prof.start()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, stopProfiles()) }()
			out := func(s string) { fmt.Fprintln(cmd.OutOrStdout(), s) }
			api.serving = func(ctx context.Context, serverURL string, creds *pki) error {
				cmCfg, err := upConfig(api, controllerManagerKubeconfig, serverURL, creds, func(p *pki) *identity { return p.controllerManager })
				if err != nil {
					return err
				}
				ncCfg, err := upConfig(api, nodeKubeconfig, serverURL, creds, func(p *pki) *identity { return p.node })
				if err != nil {
					return err
				}
				// The controllers and the simulated nodes share one bound on
				// their outstanding requests, below the server's in-flight
				// limits, so that their bursts wait instead of meeting 429s.
				if cmCfg.InFlight, err = client.NewInFlightLimit(managerInFlight); err != nil {
					return err
				}
				ncCfg.InFlight = cmCfg.InFlight
				nc, err := client.New(ncCfg)
				if err != nil {
					return err
				}
				defer nc.CloseIdleConnections()
				if creds != nil {
					cm.rootCA = creds.caPEM
				}
				if !cm.serviceAccountCredentials && creds != nil {
					if err := upGrantManagerControllerRoles(ctx, serverURL, creds); err != nil {
						return err
					}
				}
				// A stable identity lets a restarted `kplane up` take its
				// own lease back at once.
				err = cm.run(ctx, cmCfg, nc, logger.With("component", "controller-manager"), "kplane-up_"+hostname(), false, func(s string) {
					out(s)
					if path := api.kubeconfigPath(); path != "" {
						out(fmt.Sprintf("kplane is up. Try:\n  export KUBECONFIG=%s\n  kubectl create deployment web --image=nginx --replicas=3\n  kubectl get pods", path))
					}
				})
				if err != nil && ctx.Err() == nil {
					return fmt.Errorf("controller manager: %w", err)
				}
				return nil
			}
			err = api.run(cmd.Context(), cmd)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&api.bindAddress, "bind-address", "127.0.0.1", "address the API server listens on")
	f.IntVar(&api.port, "port", 6443, "port the API server listens on; 0 picks a free port")
	f.StringVar(&api.storage, "storage", "etcd", "storage backend: etcd (embedded unless --etcd-servers is given) or memory")
	f.StringSliceVar(&api.etcdServers, "etcd-servers", nil, "etcd client URLs for --storage=etcd; empty runs an embedded etcd in <data-dir>/etcd")
	f.StringVar(&api.etcdPrefix, "etcd-prefix", "/registry", "key prefix in etcd")
	f.StringVar(&api.etcdTLS.CAFile, "etcd-cafile", "", "PEM CA bundle that verifies the --etcd-servers certificates")
	f.StringVar(&api.etcdTLS.CertFile, "etcd-certfile", "", "PEM client certificate for --etcd-servers; turns TLS on")
	f.StringVar(&api.etcdTLS.KeyFile, "etcd-keyfile", "", "PEM client key for --etcd-certfile")
	f.BoolVar(&api.watchCache, "watch-cache", true, "with --storage=etcd, serve lists and watches from an in-memory cache")
	f.StringVar(&api.dataDir, "data-dir", "kplane-data", "directory for the kubeconfig and embedded etcd data")
	f.StringVar(&api.kubeconfigOut, "kubeconfig-out", "", "where to write the kubeconfig (default <data-dir>/kubeconfig; \"-\" writes none)")
	cm.addFlags(f, []string{"*", controllermanager.NodeSimulator}, "127.0.0.1:10257")
	api.history.addFlags(cmd)
	api.services.addFlags(cmd)
	api.secure.addFlags(cmd)
	api.auth.addFlags(cmd)
	api.admission.addFlags(cmd)
	api.log.addFlags(cmd)
	prof.addFlags(cmd)
	return cmd
}

// profileOptions are the hidden profiling flags of `kplane up`, which
// `kplane bench` passes on.
type profileOptions struct {
	cpu, mem string
}

func (o *profileOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.cpu, "cpuprofile", "", "write a CPU profile of the whole run to this file at shutdown")
	f.StringVar(&o.mem, "memprofile", "", "write a heap profile to this file at shutdown")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("memprofile")
}

// start starts the CPU profile; stop ends it and writes the heap profile.
func (o *profileOptions) start() (stop func() error, err error) {
	var cpu *os.File
	if o.cpu != "" {
		if cpu, err = os.Create(o.cpu); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			_ = cpu.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
			}
		}
		if o.mem != "" {
			if err := writeHeapProfile(o.mem); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// The heap profile shows the state as of the last GC.
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// upConfig is how a component connects to the in-process server: through
// its kubeconfig in the data dir when one was written, as any other client
// would, else directly, presenting the client certificate of the identity
// pick chooses (none over plain HTTP). Over HTTPS the certificate is the
// identity's current one on every new connection, so a certificate renewed
// while kplane runs is used without a restart.
func upConfig(api *apiServerOptions, kubeconfigName, serverURL string, creds *pki, pick func(*pki) *identity) (client.Config, error) {
	var cfg client.Config
	if api.kubeconfigPath() != "" {
		path := api.kubeconfigPath()
		if creds != nil {
			path = filepath.Join(api.dataDir, kubeconfigName)
		}
		kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: path})
		if err != nil {
			return cfg, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		cfg = kc.Config
	} else {
		cfg = client.Config{Host: serverURL}
		if creds != nil {
			cfg.CAData = creds.caPEM
		}
	}
	if creds != nil {
		cfg.CertData, cfg.KeyData = nil, nil
		cfg.GetClientCertificate = pick(creds).clientCertificate
	}
	cfg.UserAgent = "kplane-controller-manager"
	return cfg, nil
}

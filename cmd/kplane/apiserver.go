package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/cacher"
	"github.com/kplane/kplane/pkg/storage/etcd"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// apiServerOptions are the flags of `kplane apiserver`.
type apiServerOptions struct {
	bindAddress   string
	port          int
	storage       string
	etcdServers   []string
	etcdPrefix    string
	etcdTLS       etcd.TLSFiles
	dataDir       string
	kubeconfigOut string
	secure        servingOptions
	auth          authOptions
	admission     admissionOptions
	watchCache    bool
	history       historyOptions
	log           logOptions
	services      serviceOptions

	// serving, when set, runs beside the server once it listens and the
	// kubeconfig is written (kplane up runs the controllers in it). Its
	// error stops the server and is returned by run; it must return once
	// ctx ends.
	serving func(ctx context.Context, serverURL string, creds *pki) error
}

func newAPIServerCommand() *cobra.Command {
	o := &apiServerOptions{}
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Serve the Kubernetes API",
		Long: `Serve the Kubernetes API and write a kubeconfig for it (default
<data-dir>/kubeconfig) that kubectl and client-go can use.

Transport: HTTPS (HTTP/2 included). On first start a certificate authority
(ECDSA P-256) is created in <data-dir>/pki with a serving certificate for
localhost, 127.0.0.1, ::1, the hostname, --bind-address, --advertise-address
and every --tls-san, and client certificates for kplane-admin (group
system:masters), system:kube-controller-manager and the simulated nodes
(system:node:kplane-nodesim, group system:nodes). Later starts reuse them and
reissue a certificate that is in the last third of its lifetime or lacks a
name. Keys are written 0600. --tls-cert-file with --tls-private-key-file and
--client-ca-file replace the generated serving certificate and client CA.
--requestheader-client-ca-file with --requestheader-username-headers (and
the other --requestheader-* flags) believes the user a front proxy names in
request headers when its client certificate chains to that CA; the server
publishes both CAs and these settings in the ConfigMap
kube-system/extension-apiserver-authentication.
The kubeconfig (default <data-dir>/kubeconfig) trusts the CA and presents the
admin certificate; <data-dir>/controller-manager.kubeconfig and
<data-dir>/node.kubeconfig present the other two. --insecure-http serves
plain HTTP instead, where a request without credentials acts as an
administrator (system:unsecured, group system:masters), for throwaway local
runs only.

Load: at most --max-requests-inflight non-mutating and
--max-mutating-requests-inflight mutating requests are served at once (the
excess gets 429 with Retry-After; watches are not counted), and requests other
than watches are answered 504 after --request-timeout. --audit-log-path with
--audit-policy-file writes an audit.k8s.io/v1 audit log, rotated by size.

Storage: --storage=etcd (the default) stores in etcd: the --etcd-servers
cluster when given (with --etcd-cafile, --etcd-certfile and --etcd-keyfile
for TLS), otherwise an etcd member embedded in this process with its data in
<data-dir>/etcd, which survives restarts and crashes. --storage=memory keeps
everything in this process, for throwaway runs and tests (lost on exit).

Watch window: past revisions stay readable by watches, exact lists and
continue tokens for one to two --etcd-compaction-interval (5m) with etcd, and
for the last --memory-history-revisions (10000) revisions, at most
--memory-history-duration (5m), in memory. Older resourceVersions are
answered 410 Gone (reason Expired) and clients relist, as on kube-apiserver.

The server stops cleanly on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bindAddress, "bind-address", "127.0.0.1", "address to listen on")
	f.IntVar(&o.port, "port", 6443, "port to listen on; 0 picks a free port")
	f.StringVar(&o.storage, "storage", "etcd", "storage backend: etcd (embedded unless --etcd-servers is given) or memory")
	f.StringSliceVar(&o.etcdServers, "etcd-servers", nil, "etcd client URLs for --storage=etcd; empty runs an embedded etcd in <data-dir>/etcd")
	f.StringVar(&o.etcdPrefix, "etcd-prefix", "/registry", "key prefix in etcd")
	f.StringVar(&o.etcdTLS.CAFile, "etcd-cafile", "", "PEM CA bundle that verifies the --etcd-servers certificates (default: system roots when TLS is on)")
	f.StringVar(&o.etcdTLS.CertFile, "etcd-certfile", "", "PEM client certificate for --etcd-servers; turns TLS on")
	f.StringVar(&o.etcdTLS.KeyFile, "etcd-keyfile", "", "PEM client key for --etcd-certfile")
	f.BoolVar(&o.watchCache, "watch-cache", true, "with --storage=etcd, serve lists and watches from an in-memory cache fed by one etcd watch per resource")
	f.StringVar(&o.dataDir, "data-dir", "kplane-data", "directory for the kubeconfig and embedded etcd data")
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "where to write a kubeconfig for the server (default <data-dir>/kubeconfig; \"-\" writes none)")
	o.history.addFlags(cmd)
	o.services.addFlags(cmd)
	o.secure.addFlags(cmd)
	o.auth.addFlags(cmd)
	o.admission.addFlags(cmd)
	o.log.addFlags(cmd)
	return cmd
}

func (o *apiServerOptions) run(ctx context.Context, cmd *cobra.Command) error {
	logger, err := o.log.logger()
	if err != nil {
		return err
	}
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d out of range", o.port)
	}
	if net.ParseIP(o.bindAddress) == nil && o.bindAddress != "localhost" {
		return fmt.Errorf("--bind-address %q is not an IP address", o.bindAddress)
	}
	if err := o.secure.validate(); err != nil {
		return err
	}
	if err := o.history.validate(); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// /metrics serves reg and, with embedded etcd, the member's own metrics.
	gatherers := prometheus.Gatherers{reg}
	backend, runBackend, closeBackend, err := o.openStorage(ctx, logger, &gatherers)
	if err != nil {
		return err
	}
	defer closeBackend()

	tlsConfig, creds, err := o.secure.transport(o.dataDir, o.bindAddress, o.port, o.services.advertiseAddress, logger)
	if err != nil {
		return err
	}
	scheme := "https"
	if creds == nil {
		scheme = "http"
	}
	auditor, closeAudit, err := o.secure.auditor(logger)
	if err != nil {
		return err
	}
	defer closeAudit()
	cfg := apiserver.Config{Backend: backend, Logger: logger, Registerer: reg, Gatherer: gatherers, TLS: tlsConfig, Auditor: auditor}
	o.services.apply(&cfg, o.bindAddress)
	if err := o.secure.apply(&cfg); err != nil {
		return err
	}
	if err := o.auth.apply(&cfg, o.dataDir, creds, logger); err != nil {
		return err
	}
	if err := o.admission.apply(&cfg); err != nil {
		return err
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.bindAddress, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	u := url.URL{Scheme: scheme, Host: ln.Addr().String()}
	if err := o.writeKubeconfig(u.String(), creds); err != nil {
		_ = ln.Close()
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "kplane apiserver serving on %s\n", u.String())
	if path := o.kubeconfigPath(); path != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "kubeconfig written to %s (kubectl --kubeconfig %s get pods)\n", path, path)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var backendErr error
	if runBackend != nil {
		wg.Go(func() {
			if err := runBackend(ctx); err != nil && !errors.Is(err, context.Canceled) {
				backendErr = err
				logger.Error("storage stopped", "err", err)
				cancel()
			}
		})
	}
	if creds != nil {
		// Renewed client certificates are written to the kubeconfigs, so
		// that a client started later presents them.
		wg.Go(func() {
			creds.keepRenewed(ctx, clock.RealClock{}, logger, func([]string) {
				if err := o.writeKubeconfig(u.String(), creds); err != nil {
					logger.Warn("writing the renewed certificates to the kubeconfigs failed", "err", err)
				}
			})
		})
	}
	var servingErr error
	if o.serving != nil {
		wg.Go(func() {
			if err := o.serving(ctx, u.String(), creds); err != nil {
				servingErr = err
				cancel()
			}
		})
	}
	err = srv.Run(ctx, ln)
	cancel()
	wg.Wait()
	return errors.Join(err, backendErr, servingErr)
}

// openStorage opens the backend the flags select. run, when not nil, is
// the backend's background work; closeFn releases everything. An embedded
// etcd's metrics are appended to gatherers.
func (o *apiServerOptions) openStorage(ctx context.Context, logger *slog.Logger, gatherers *prometheus.Gatherers) (storage.Backend, func(context.Context) error, func(), error) {
	switch o.storage {
	case "memory":
		mcfg := memory.Config{Logger: logger}
		o.history.memory(&mcfg)
		b, err := memory.New(mcfg)
		if err != nil {
			return nil, nil, nil, err
		}
		return b, nil, func() { _ = b.Close() }, nil
	case "etcd":
		cfg := etcd.Config{Prefix: o.etcdPrefix, Logger: logger}
		o.history.etcd(&cfg)
		var emb *etcd.Embedded
		tlsOn := o.etcdTLS != (etcd.TLSFiles{})
		if tlsOn && len(o.etcdServers) == 0 {
			return nil, nil, nil, fmt.Errorf("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")
		}
		if len(o.etcdServers) > 0 {
			cfg.Endpoints = o.etcdServers
			if tlsOn {
				tc, err := o.etcdTLS.ClientConfig()
				if err != nil {
					return nil, nil, nil, fmt.Errorf("etcd TLS: %w", err)
				}
				cfg.TLS = tc
			}
		} else {
			dir := filepath.Join(o.dataDir, "etcd")
			var err error
			emb, err = etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: dir, Logger: logger})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("start embedded etcd in %s: %w", dir, err)
			}
			cfg.Client = emb.Client()
			*gatherers = append(*gatherers, emb.Gatherer())
		}
		b, err := etcd.New(cfg)
		if err != nil {
			if emb != nil {
				_ = emb.Close()
			}
			return nil, nil, nil, err
		}
		closeAll := func() {
			_ = b.Close()
			if emb != nil {
				_ = emb.Close()
			}
		}
		if !o.watchCache {
			return b, b.Run, closeAll, nil
		}
		c, err := cacher.New(cacher.Config{Backend: b, Logger: logger})
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		return c, b.Run, func() {
			_ = c.Close()
			closeAll()
		}, nil
	default:
		return nil, nil, nil, fmt.Errorf("--storage must be memory or etcd, not %q", o.storage)
	}
}

func (o *apiServerOptions) kubeconfigPath() string {
	switch o.kubeconfigOut {
	case "-":
		return ""
	case "":
		return filepath.Join(o.dataDir, "kubeconfig")
	default:
		return o.kubeconfigOut
	}
}

// controllerManagerKubeconfig and nodeKubeconfig are the kubeconfigs, in
// the data dir, of the controller manager and the simulated nodes.
const (
	controllerManagerKubeconfig = "controller-manager.kubeconfig"
	nodeKubeconfig              = "node.kubeconfig"
)

// writeKubeconfig writes a kubeconfig whose current context is the server,
// trusting the CA of creds and presenting its admin certificate, and, over
// HTTPS, the controller manager's and the nodes' kubeconfigs in the data
// dir. "-" as --kubeconfig-out writes none.
func (o *apiServerOptions) writeKubeconfig(server string, creds *pki) error {
	path := o.kubeconfigPath()
	if path == "" {
		return nil
	}
	files := map[string]string{}
	if creds == nil {
		files[path] = kubeconfig(server, nil, nil)
	} else {
		files[path] = kubeconfig(server, creds.caPEM, creds.admin.creds())
		files[filepath.Join(o.dataDir, controllerManagerKubeconfig)] = kubeconfig(server, creds.caPEM, creds.controllerManager.creds())
		files[filepath.Join(o.dataDir, nodeKubeconfig)] = kubeconfig(server, creds.caPEM, creds.node.creds())
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		if err := writeFileAtomic(p, []byte(content), 0o600); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
	}
	return nil
}

// kubeconfig renders a kubeconfig for the server: without credentials for
// plain HTTP, else trusting caPEM (the system roots when nil) and
// presenting cred.
func kubeconfig(server string, caPEM []byte, cred *credentials) string {
	ca, user := "", " {}"
	b64 := base64.StdEncoding.EncodeToString
	if len(caPEM) > 0 {
		ca = "\n    certificate-authority-data: " + b64(caPEM)
	}
	if cred != nil {
		user = "\n    client-certificate-data: " + b64(cred.certPEM) + "\n    client-key-data: " + b64(cred.keyPEM)
	}
	return strings.TrimLeft(`
apiVersion: v1
kind: Config
clusters:
- name: kplane
  cluster:
    server: `+server+ca+`
users:
- name: kplane
  user:`+user+`
contexts:
- name: kplane
  context:
    cluster: kplane
    user: kplane
    namespace: default
current-context: kplane
`, "\n")
}

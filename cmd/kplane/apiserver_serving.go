package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/audit"
)

// servingOptions are the flags of transport security, request limits and
// the audit log, shared by `kplane apiserver` and `kplane up`, named as
// kube-apiserver names them.
type servingOptions struct {
	// insecureHTTP serves plain HTTP; HTTPS is the default.
	insecureHTTP bool
	// tls is the deprecated --tls; --tls=false is --insecure-http.
	tls          bool
	certFile     string
	keyFile      string
	clientCAFile string
	tlsSANs      []string

	maxInFlight         int
	maxMutatingInFlight int
	requestTimeout      time.Duration

	auditLogPath    string
	auditPolicyFile string
	auditMaxSizeMB  int
	auditMaxBackups int
	auditMaxAgeDays int
}

func (o *servingOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.insecureHTTP, "insecure-http", false, "serve plain HTTP instead of HTTPS (INSECURE): no transport security, no client certificates, and requests without credentials act as an administrator; only for throwaway local runs")
	f.BoolVar(&o.tls, "tls", true, "serve HTTPS (the default)")
	_ = f.MarkDeprecated("tls", "HTTPS is the default; use --insecure-http for plain HTTP")
	f.StringVar(&o.certFile, "tls-cert-file", "", "PEM serving certificate (with intermediates) to use instead of one generated from the CA in <data-dir>/pki")
	f.StringVar(&o.keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "PEM bundle that verifies client certificates instead of the CA in <data-dir>/pki")
	f.StringSliceVar(&o.tlsSANs, "tls-san", nil, "extra DNS names or IP addresses for the generated serving certificate (besides localhost, 127.0.0.1, ::1, the hostname, --bind-address and --advertise-address)")
	f.IntVar(&o.maxInFlight, "max-requests-inflight", apiserver.DefaultMaxRequestsInFlight, "most non-mutating requests served at once; the excess gets 429 with Retry-After (watches are not counted); 0 is no limit")
	f.IntVar(&o.maxMutatingInFlight, "max-mutating-requests-inflight", apiserver.DefaultMaxMutatingRequestsInFlight, "most mutating requests served at once; the excess gets 429 with Retry-After; 0 is no limit")
	f.DurationVar(&o.requestTimeout, "request-timeout", apiserver.DefaultRequestTimeout, "how long a request other than a watch may take before it is answered 504 Timeout; 0 is no timeout")
	f.StringVar(&o.auditLogPath, "audit-log-path", "", "file the audit log (audit.k8s.io/v1 Events, JSON lines) is written to, \"-\" for stdout; needs --audit-policy-file")
	f.StringVar(&o.auditPolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy file deciding what is audited")
	f.IntVar(&o.auditMaxSizeMB, "audit-log-maxsize", 100, "size in megabytes past which the audit log is rotated")
	f.IntVar(&o.auditMaxBackups, "audit-log-maxbackup", 0, "rotated audit logs kept; 0 keeps all")
	f.IntVar(&o.auditMaxAgeDays, "audit-log-maxage", 0, "days rotated audit logs are kept; 0 keeps them regardless of age")
}

// validate checks the flags that go together, before anything is opened.
func (o *servingOptions) validate() error {
	switch {
	case o.insecure() && (o.certFile != "" || o.keyFile != "" || o.clientCAFile != "" || len(o.tlsSANs) > 0):
		return errors.New("--insecure-http excludes --tls-cert-file, --tls-private-key-file, --client-ca-file and --tls-san")
	case (o.certFile == "") != (o.keyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	case (o.auditLogPath == "") != (o.auditPolicyFile == ""):
		return errors.New("--audit-log-path and --audit-policy-file go together")
	case o.maxInFlight < 0 || o.maxMutatingInFlight < 0 || o.requestTimeout < 0:
		return errors.New("--max-requests-inflight, --max-mutating-requests-inflight and --request-timeout must not be negative")
	case o.auditMaxBackups < 0 || o.auditMaxAgeDays < 0:
		return errors.New("--audit-log-maxbackup and --audit-log-maxage must not be negative")
	}
	return nil
}

// insecure reports whether plain HTTP was asked for.
func (o *servingOptions) insecure() bool { return o.insecureHTTP || !o.tls }

// apply sets the limits of cfg; the flags' 0 (no limit) is the Config's
// negative.
func (o *servingOptions) apply(cfg *apiserver.Config) error {
	if o.maxInFlight < 0 || o.maxMutatingInFlight < 0 || o.requestTimeout < 0 {
		return errors.New("--max-requests-inflight, --max-mutating-requests-inflight and --request-timeout must not be negative")
	}
	unlimited := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	cfg.MaxRequestsInFlight = unlimited(o.maxInFlight)
	cfg.MaxMutatingRequestsInFlight = unlimited(o.maxMutatingInFlight)
	cfg.RequestTimeout = o.requestTimeout
	if o.requestTimeout == 0 {
		cfg.RequestTimeout = -1
	}
	return nil
}

// servingHosts are the names the generated serving certificate is for.
func servingHosts(bindAddress, advertiseAddress string, sans []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
	}
	if ip := net.ParseIP(bindAddress); ip != nil && !ip.IsUnspecified() {
		add(ip.String())
	}
	if ip := net.ParseIP(advertiseAddress); ip != nil {
		add(ip.String())
	}
	for _, s := range sans {
		add(s)
	}
	return hosts
}

// transport returns the TLS configuration and credentials the flags ask
// for, or nil ones (and a loud warning) for plain HTTP.
func (o *servingOptions) transport(dataDir, bindAddress string, port int, advertiseAddress string, logger *slog.Logger) (*tls.Config, *pki, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	if o.insecure() {
		logger.Warn("serving plain HTTP: anyone who can reach " + net.JoinHostPort(bindAddress, strconv.Itoa(port)) +
			" can read what is sent and sent credentials, clients cannot know they reach this server, and a request without credentials is an administrator (system:unsecured in system:masters); drop --insecure-http to serve HTTPS")
		return nil, nil, nil
	}
	p, err := loadOrCreatePKI(pkiConfig{
		dir:          filepath.Join(dataDir, "pki"),
		hosts:        servingHosts(bindAddress, advertiseAddress, o.tlsSANs),
		certFile:     o.certFile,
		keyFile:      o.keyFile,
		clientCAFile: o.clientCAFile,
		now:          time.Now(),
	})
	if err != nil {
		return nil, nil, err
	}
	return p.tlsConfig(), p, nil
}

// auditor returns the Auditor the --audit-* flags ask for (nil when
// auditing is off) and the function that closes its log.
func (o *servingOptions) auditor(logger *slog.Logger) (*audit.Auditor, func(), error) {
	if o.auditLogPath == "" && o.auditPolicyFile == "" {
		return nil, func() {}, nil
	}
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	policy, err := audit.LoadPolicy(o.auditPolicyFile)
	if err != nil {
		return nil, nil, err
	}
	var sink io.Writer = os.Stdout
	closeFn := func() {}
	if o.auditLogPath != "-" {
		fs, err := audit.NewFileSink(audit.FileConfig{Path: o.auditLogPath, MaxSizeMB: o.auditMaxSizeMB, MaxBackups: o.auditMaxBackups, MaxAgeDays: o.auditMaxAgeDays})
		if err != nil {
			return nil, nil, err
		}
		sink, closeFn = fs, func() { _ = fs.Close() }
	}
	a, err := audit.New(audit.Config{Policy: policy, Sink: sink, Logger: logger})
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("--audit-policy-file: %w", err)
	}
	return a, closeFn, nil
}

package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// EmbeddedConfig configures an etcd server run inside the kplane process.
type EmbeddedConfig struct {
	// DataDir holds the member's write-ahead log and database. Required; it
	// is created if missing and reused on restart, which is what makes the
	// data survive the process.
	DataDir string
	// Name is the member name. Default "kplane".
	Name string
	// ClientURL and PeerURL are the URLs the member listens on and
	// advertises. They must be on a loopback address unless
	// AllowNonLoopback is set. Default: http://127.0.0.1 with a free port
	// picked at start.
	ClientURL, PeerURL string
	// InitialCluster lists every member of a new cluster as
	// "name=peerURL,...". Default: this member alone.
	InitialCluster string
	// ClusterToken keeps members of different clusters from talking to each
	// other. Default "kplane".
	ClusterToken string
	// JoinExisting makes the member join a running cluster instead of
	// bootstrapping a new one; only meaningful with an empty DataDir.
	JoinExisting bool
	// AllowNonLoopback permits listening on other addresses than loopback.
	AllowNonLoopback bool
	// ProgressNotifyInterval is how often etcd sends progress notifications
	// to watches that asked for them. Default 5s.
	ProgressNotifyInterval time.Duration
	// ReadyTimeout bounds the wait for the member to serve. Default 60s.
	ReadyTimeout time.Duration
	// ServerTLS, when set, makes the member serve clients over https with
	// these files and require client certificates signed by CAFile. The
	// member's own Client connects with the same files, so CAFile must
	// hold the CA that signed CertFile and the certificate must also allow
	// client authentication.
	ServerTLS *TLSFiles
	// UnsafeNoFsync skips fsync of the write-ahead log: faster, and it loses
	// acknowledged writes on a machine crash. For tests only.
	UnsafeNoFsync bool
	// Logger receives etcd's warnings and errors. Default: discarded.
	Logger *slog.Logger
}

// Embedded is an etcd member running in this process.
//
// Close stops it; it is safe to call more than once.
type Embedded struct {
	etcd   *embed.Etcd
	client *clientv3.Client
	// closeOnce makes Close idempotent; etcd's own Close is not.
	closeOnce sync.Once
	closeErr  error
	// closing is set when Close begins; it quiets etcd's logging.
	closing *atomic.Bool
	// clientURL and peerURL are the URLs the member serves on.
	clientURL, peerURL string
}

// StartEmbedded starts an etcd member and waits until it serves requests
// (or ctx ends, or cfg.ReadyTimeout passes). The returned member's Client is
// connected and ready; both are closed by Close.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded etcd: DataDir is required")
	}
	if cfg.Name == "" {
		cfg.Name = "kplane"
	}
	if cfg.ClusterToken == "" {
		cfg.ClusterToken = "kplane"
	}
	if cfg.ProgressNotifyInterval <= 0 {
		cfg.ProgressNotifyInterval = 5 * time.Second
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	// A free port picked here can be taken by someone else before etcd
	// binds it; try again with new ports a few times in that case.
	pickPorts := cfg.ClientURL == "" || cfg.PeerURL == ""
	attempts := 1
	if pickPorts {
		attempts = 3
	}
	var lastErr error
	for range attempts {
		e, err := startEmbeddedOnce(ctx, cfg)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !pickPorts || ctx.Err() != nil || !isAddrInUse(err) {
			break
		}
	}
	return nil, lastErr
}

func startEmbeddedOnce(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	clientURL, peerURL := cfg.ClientURL, cfg.PeerURL
	var err error
	if clientURL == "" {
		if clientURL, err = freeLoopbackURL(); err != nil {
			return nil, err
		}
		if cfg.ServerTLS != nil {
			clientURL = "https" + strings.TrimPrefix(clientURL, "http")
		}
	}
	if peerURL == "" {
		if peerURL, err = freeLoopbackURL(); err != nil {
			return nil, err
		}
	}
	curl, err := parseListenURL(clientURL, cfg.AllowNonLoopback)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client URL: %w", err)
	}
	purl, err := parseListenURL(peerURL, cfg.AllowNonLoopback)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer URL: %w", err)
	}
	if (cfg.ServerTLS != nil) != (curl.Scheme == "https") {
		return nil, fmt.Errorf("embedded etcd: client URL %s: use https exactly when ServerTLS is set", clientURL)
	}
	var clientTLS *tls.Config
	if cfg.ServerTLS != nil {
		if cfg.ServerTLS.CertFile == "" || cfg.ServerTLS.KeyFile == "" || cfg.ServerTLS.CAFile == "" {
			return nil, errors.New("embedded etcd: ServerTLS needs a certificate, a key and a CA file")
		}
		if clientTLS, err = cfg.ServerTLS.ClientConfig(); err != nil {
			return nil, fmt.Errorf("embedded etcd: %w", err)
		}
	}

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{*curl}
	ec.AdvertiseClientUrls = []url.URL{*curl}
	ec.ListenPeerUrls = []url.URL{*purl}
	ec.AdvertisePeerUrls = []url.URL{*purl}
	ec.InitialClusterToken = cfg.ClusterToken
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + purl.String()
	}
	if cfg.JoinExisting {
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if t := cfg.ServerTLS; t != nil {
		ec.ClientTLSInfo = transport.TLSInfo{
			CertFile:       t.CertFile,
			KeyFile:        t.KeyFile,
			TrustedCAFile:  t.CAFile,
			ClientCertAuth: true,
		}
	}
	// kplane compacts on its own schedule (see Config.CompactionInterval).
	ec.AutoCompactionRetention = "0"
	ec.Logger = "zap"
	closing := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(cfg.Logger, closing))

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: start: %w", err)
	}
	timer := time.NewTimer(cfg.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: waiting for ready: %w", ctx.Err())
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedded etcd: not ready after %s", cfg.ReadyTimeout)
	}
	served := curl.Scheme + "://" + e.Clients[0].Addr().String()
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{served},
		TLS:         clientTLS,
		DialTimeout: 5 * time.Second,
		Logger:      newZapLogger(cfg.Logger, closing),
	})
	if err != nil {
		closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded etcd: client: %w", err)
	}
	return &Embedded{etcd: e, client: client, closing: closing, clientURL: served, peerURL: purl.String()}, nil
}

// Client is a client connected to this member. It is owned by the Embedded:
// do not close it.
func (e *Embedded) Client() *clientv3.Client { return e.client }

// ClientURL is the URL clients reach this member at.
func (e *Embedded) ClientURL() string { return e.clientURL }

// PeerURL is the URL other members reach this member at.
func (e *Embedded) PeerURL() string { return e.peerURL }

// Err reports a failure of the running member; it is closed when the member stops.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Close closes the client and stops the member, waiting for its goroutines
// and flushing its data. It is safe to call more than once.
func (e *Embedded) Close() error {
	e.closeOnce.Do(func() {
		e.closing.Store(true)
		err := e.client.Close()
		e.etcd.Close()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		e.closeErr = err
	})
	return e.closeErr
}

func freeLoopbackURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("embedded etcd: pick a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("embedded etcd: pick a free port: %w", err)
	}
	return "http://" + addr, nil
}

func parseListenURL(s string, allowNonLoopback bool) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: scheme must be http or https", s)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	if port == "" || port == "0" {
		return nil, fmt.Errorf("%q: a port is required", s)
	}
	if !allowNonLoopback {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("%q: not a loopback address", s)
		}
	}
	return u, nil
}

func isAddrInUse(err error) bool {
	// etcd does not always wrap the listener's error with %w.
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

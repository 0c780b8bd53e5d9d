package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/leaderelection"
	"github.com/kplane/kplane/pkg/workqueue"
)

// controllerMetrics is the reconcile metrics sink the controllers share.
type controllerMetrics = controller.Metrics

// Manager runs the enabled controllers while it leads. Build it with New
// and Run it once. Its methods are safe for concurrent use.
type Manager struct {
	cfg         Config
	controllers []namedRunner
	// elector is nil when leader election is disabled.
	elector *leaderelection.Elector
	health  *leaderelection.HealthCheck
	ran     atomic.Bool
	// ownClients are the controllers' ServiceAccount clients, which the
	// manager built and so closes the idle connections of when Run ends.
	ownClients []*client.Client

	mu sync.Mutex
	// leaderErr is the first error of the controllers started on
	// leadership; guarded by mu.
	leaderErr error
	// cancelRun cancels Run's context; set by Run before the election
	// starts; guarded by mu.
	cancelRun context.CancelFunc
}

type namedRunner struct {
	name string
	r    runner
}

// New builds the informer factory, the enabled controllers and the
// elector; it starts nothing.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	enabled, err := enabledControllers(cfg.Controllers)
	if err != nil {
		return nil, err
	}
	cfg.informers, err = informers.New(informers.Config{
		Client:           cfg.Client,
		DisableWatchList: !cfg.Gates.Enabled(WatchListClient),
		Clock:            cfg.Clock,
		Logger:           cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: %w", err)
	}
	metrics, err := controller.NewPrometheusMetrics(controller.PrometheusMetricsConfig{Registerer: cfg.MetricsRegistry})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: controller metrics: %w", err)
	}
	// One provider, registered once, serves every queue: queues of
	// different names are different series of the same metrics.
	queueMetrics, err := workqueue.NewPrometheusMetrics(workqueue.PrometheusConfig{Registerer: cfg.MetricsRegistry})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: work queue metrics: %w", err)
	}
	d := deps{cfg: cfg, metrics: metrics, newQueue: queueFactory(cfg, queueMetrics), queueMetrics: queueMetrics}
	m := &Manager{cfg: cfg, health: leaderelection.NewHealthCheck(HealthMaxOverdue)}
	for _, desc := range enabled {
		dd := d
		if cfg.UseServiceAccountCredentials && desc.serviceAccount != "" {
			c, err := serviceAccountClient(cfg, desc.serviceAccount)
			if err != nil {
				return nil, fmt.Errorf("controllermanager: %s: %w", desc.name, err)
			}
			m.ownClients = append(m.ownClients, c)
			dd.cfg.Client = c
		}
		r, err := desc.build(dd)
		if err != nil {
			return nil, fmt.Errorf("controllermanager: %s: %w", desc.name, err)
		}
		if r == nil {
			cfg.Logger.Info("controller not started: nothing to do with this configuration", "controller", desc.name)
			continue
		}
		m.controllers = append(m.controllers, namedRunner{name: desc.name, r: r})
	}
	if cfg.LeaderElection.Disabled {
		return m, nil
	}
	lock, err := leaderelection.NewLeaseLock(leaderelection.LeaseLockConfig{
		Client: cfg.Client, Namespace: cfg.LeaderElection.Namespace, Name: cfg.LeaderElection.Name, Identity: cfg.Identity,
	})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: %w", err)
	}
	leMetrics, err := leaderelection.NewPrometheusMetrics(leaderelection.PrometheusConfig{Registerer: cfg.MetricsRegistry})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: leader election metrics: %w", err)
	}
	m.elector, err = leaderelection.New(leaderelection.Config{
		Lock:            lock,
		Name:            cfg.LeaderElection.Name,
		LeaseDuration:   cfg.LeaderElection.LeaseDuration,
		RenewDeadline:   cfg.LeaderElection.RenewDeadline,
		RetryPeriod:     cfg.LeaderElection.RetryPeriod,
		ReleaseOnCancel: cfg.LeaderElection.ReleaseOnCancel,
		Clock:           cfg.Clock,
		Logger:          cfg.Logger,
		Metrics:         leMetrics,
		Callbacks: leaderelection.Callbacks{
			OnStartedLeading: m.lead,
			OnNewLeader: func(id string) {
				cfg.Logger.Info("controller manager leader", "identity", id, "self", id == cfg.Identity)
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("controllermanager: %w", err)
	}
	m.health.SetElector(m.elector)
	return m, nil
}

// Controllers returns the names of the enabled controllers, in start order.
func (m *Manager) Controllers() []string {
	names := make([]string, len(m.controllers))
	for i, c := range m.controllers {
		names[i] = c.name
	}
	return names
}

// Identity is this manager's identity in the Lease.
func (m *Manager) Identity() string { return m.cfg.Identity }

// IsLeader reports whether the manager leads now; always true with leader
// election disabled once Run started.
func (m *Manager) IsLeader() bool {
	if m.elector == nil {
		return m.ran.Load()
	}
	return m.elector.IsLeader()
}

// Run runs the manager until ctx ends or leadership is lost, and returns
// after every goroutine it started has exited. It returns nil when ctx
// ended, an error wrapping leaderelection.ErrLeadershipLost when the lease
// was lost, and the error of a controller that stopped on its own.
func (m *Manager) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return errors.New("controllermanager: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		for _, c := range m.ownClients {
			c.CloseIdleConnections()
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	if ln := m.cfg.HealthListener; ln != nil {
		srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
		wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.cfg.Logger.Error("health server stopped", "err", err)
			}
		})
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = srv.Shutdown(sctx)
		}()
		m.cfg.Logger.Info("serving /healthz and /metrics", "address", ln.Addr().String())
	}
	if m.elector == nil {
		return m.runControllers(ctx)
	}
	m.cfg.Logger.Info("campaigning for leadership", "lease", m.cfg.LeaderElection.Namespace+"/"+m.cfg.LeaderElection.Name, "identity", m.cfg.Identity)
	// A controller that fails while leading cancels ctx through lead, so
	// Run stops campaigning and returns the controller's error.
	m.mu.Lock()
	m.cancelRun = cancel
	m.mu.Unlock()
	err := m.elector.Run(ctx)
	m.mu.Lock()
	leaderErr := m.leaderErr
	m.mu.Unlock()
	if leaderErr != nil {
		return leaderErr
	}
	if errors.Is(err, leaderelection.ErrLeadershipLost) {
		m.cfg.Logger.Error("leadership lost; controllers stopped")
		return fmt.Errorf("controllermanager: %w", err)
	}
	return err
}

// lead is OnStartedLeading: it runs the controllers until leadership ends.
func (m *Manager) lead(ctx context.Context) {
	m.cfg.Logger.Info("started leading", "identity", m.cfg.Identity)
	if err := m.runControllers(ctx); err != nil {
		m.mu.Lock()
		m.leaderErr = err
		cancel := m.cancelRun
		m.mu.Unlock()
		cancel()
	}
}

// runControllers starts the informers and every controller, waits until
// ctx ends or a controller stops on its own, then stops and waits for all
// of them. It returns the first controller error seen while ctx was live.
func (m *Manager) runControllers(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for _, c := range m.controllers {
		logger := m.cfg.Logger.With("controller", c.name)
		wg.Go(func() {
			logger.Info("starting controller", "workers", m.cfg.Workers)
			err := c.r.Run(ctx, m.cfg.Workers)
			if ctx.Err() == nil {
				// A controller stopped by itself: the manager can not do
				// its job, so it stops as a whole.
				if err == nil {
					err = errors.New("stopped")
				}
				errOnce.Do(func() { firstErr = fmt.Errorf("controllermanager: controller %s: %w", c.name, err) })
				cancel()
			}
			logger.Info("controller stopped")
		})
	}
	// Start after every controller asked the factory for its informers.
	m.cfg.informers.Start(ctx)
	<-ctx.Done()
	wg.Wait()
	m.cfg.informers.Shutdown()
	return firstErr
}

// Handler serves /healthz (failing when the manager leads but can not
// renew its lease), /readyz (the same) and /metrics (the
// MetricsRegistry in Prometheus' text format).
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	health := func(w http.ResponseWriter, r *http.Request) {
		if err := m.health.Check(r); err != nil {
			m.cfg.Logger.Warn("health check failed", "check", m.health.Name(), "err", err)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "[-]%s failed: %v\nhealthz check failed\n", m.health.Name(), err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "[+]%s ok\n", m.health.Name())
		}
		fmt.Fprint(w, "ok")
	}
	mux.HandleFunc("GET /healthz", health)
	mux.HandleFunc("GET /readyz", health)
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.cfg.MetricsRegistry, promhttp.HandlerOpts{}))
	return mux
}

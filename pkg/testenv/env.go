package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// Timeouts of start and teardown. They bound misbehaviour only: a healthy
// environment starts and stops in milliseconds.
const (
	// seedTimeout bounds creating the seed objects.
	seedTimeout = 30 * time.Second
	// controllerStopTimeout is how long Stop waits for controllers.
	controllerStopTimeout = time.Minute
	// serverShutdownTimeout is how long the server waits for requests
	// to return once their contexts are cancelled.
	serverShutdownTimeout = 5 * time.Second
	// dumpTimeout bounds listing every object on failure.
	dumpTimeout = 10 * time.Second
	// defaultWaitTimeout is WaitFor's default.
	defaultWaitTimeout = 30 * time.Second
)

// Env is a running environment: a kplane API server on a loopback port,
// storing in memory, private to the test that started it. Its exported
// fields are set by Start and must not be changed. Env is safe for
// concurrent use.
type Env struct {
	// Client is a kplane client for the server, with the credentials of
	// REST. Build typed clients from it with client.NewResource.
	Client *client.Client
	// URL is the server's base URL: http://127.0.0.1:port, or https:// with TLS.
	URL string
	// REST is the connection settings in the shape of client-go's rest.Config.
	REST RESTConfig
	// Kubeconfig is a kubeconfig for the server, and KubeconfigPath a file
	// holding it (in the test's temporary directory), for tools and
	// libraries that load one: kubectl --kubeconfig, clientcmd, or
	// client.LoadKubeconfig.
	Kubeconfig     []byte
	KubeconfigPath string
	// FeatureGates are the gates of WithFeatureGates, for controllers to
	// hand to their components. Never nil.
	FeatureGates featuregate.Gates
	// Webhook is where the webhooks of WithWebhooks are called; nil
	// without webhooks.
	Webhook *WebhookServer

	t           testing.TB
	resources   []registry.Strategy
	waitTimeout time.Duration

	backend *memory.Backend
	// users are the tokens ConfigFor and ServiceAccountConfig hand out.
	users       *users
	server      *server
	stopCtrl    context.CancelFunc
	controllers sync.WaitGroup
	stopOnce    sync.Once
	// mu guards stopped, set once Stop no longer waits for controllers:
	// a controller that fails later must not report to a finished test.
	mu      sync.Mutex
	stopped bool
	// cleanups run last in Stop.
	cleanups []func()
}

// controllerFailed fails the test, at once, for a controller's error.
func (e *Env) controllerFailed(name string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.t.Errorf("testenv: controller %q: %v", name, err)
	}
}

// Start starts an environment for t and returns once the server accepts
// requests, the objects of WithObjects and WithObjectsFromDir exist and
// the controllers of WithController have been started. The environment
// stops when t ends (t.Cleanup), or earlier by Stop; if t has failed by
// then, every object is written to the test log first.
//
// Each call makes a new server, store, port, CA and credentials, so
// environments in parallel tests share nothing. Start must be called from
// the test's goroutine: it calls t.Fatal when the environment cannot start.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := options{waitTimeout: defaultWaitTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	env, err := start(t, o)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func start(t testing.TB, o options) (*Env, error) {
	resources := append(registry.Builtin(), apiextensions.CustomResourceDefinitions())
	crds := o.crds
	if len(o.crdPaths) > 0 {
		fromFiles, err := readCRDs(o.crdPaths)
		if err != nil {
			return nil, err
		}
		crds = append(crds, fromFiles...)
	}
	// Objects to seed and to dump may be custom resources of these CRDs;
	// the server itself serves them once it has established the CRDs.
	known, err := withCustomResources(resources, crds)
	if err != nil {
		return nil, err
	}
	var seeds []seed
	for i, obj := range o.objects {
		s, err := seedFromValue(fmt.Sprintf("WithObjects argument %d", i+1), obj, known)
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		seeds = append(seeds, s)
	}
	for _, dir := range o.dirs {
		s, err := seedsFromDir(dir, known)
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, s...)
	}

	gates := o.gates
	if gates == nil {
		reg, err := featuregate.New(featuregate.Config{})
		if err != nil {
			return nil, fmt.Errorf("testenv: feature gates: %w", err)
		}
		gates = reg.Freeze()
	}
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	backend, err := memory.New(memory.Config{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	scfg := apiserver.Config{Backend: backend, Resources: resources, Logger: logger}
	scfg.Admission.Enable = o.enable
	scfg.Admission.Disable = o.disable
	if !slices.Contains(o.enable, admission.ServiceAccount) {
		scfg.Admission.Disable = append(slices.Clone(o.disable), admission.ServiceAccount)
	}
	us := &users{}
	if o.rbac {
		scfg.AuthorizationMode = apiserver.AuthorizationModeRBAC
		scfg.Authenticator = us.authenticator()
	}
	srv, err := apiserver.New(scfg)
	if err != nil {
		_ = backend.Close()
		return nil, fmt.Errorf("testenv: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = backend.Close()
		return nil, fmt.Errorf("testenv: listen on loopback: %w", err)
	}
	rc := RESTConfig{BearerToken: us.add(adminUser)}
	scheme := "http"
	if o.tls {
		c, err := newCerts(time.Now())
		if err != nil {
			_ = ln.Close()
			_ = backend.Close()
			return nil, err
		}
		ln = tls.NewListener(ln, c.serverTLS())
		scheme = "https"
		rc.CAData, rc.CertData, rc.KeyData = c.caPEM, c.clientCertPEM, c.clientKeyPEM
	}
	rc.Host = (&url.URL{Scheme: scheme, Host: ln.Addr().String()}).String()
	kc, err := kubeconfig(rc)
	if err != nil {
		_ = ln.Close()
		_ = backend.Close()
		return nil, err
	}
	c, err := client.New(rc.ClientConfig())
	if err != nil {
		_ = ln.Close()
		_ = backend.Close()
		return nil, fmt.Errorf("testenv: %w", err)
	}
	env := &Env{
		Client:       c,
		URL:          rc.Host,
		REST:         rc,
		Kubeconfig:   kc,
		FeatureGates: gates,
		t:            t,
		resources:    known,
		waitTimeout:  o.waitTimeout,
		backend:      backend,
		users:        us,
	}
	// From here on Stop tears everything down, so register it before
	// anything that can fail.
	auth := &authenticator{users: us}
	if o.rbac {
		auth = nil // the server authenticates (us) and authorizes itself
	}
	env.server = newServer(srv.Handler(), ln, auth, logger)
	env.server.start()
	ctrlCtx, stopCtrl := context.WithCancel(context.Background())
	env.stopCtrl = stopCtrl
	t.Cleanup(env.Stop)
	// The server's own controllers: CRDs become served custom resources.
	env.controllers.Go(func() { _ = srv.RunControllers(ctrlCtx) })

	env.KubeconfigPath = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(env.KubeconfigPath, kc, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: write kubeconfig: %w", err)
	}
	if len(crds) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
		err := InstallCRDs(ctx, c, crds...)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if len(seeds) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
		err := createSeeds(ctx, c, seeds)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	webhooks, err := env.setupWebhooks(o)
	if err != nil {
		return nil, err
	}
	if len(webhooks) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
		err := env.installWebhooks(ctx, srv, webhooks)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	for _, nc := range o.controllers {
		env.controllers.Go(func() {
			err := nc.run(ctrlCtx, env)
			if err != nil && !(errors.Is(err, context.Canceled) && ctrlCtx.Err() != nil) {
				env.controllerFailed(nc.name, err)
			}
		})
	}
	return env, nil
}

// randomToken returns 32 random hex digits.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Stop stops the environment: it cancels the controllers' context and
// waits for them, writes every object to the test log if the test has
// failed, then stops the server (ending open watches) and waits for its
// goroutines. Controller errors and a server that does not stop cleanly
// fail the test. Stop is idempotent and runs by itself when the test ends;
// call it to stop earlier, such as in a benchmark loop.
func (e *Env) Stop() {
	e.stopOnce.Do(e.stop)
}

func (e *Env) stop() {
	e.stopCtrl()
	done := make(chan struct{})
	go func() {
		e.controllers.Wait()
		close(done)
	}()
	timer := time.NewTimer(controllerStopTimeout)
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		e.t.Errorf("testenv: controllers still running %v after their context was cancelled", controllerStopTimeout)
	}
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()

	if e.t.Failed() {
		e.dump()
	}
	if err := e.server.stop(); err != nil {
		e.t.Errorf("testenv: API server: %v", err)
	}
	_ = e.backend.Close()
	e.Client.CloseIdleConnections()
	for _, f := range e.cleanups {
		f()
	}
}

// Namespace creates a namespace with a new name for t and returns the
// name: the test's name, made a valid DNS label, and a random suffix. Use
// one per test or subtest to keep tests sharing an environment apart.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	created, err := client.NewResource(e.Client, client.Namespaces).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv: create namespace: %v", err)
	}
	return created.Name
}

// namespacePrefix turns a test name into a generateName prefix: lower
// case letters, digits and single dashes, starting with a letter, at most
// 40 characters and ending in a dash.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	p := b.String()
	if p == "" || p[0] < 'a' {
		p = strings.TrimSuffix("test-"+p, "-")
	}
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	return p + "-"
}

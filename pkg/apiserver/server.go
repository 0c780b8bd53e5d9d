package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kplane/kplane/internal/freshconn"
	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// DefaultMaxRequestBodyBytes is the largest request body accepted, as in
// kube-apiserver (3 MiB); larger bodies get 413.
const DefaultMaxRequestBodyBytes = 3 << 20

// SystemNamespaces are created by New when missing.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Config configures a Server. Only Backend is required.
type Config struct {
	// Backend stores every resource. The Server does not close it.
	Backend storage.Backend
	// Codec encodes objects for the Backend. Default storage.JSONCodec.
	Codec storage.Codec
	// Resources are the served resources. Default registry.Builtin().
	Resources []registry.Strategy
	// Clock stamps creation and deletion times and drives watch timeouts.
	// Default the real clock.
	Clock clock.WithTicker
	// Logger receives request errors and lifecycle messages. Default: discarded.
	Logger *slog.Logger
	// Registerer receives the server's metrics and Gatherer serves them on
	// /metrics. Default: a private registry used for both.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Version is served on /version. Default: the Kubernetes version of the
	// API types kplane is built with.
	Version *version.Info
	// MaxRequestBodyBytes caps request bodies. Default DefaultMaxRequestBodyBytes.
	MaxRequestBodyBytes int64
	// MinRequestTimeout is the base of the random timeout (between one and
	// two times it) of a watch that sets no timeoutSeconds. Default 30m.
	MinRequestTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for requests to finish
	// after its context ends before closing connections. Default 10s.
	ShutdownTimeout time.Duration
	// TLS, when not nil, makes Run serve HTTPS (HTTP/2 included) with it;
	// it must hold a serving certificate. Nil serves plain HTTP.
	TLS *tls.Config
	// OpenAPI serves /openapi/v2 and /openapi/v3 (and below). Default:
	// documents built, on first use, from Resources.
	OpenAPI http.Handler
	// ServiceClusterIPRange is the IPv4 CIDR cluster IPs of Services are
	// allocated from; its first address is the kubernetes Service's.
	// Default DefaultServiceClusterIPRange (10.96.0.0/12).
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range, "first-last", node ports of
	// Services are allocated from. Default DefaultServiceNodePortRange.
	ServiceNodePortRange string
	// AdvertiseAddress is the IP the kubernetes Service's endpoints name.
	// Default 127.0.0.1.
	AdvertiseAddress string
	// Authenticator identifies the sender of each request (see authn.go):
	// a request it refuses is answered 401. Nil, with no ServiceAccount
	// tokens either, leaves authentication off: the subject of a client
	// certificate the TLS listener verified is the user, anyone else is
	// system:anonymous, and nothing is refused.
	Authenticator authentication.Authenticator
	// Anonymous says which requests without credentials are served as
	// system:anonymous when authentication is on. Default: the health
	// checks, /version and the issuer's discovery documents only.
	Anonymous AnonymousConfig
	// Authorizer decides whether each request (and each impersonation)
	// is allowed; denied requests get 403. Nil allows everything.
	Authorizer authorization.Authorizer
	// ServiceAccountIssuer issues and accepts ServiceAccount tokens.
	// Default: none are issued or accepted.
	ServiceAccountIssuer ServiceAccountIssuerConfig

	// RBAC authorization (see rbac.go).
	//
	// AuthorizationMode is AuthorizationModeAlwaysAllow (the default, also
	// "") or AuthorizationModeRBAC. RBAC makes New reconcile the bootstrap
	// policy, keeps a cache of the RBAC objects while RunControllers (or
	// Run) runs, refuses RBAC writes that escalate, answers access reviews
	// with RBAC and makes Authorizer return the RBAC authorizer.
	AuthorizationMode string
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight cap the
	// non-long-running requests served at once (read-only and mutating);
	// the excess gets 429 with Retry-After, as kube-apiserver's
	// --max-requests-inflight and --max-mutating-requests-inflight.
	// Defaults DefaultMaxRequestsInFlight (400) and
	// DefaultMaxMutatingRequestsInFlight (200); negative is no limit.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// RequestTimeout bounds non-long-running requests, as kube-apiserver's
	// --request-timeout: past it the client gets 504 Timeout. Default
	// DefaultRequestTimeout (60s); negative is no timeout.
	RequestTimeout time.Duration
	// Auditor, when not nil, records requests as its policy asks. Nil
	// audits nothing at no cost per request.
	Auditor *audit.Auditor
	// Admission configures the admission chain. The zero value runs
	// kube-apiserver's default plugins.
	Admission AdmissionConfig
	// ExtensionAuthentication, when not nil, is published by New in the
	// ConfigMap kube-system/extension-apiserver-authentication, replacing
	// what it held.
	ExtensionAuthentication *ExtensionAuthentication
}

// Server is a Kubernetes API server over a storage.Backend.
type Server struct {
	cfg     Config
	log     *slog.Logger
	clock   clock.WithTicker
	metrics *metrics
	// builtin are the resources of Config.Resources, served for the
	// server's whole life; read only after New.
	builtin []*resource
	// served is what the server serves now: builtin plus the custom
	// resources of established CRDs. Replaced whole, never changed.
	served atomic.Pointer[resourceSet]
	// discoveryDocs are the discovery documents, rebuilt when served
	// changes (see discovery).
	discoveryDocs atomic.Pointer[discoveryDocs]
	// crds, when the server serves CustomResourceDefinitions, keeps the
	// custom resources in step with them (see RunControllers).
	crds    *crdController
	handler http.Handler
	// inflight holds the in-flight limits' slots.
	inflight *inflightLimit
	// rawIsJSON is set when the Codec is storage.JSONCodec, so that the
	// encoded objects of watch events can be sent as they are.
	rawIsJSON bool
	// protoEvents shares the protobuf encodings of watch event objects
	// between watchers.
	protoEvents protoEventCache

	// openapiMu guards the default OpenAPI documents, built on request
	// from openapiSet, the resource set they describe.
	openapiMu  sync.Mutex
	openapiSet *resourceSet
	openapi    http.Handler
	openapiErr error

	// authn authenticates requests; nil when authentication is off.
	authn authentication.Authenticator
	// issuer issues and accepts ServiceAccount tokens; nil when not configured.
	issuer *issuer
	// rbac is set in RBAC authorization mode; read only after New.
	rbac *rbacState
	// authz authorizes every request (see Authorizer); nil allows all.
	authz authorization.Authorizer

	// admission is the chain client writes go through; admSource is
	// what its plugins read; admUncached counts reads without a cache.
	admission   *admission.Chain
	admSource   *admissionSource
	admConfig   *admission.Config
	admUncached atomic.Uint64
	// noNamespaceLifecycle is set when NamespaceLifecycle is disabled:
	// objects may then be created in namespaces that do not exist.
	noNamespaceLifecycle bool
}

// resource is one served resource and its store.
type resource struct {
	info     registry.Info
	strategy registry.Strategy
	store    storage.Interface
	// root is the storage key every object of the resource is below:
	// "/pods" for a built-in, "/<plural>.<group>" for a custom resource.
	root string
	// fieldLabels are the fields a field selector may use.
	fieldLabels map[string]bool
	// custom is the strategy of a custom resource, nil for built-ins.
	custom *apiextensions.CustomResource
	// terminating is set while the custom resource's CRD is being
	// deleted: creates are refused.
	terminating bool
	// gone is closed when the custom resource's CRD is deleted, ending
	// the watches of its objects; nil for built-ins.
	gone <-chan struct{}
	// hook, when not nil, claims and releases what objects hold beside
	// their own key (the cluster IPs and node ports of Services).
	hook writeHook
	// fms holds the resource's field managers, built on first use.
	fms *fieldManagers
}

// New returns a Server for cfg and creates the system namespaces in the
// Backend when they are missing. It starts no goroutines.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("apiserver: Backend is required")
	}
	if cfg.Codec == nil {
		cfg.Codec = storage.JSONCodec{}
	}
	if cfg.Resources == nil {
		cfg.Resources = append(registry.Builtin(), apiextensions.CustomResourceDefinitions())
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil && cfg.Gatherer == nil {
		reg := prometheus.NewRegistry()
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	if cfg.Registerer == nil || cfg.Gatherer == nil {
		return nil, errors.New("apiserver: give both Registerer and Gatherer, or neither")
	}
	if cfg.Version == nil {
		cfg.Version = defaultVersion()
	}
	if cfg.MaxRequestBodyBytes <= 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if cfg.MinRequestTimeout <= 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.MaxRequestsInFlight == 0 {
		cfg.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if cfg.MaxMutatingRequestsInFlight == 0 {
		cfg.MaxMutatingRequestsInFlight = DefaultMaxMutatingRequestsInFlight
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		inflight: newInflightLimit(cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight),
	}
	_, s.rawIsJSON = cfg.Codec.(storage.JSONCodec)
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	stores := map[schema.GroupVersionKind]*resource{}
	for _, st := range cfg.Resources {
		if _, ok := st.(registry.VersionConverter); ok {
			continue
		}
		store, err := cfg.Backend.Storage(storage.ResourceConfig{Codec: cfg.Codec, NewFunc: st.New, NewListFunc: st.NewList})
		if err != nil {
			return nil, fmt.Errorf("apiserver: storage for %s: %w", st.Info().GroupVersionResource(), err)
		}
		stores[st.Info().GVK] = newResource(st, store)
	}
	// In Resources' order; a resource served in a version other than its
	// storage version shares the store of that version, converting.
	for _, st := range cfg.Resources {
		conv, ok := st.(registry.VersionConverter)
		if !ok {
			s.builtin = append(s.builtin, stores[st.Info().GVK])
			continue
		}
		base := stores[conv.StorageGVK()]
		if base == nil {
			return nil, fmt.Errorf("apiserver: %s is stored as %s, which is not served", st.Info().GroupVersionResource(), conv.StorageGVK())
		}
		s.builtin = append(s.builtin, newResource(st, newVersionedStore(base.store, conv, base.strategy)))
	}
	set, err := newResourceSet(s.builtin, nil)
	if err != nil {
		return nil, err
	}
	s.served.Store(set)
	if crdRes := s.lookup(crdGVR); crdRes != nil {
		s.crds = newCRDController(s, crdRes)
	}
	if err := s.setupAuth(); err != nil {
		return nil, err
	}
	s.handler = s.protectMetrics(s.metrics.wrap(s.withFilters(http.HandlerFunc(s.serveHTTP)), cfg.Gatherer, cfg.Clock, cfg.Logger))
	if err := s.setupServices(context.Background()); err != nil {
		return nil, err
	}
	if err := s.ensureSystemNamespaces(context.Background()); err != nil {
		return nil, err
	}
	if err := s.ensureSystemPriorityClasses(context.Background()); err != nil {
		return nil, err
	}
	if err := s.publishExtensionAuthentication(context.Background()); err != nil {
		return nil, err
	}
	if err := s.setupRBAC(context.Background()); err != nil {
		return nil, err
	}
	s.chooseAuthorizer()
	if err := s.setupAdmission(); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureSystemNamespaces creates the namespaces every cluster has.
func (s *Server) ensureSystemNamespaces(ctx context.Context) error {
	ns := s.lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if ns == nil {
		return nil
	}
	for _, name := range systemNamespaces {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := s.createObject(ctx, ns, "", obj, false)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create namespace %s: %w", name, err)
		}
	}
	return nil
}

// Handler returns the server's HTTP handler, usable with httptest.NewServer.
func (s *Server) Handler() http.Handler { return s.handler }

// stopKey carries a channel, closed when Run begins to shut down, in the
// contexts of the requests it serves, so that open watches end promptly.
type stopKey struct{}

// Run serves HTTP on ln until ctx ends, then stops accepting connections,
// ends open watches, waits up to Config.ShutdownTimeout for other requests
// to finish and returns after every handler has returned. It closes ln.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	stop := make(chan struct{})
	base := context.WithValue(context.WithoutCancel(ctx), stopKey{}, (<-chan struct{})(stop))
	var fresh freshconn.Tracker
	srv := &http.Server{
		ConnState:         fresh.ConnState,
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	ctrlCtx, stopControllers := context.WithCancel(ctx)
	var ctrlWG sync.WaitGroup
	ctrlWG.Go(func() { _ = s.RunControllers(ctrlCtx) })
	ctrlWG.Go(func() { s.repairServiceAllocations(ctrlCtx) })
	defer ctrlWG.Wait()
	defer stopControllers()
	errc := make(chan error, 1)
	if s.cfg.TLS != nil {
		srv.TLSConfig = s.cfg.TLS.Clone()
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	s.log.Info("serving", "address", ln.Addr().String())
	s.ensureKubernetesService(ctx, ln.Addr())
	select {
	case err := <-errc:
		return fmt.Errorf("apiserver: serve: %w", err)
	case <-ctx.Done():
	}
	close(stop)
	fresh.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		// Handlers still running past the deadline: cut their connections.
		_ = srv.Close()
	}
	<-errc // Serve returns ErrServerClosed once Shutdown or Close began.
	s.log.Info("stopped")
	if err != nil {
		return fmt.Errorf("apiserver: shutdown: %w", err)
	}
	return nil
}

// stopping returns the channel closed when the serving Run shuts down, or
// nil when the request is not served by Run.
func stopping(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(stopKey{}).(<-chan struct{})
	return ch
}

func defaultVersion() *version.Info {
	return &version.Info{
		Major:        "1",
		Minor:        "37",
		GitVersion:   "v1.37.2+kplane",
		GitTreeState: "clean",
		GoVersion:    goVersion(),
		Compiler:     goCompiler(),
		Platform:     goPlatform(),
	}
}

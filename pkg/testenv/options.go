package testenv

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/featuregate"
)

// Option configures Start.
type Option func(*options)

// options are what the Options set.
type options struct {
	crds        []*apiextensionsv1.CustomResourceDefinition
	crdPaths    []string
	objects     []runtime.Object
	dirs        []string
	tls         bool
	rbac        bool
	controllers []namedController
	logger      *slog.Logger
	waitTimeout time.Duration
	gates       featuregate.Gates
	// webhooks, webhookPaths and webhookHandler are WithWebhooks'.
	webhooks       []runtime.Object
	webhookPaths   []string
	webhookHandler http.Handler
	// enable and disable are WithAdmissionPlugins'.
	enable, disable []string
}

// Controller is work that runs inside an environment for its whole life,
// such as a controller's Run. It gets the environment (its Client and
// REST settings) and a context that is cancelled when the environment
// stops; it must return soon after. Returning early is allowed; returning
// an error other than the context's own fails the test (t.Errorf) at once.
type Controller func(ctx context.Context, env *Env) error

type namedController struct {
	name string
	run  Controller
}

// WithObjects creates objs when the environment starts, before any
// controller runs. Each is a typed object of a served resource, such as a
// *corev1.ConfigMap (apiVersion and kind may be left empty), in the
// namespace its metadata names ("default" when empty; namespaces are
// created first). A status given for a resource with a status subresource
// is written too. The objects are not modified.
func WithObjects(objs ...runtime.Object) Option {
	return func(o *options) { o.objects = append(o.objects, objs...) }
}

// WithObjectsFromDir creates, when the environment starts, the objects of
// every .yaml, .yml and .json file under dir, as WithObjects does. A file
// may hold several documents separated by "---" lines, each one object
// with apiVersion and kind, or a List whose items are objects.
func WithObjectsFromDir(dir string) Option {
	return func(o *options) { o.dirs = append(o.dirs, dir) }
}

// WithTLS serves HTTPS with certificates from a CA made for this
// environment alone when on is true; the default is plain HTTP. Either way
// the server listens on a loopback address only.
func WithTLS(on bool) Option {
	return func(o *options) { o.tls = on }
}

// WithController runs c in its own goroutine once the environment has
// started and its objects are created. Any number may be given; they run
// concurrently. At teardown their context is cancelled and Stop waits for
// them to return (failing the test if one takes longer than a minute)
// before it stops the server. name identifies c in failures.
func WithController(name string, c Controller) Option {
	return func(o *options) { o.controllers = append(o.controllers, namedController{name, c}) }
}

// WithAdmissionPlugins enables and disables admission plugins (by
// kube-apiserver's names, see package admission) on top of the
// environment's defaults: kube-apiserver's, except ServiceAccount, which
// envtest disables too because no controller creates the default
// ServiceAccounts pods would need.
func WithAdmissionPlugins(enable, disable []string) Option {
	return func(o *options) {
		o.enable = append(o.enable, enable...)
		o.disable = append(o.disable, disable...)
	}
}

// WithLogger receives the API server's logs. Default: discarded.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithWaitTimeout sets how long WaitFor waits by default. Default 30s, or
// less when the test's deadline is nearer.
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) { o.waitTimeout = d }
}

// WithFeatureGates sets Env.FeatureGates, the feature gates the
// environment's components run with; controllers pass them on to what
// they start (build them with featuregatetest.New). The API server takes
// no gates yet, so they do not change how it serves. Default: gates that
// know no feature, so every feature is off.
func WithFeatureGates(g featuregate.Gates) Option {
	return func(o *options) { o.gates = g }
}

package testenv

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
)

// WebhookServer is where an environment's webhook configurations send
// their admission reviews: https://Host:Port on loopback, verified with
// the environment's own CA. Serve the webhooks there yourself (such as
// controller-runtime's webhook server with Host, Port and CertDir), or
// give WithWebhookHandler and the environment serves them.
type WebhookServer struct {
	Host string
	Port int
	// CertDir holds tls.crt and tls.key, a serving certificate for
	// 127.0.0.1, ::1 and localhost (the names controller-runtime's
	// webhook server reads by default).
	CertDir string
	// CAData is the PEM CA certificate the configurations trust.
	CAData []byte
	// TLS serves with that certificate.
	TLS *tls.Config
}

// URL returns the webhook server's URL for path.
func (w *WebhookServer) URL(path string) string {
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(w.Host, fmt.Sprint(w.Port)), Path: path}).String()
}

// WithWebhooks installs webhook configurations (typed
// *admissionregistrationv1.MutatingWebhookConfiguration and
// *ValidatingWebhookConfiguration) once the environment's other objects
// are created, as envtest's WebhookInstallOptions does: the clientConfig of
// every webhook is rewritten to the environment's WebhookServer (the path
// of its service, or of its url, is kept) with the environment's CA as
// caBundle. Start returns once the API server applies them. The objects
// are not modified.
func WithWebhooks(configs ...runtime.Object) Option {
	return func(o *options) { o.webhooks = append(o.webhooks, configs...) }
}

// WithWebhooksFromDir is WithWebhooks for the webhook configurations in
// the .yaml, .yml and .json files under each path (a file or a
// directory); documents of other kinds are skipped, as envtest does.
func WithWebhooksFromDir(paths ...string) Option {
	return func(o *options) { o.webhookPaths = append(o.webhookPaths, paths...) }
}

// WithWebhookHandler serves h on the environment's WebhookServer for the
// environment's whole life, such as an http.ServeMux of admission review
// handlers.
func WithWebhookHandler(h http.Handler) Option {
	return func(o *options) { o.webhookHandler = h }
}

// setupWebhooks makes the webhook server's certificates and port, and
// serves the handler when there is one; it returns the configurations to
// install.
func (e *Env) setupWebhooks(o options) ([]runtime.Object, error) {
	configs := append([]runtime.Object(nil), o.webhooks...)
	for _, p := range o.webhookPaths {
		fromFiles, err := readWebhooks(p)
		if err != nil {
			return nil, err
		}
		configs = append(configs, fromFiles...)
	}
	if len(configs) == 0 && o.webhookHandler == nil {
		return nil, nil
	}
	c, err := newCerts(time.Now())
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kplane-testenv-webhook-")
	if err != nil {
		return nil, fmt.Errorf("testenv: webhook certificates: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), c.serverCertPEM, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: webhook certificates: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), c.serverKeyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: webhook certificates: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testenv: webhook port: %w", err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c.server}}
	e.Webhook = &WebhookServer{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, CertDir: dir, CAData: c.caPEM, TLS: tlsConfig}
	if o.webhookHandler == nil {
		// The test serves the webhooks on the port: free it, as envtest does.
		_ = ln.Close()
		return configs, nil
	}
	hs := &http.Server{Handler: o.webhookHandler, TLSConfig: tlsConfig.Clone(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.ServeTLS(ln, "", "")
	}()
	e.cleanups = append(e.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		<-done
	})
	return configs, nil
}

// installWebhooks creates the configurations pointed at the webhook
// server and waits until srv's admission applies them.
func (e *Env) installWebhooks(ctx context.Context, srv *apiserver.Server, configs []runtime.Object) error {
	ca := e.Webhook.CAData
	rewrite := func(cc *admissionregistrationv1.WebhookClientConfig) error {
		path := ""
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			path = *cc.Service.Path
		case cc.URL != nil:
			u, err := url.Parse(*cc.URL)
			if err != nil {
				return fmt.Errorf("webhook url %q: %w", *cc.URL, err)
			}
			path = u.Path
		}
		to := e.Webhook.URL(path)
		*cc = admissionregistrationv1.WebhookClientConfig{URL: &to, CABundle: append([]byte(nil), ca...)}
		return nil
	}
	for _, obj := range configs {
		var err error
		var created metav1.Object
		switch cfg := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			cfg = cfg.DeepCopy()
			for i := range cfg.Webhooks {
				if err := rewrite(&cfg.Webhooks[i].ClientConfig); err != nil {
					return fmt.Errorf("testenv: %s: %w", cfg.Name, err)
				}
			}
			created, err = client.NewResource(e.Client, client.MutatingWebhookConfigurations).Create(ctx, cfg, metav1.CreateOptions{})
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			cfg = cfg.DeepCopy()
			for i := range cfg.Webhooks {
				if err := rewrite(&cfg.Webhooks[i].ClientConfig); err != nil {
					return fmt.Errorf("testenv: %s: %w", cfg.Name, err)
				}
			}
			created, err = client.NewResource(e.Client, client.ValidatingWebhookConfigurations).Create(ctx, cfg, metav1.CreateOptions{})
		default:
			return fmt.Errorf("testenv: WithWebhooks takes webhook configurations, not %T", obj)
		}
		if err != nil {
			return fmt.Errorf("testenv: install webhooks: %w", err)
		}
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
		if _, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
			gvr = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
		}
		if err := srv.WaitForAdmission(ctx, gvr, created.GetResourceVersion()); err != nil {
			return fmt.Errorf("testenv: wait for webhooks: %w", err)
		}
	}
	return nil
}

// readWebhooks reads the webhook configurations of path.
func readWebhooks(root string) ([]runtime.Object, error) {
	var out []runtime.Object
	err := walkManifests(root, func(p string, data []byte) error {
		for i, doc := range splitYAML(data) {
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return fmt.Errorf("%s, document %d: %w", p, i+1, err)
			}
			var tm metav1.TypeMeta
			if s := strings.TrimSpace(string(js)); s == "" || s == "null" {
				continue
			}
			if err := json.Unmarshal(js, &tm); err != nil {
				return fmt.Errorf("%s, document %d: not an object: %w", p, i+1, err)
			}
			if tm.APIVersion != admissionregistrationv1.SchemeGroupVersion.String() {
				continue
			}
			var obj runtime.Object
			switch tm.Kind {
			case "MutatingWebhookConfiguration":
				obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
			case "ValidatingWebhookConfiguration":
				obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			default:
				continue
			}
			if err := json.Unmarshal(js, obj); err != nil {
				return fmt.Errorf("%s, document %d: %w", p, i+1, err)
			}
			out = append(out, obj)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: read webhooks from %s: %w", root, err)
	}
	if len(out) == 0 {
		return nil, errors.New("testenv: read webhooks from " + root + ": no webhook configuration found")
	}
	return out, nil
}

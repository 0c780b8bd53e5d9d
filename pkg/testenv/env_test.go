package testenv

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/featuregate/featuregatetest"
)

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// checkServes writes and reads an object through c.
func checkServes(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	cms := client.NewResource(c, client.ConfigMaps)
	if _, err := cms.Create(ctx, configMap("default", "probe", map[string]string{"k": "v"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := cms.Namespace("default").Get(ctx, "probe", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %v, %v", got, err)
	}
	if err := cms.Namespace("default").Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func TestStartPlainHTTP(t *testing.T) {
	env := Start(t)
	if !strings.HasPrefix(env.URL, "http://127.0.0.1:") || env.REST.Host != env.URL {
		t.Errorf("URL %q, REST.Host %q: want the same http://127.0.0.1 URL", env.URL, env.REST.Host)
	}
	if len(env.REST.CAData) != 0 || len(env.REST.CertData) != 0 || env.REST.BearerToken == "" {
		t.Errorf("REST = %+v: want no TLS material and a token", env.REST)
	}
	checkServes(t, env.Client)

	// The kubeconfig, file and bytes, reaches the same server.
	data, err := os.ReadFile(env.KubeconfigPath)
	if err != nil || string(data) != string(env.Kubeconfig) {
		t.Fatalf("kubeconfig file: %v; equal to Kubeconfig: %v", err, string(data) == string(env.Kubeconfig))
	}
	kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: env.KubeconfigPath})
	if err != nil {
		t.Fatal(err)
	}
	if kc.Config.Host != env.URL || kc.Config.BearerToken != env.REST.BearerToken || kc.Namespace != "default" {
		t.Errorf("kubeconfig: host %q token %q namespace %q", kc.Config.Host, kc.Config.BearerToken, kc.Namespace)
	}
	c, err := client.New(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	checkServes(t, c)
	c.CloseIdleConnections()

	// The system namespaces exist, as in a cluster.
	if _, err := client.NewResource(env.Client, client.Namespaces).Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system: %v", err)
	}
}

func TestStartTLS(t *testing.T) {
	env := Start(t, WithTLS(true))
	if !strings.HasPrefix(env.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %q, want https://127.0.0.1", env.URL)
	}
	checkServes(t, env.Client)

	kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: env.KubeconfigPath})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	checkServes(t, c)
	c.CloseIdleConnections()

	// Only the environment's CA vouches for the server: a client that
	// trusts another environment's CA is refused by its own TLS check.
	other := Start(t, WithTLS(true))
	wrong := env.REST
	wrong.CAData = other.REST.CAData
	wrong.CertData, wrong.KeyData = nil, nil
	c, err = client.New(wrong.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.NewResource(c, client.ConfigMaps).List(context.Background(), metav1.ListOptions{})
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("list trusting another CA: %v, want an unknown authority error", err)
	}
	c.CloseIdleConnections()

	// A client certificate from another CA is refused by the server.
	foreign := env.REST
	foreign.CertData, foreign.KeyData = other.REST.CertData, other.REST.KeyData
	c, err = client.New(foreign.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err = client.NewResource(c, client.ConfigMaps).List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("list with a client certificate from another CA succeeded")
	}
	c.CloseIdleConnections()

	// Plain HTTP is not served.
	req, _ := http.NewRequest(http.MethodGet, "http://"+strings.TrimPrefix(env.URL, "https://")+"/version", nil)
	hc := &http.Client{}
	if resp, err := hc.Do(req); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP /version answered 200 on the TLS port")
		}
		_ = resp.Body.Close()
	}
	hc.CloseIdleConnections()
}

// TestEnvironmentsAreIsolated checks that two environments share nothing.
func TestEnvironmentsAreIsolated(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.URL == b.URL || a.REST.BearerToken == b.REST.BearerToken || a.KubeconfigPath == b.KubeconfigPath {
		t.Fatalf("environments share a URL, token or kubeconfig: %s %s", a.URL, b.URL)
	}
	ctx := context.Background()
	if _, err := client.NewResource(a.Client, client.ConfigMaps).Create(ctx, configMap("default", "only-in-a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := client.NewResource(b.Client, client.ConfigMaps).Namespace("default").Get(ctx, "only-in-a", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("b sees a's object: %v", err)
	}
}

func TestStopIsIdempotentAndEndsWatches(t *testing.T) {
	env := Start(t)
	w, err := client.NewResource(env.Client, client.ConfigMaps).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env.Stop()
	// The server ended the watch: the channel closes without Stop.
	for range w.ResultChan() {
	}
	w.Stop()
	env.Stop()
	if _, err := client.NewResource(env.Client, client.ConfigMaps).List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("list after Stop succeeded")
	}
}

func TestControllers(t *testing.T) {
	var stopped atomic.Int32
	// mirror copies ConfigMap "default/src" to "default/dst", watch-driven.
	mirror := func(ctx context.Context, env *Env) error {
		defer stopped.Add(1)
		cms := client.NewResource(env.Client, client.ConfigMaps).Namespace("default")
		src, err := Wait(ctx, env.Client, client.ConfigMaps, "default/src", func(*corev1.ConfigMap) bool { return true })
		if err != nil {
			return err
		}
		if _, err := cms.Create(ctx, configMap("default", "dst", src.Data), metav1.CreateOptions{}); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	idle := func(ctx context.Context, env *Env) error {
		defer stopped.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	env := Start(t, WithController("mirror", mirror), WithController("idle", idle))
	if _, err := client.NewResource(env.Client, client.ConfigMaps).Create(context.Background(),
		configMap("default", "src", map[string]string{"a": "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := WaitFor(t, env, client.ConfigMaps, "default/dst", func(cm *corev1.ConfigMap) bool { return true })
	if got.Data["a"] != "1" {
		t.Errorf("mirrored data %v", got.Data)
	}
	if n := stopped.Load(); n != 0 {
		t.Fatalf("%d controllers returned before Stop", n)
	}
	env.Stop()
	if n := stopped.Load(); n != 2 {
		t.Errorf("after Stop %d controllers returned, want 2", n)
	}
}

func TestControllerErrorFailsTest(t *testing.T) {
	rec := newRecorder(t)
	broken := func(ctx context.Context, env *Env) error { return errors.New("cannot sync") }
	fine := func(ctx context.Context, env *Env) error { <-ctx.Done(); return ctx.Err() }
	Start(rec, WithController("broken", broken), WithController("fine", fine))
	rec.runCleanups()
	errs := rec.allErrors()
	if !strings.Contains(errs, `controller "broken": cannot sync`) || strings.Contains(errs, "fine") {
		t.Errorf("errors reported:\n%s\nwant only the broken controller's", errs)
	}
}

func TestDumpOnFailure(t *testing.T) {
	for _, failed := range []bool{false, true} {
		rec := newRecorder(t)
		env := Start(rec, WithObjects(configMap("default", "evidence", map[string]string{"seen": "yes"})))
		if failed {
			rec.Fail()
		}
		env.Stop()
		logs := rec.allLogs()
		if !failed {
			if logs != "" {
				t.Errorf("passing test logged:\n%s", logs)
			}
			continue
		}
		for _, want := range []string{"kind: ConfigMap", "name: evidence", "seen: \"yes\"", "kind: Namespace", "name: kube-system"} {
			if !strings.Contains(logs, want) {
				t.Errorf("dump lacks %q:\n%s", want, logs)
			}
		}
		if strings.Contains(logs, "managedFields") {
			t.Errorf("dump shows managedFields:\n%s", logs)
		}
	}
}

func TestNamespace(t *testing.T) {
	env := Start(t)
	a, b := env.Namespace(t), env.Namespace(t)
	if a == b || !strings.HasPrefix(a, "testnamespace-") {
		t.Fatalf("namespaces %q and %q: want two distinct, prefixed testnamespace-", a, b)
	}
	if _, err := client.NewResource(env.Client, client.ConfigMaps).Create(context.Background(), configMap(a, "x", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("create in %s: %v", a, err)
	}
}

func TestKey(t *testing.T) {
	if got := Key(configMap("ns", "a", nil)); got != "ns/a" {
		t.Errorf("Key = %q, want ns/a", got)
	}
	if got := Key(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}); got != "n" {
		t.Errorf("Key = %q, want n", got)
	}
}

func TestNamespacePrefix(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"TestFoo", "testfoo-"},
		{"TestFoo/sub_case#01", "testfoo-sub-case-01-"},
		{"", "test-"},
		{"/_/", "test-"},
		{"9lives", "test-9lives-"},
		{strings.Repeat("a", 60), strings.Repeat("a", 40) + "-"},
		{strings.Repeat("a", 39) + "/b", strings.Repeat("a", 39) + "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := namespacePrefix(tc.name); got != tc.want {
				t.Errorf("namespacePrefix(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[useTLS], func(t *testing.T) {
			env := Start(t, WithTLS(useTLS))
			list := func(cfg client.Config) error {
				c, err := client.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseIdleConnections()
				_, err = client.NewResource(c, client.Pods).List(context.Background(), metav1.ListOptions{})
				return err
			}
			noToken := env.REST
			noToken.BearerToken = ""
			noToken.CertData, noToken.KeyData = nil, nil
			if err := list(noToken.ClientConfig()); !apierrors.IsUnauthorized(err) {
				t.Errorf("no credentials: %v, want 401 Unauthorized", err)
			}
			badToken := noToken
			badToken.BearerToken = "not-" + env.REST.BearerToken
			if err := list(badToken.ClientConfig()); !apierrors.IsUnauthorized(err) {
				t.Errorf("wrong token: %v, want 401 Unauthorized", err)
			}
			tokenOnly := noToken
			tokenOnly.BearerToken = env.REST.BearerToken
			if err := list(tokenOnly.ClientConfig()); err != nil {
				t.Errorf("token: %v", err)
			}
			if useTLS {
				certOnly := env.REST
				certOnly.BearerToken = ""
				if err := list(certOnly.ClientConfig()); err != nil {
					t.Errorf("client certificate: %v", err)
				}
			}
			// /version is open to everyone, as on a cluster.
			c, err := client.New(noToken.ClientConfig())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(context.Background(), client.Request{Path: "/version"}); err != nil {
				t.Errorf("/version without credentials: %v", err)
			}
			c.CloseIdleConnections()
		})
	}
}

// logRecorder is a slog.Handler that keeps messages.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func TestWithLogger(t *testing.T) {
	logs := &logRecorder{}
	env := Start(t, WithTLS(true), WithLogger(slog.New(logs)))
	// Plain HTTP to the TLS port: the server logs the failed handshake.
	hc := &http.Client{}
	if resp, err := hc.Get("http://" + strings.TrimPrefix(env.URL, "https://") + "/version"); err == nil {
		_ = resp.Body.Close()
	}
	hc.CloseIdleConnections()
	env.Stop() // waits for the connection's goroutine, which logs
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if !strings.Contains(strings.Join(logs.msgs, "\n"), "TLS handshake error") {
		t.Errorf("logger got %q, want a TLS handshake error", logs.msgs)
	}
}

func TestFeatureGates(t *testing.T) {
	specs := map[featuregate.Feature]featuregate.VersionedSpecs{
		"Mirror": {{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 0)}},
	}
	// The controller copies src to dst only when its feature is on.
	var created atomic.Int32
	mirror := func(ctx context.Context, env *Env) error {
		if !env.FeatureGates.Enabled("Mirror") {
			return nil
		}
		src, err := Wait(ctx, env.Client, client.ConfigMaps, "default/src", func(*corev1.ConfigMap) bool { return true })
		if err != nil {
			return err
		}
		_, err = client.NewResource(env.Client, client.ConfigMaps).Create(ctx, configMap("default", "dst", src.Data), metav1.CreateOptions{})
		if err == nil {
			created.Add(1)
		}
		return err
	}
	src := configMap("default", "src", map[string]string{"k": "v"})

	env := Start(t, WithObjects(src), WithController("mirror", mirror),
		WithFeatureGates(featuregatetest.New(t, featuregate.Config{}, specs, map[featuregate.Feature]bool{"Mirror": true})))
	WaitFor(t, env, client.ConfigMaps, "default/dst", func(cm *corev1.ConfigMap) bool { return cm.Data["k"] == "v" })

	off := Start(t, WithObjects(src), WithController("mirror", mirror))
	if off.FeatureGates == nil || off.FeatureGates.Enabled("Mirror") {
		t.Fatalf("default gates %v: want non-nil gates with Mirror off", off.FeatureGates)
	}
	off.Stop() // waits for the controller to return
	if n := created.Load(); n != 1 {
		t.Errorf("the mirror created %d objects, want 1 (gate on) + 0 (gate off)", n)
	}
}

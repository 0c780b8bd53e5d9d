package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// envRESTConfig is how a client-go or controller-runtime user reaches a
// testenv environment: two lines from env.REST.
func envRESTConfig(env *testenv.Env) *rest.Config {
	return &rest.Config{Host: env.REST.Host, BearerToken: env.REST.BearerToken, TLSClientConfig: rest.TLSClientConfig{
		CAData: env.REST.CAData, CertData: env.REST.CertData, KeyData: env.REST.KeyData}}
}

// secretMirror is a controller written with client-go alone, as one
// would for a real cluster: a shared informer feeds a rate-limited work
// queue, and a worker makes, for every ConfigMap labelled mirror=true, a
// Secret of the same name holding the same data.
type secretMirror struct {
	cs    kubernetes.Interface
	queue workqueue.TypedRateLimitingInterface[string]
}

func (m *secretMirror) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(m.cs, 0)
	defer factory.Shutdown()
	cmInformer := factory.Core().V1().ConfigMaps()
	lister := cmInformer.Lister()
	enqueue := func(obj any) {
		if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
			m.queue.Add(key)
		}
	}
	if _, err := cmInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer m.queue.ShutDown()
	if !toolscache.WaitForCacheSync(ctx.Done(), cmInformer.Informer().HasSynced) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for m.processNext(ctx, lister) {
		}
	})
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
	return nil
}

func (m *secretMirror) processNext(ctx context.Context, lister corelisters.ConfigMapLister) bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		m.queue.Forget(key)
		return true
	}
	if err := m.sync(ctx, lister.ConfigMaps(ns), name); err != nil {
		m.queue.AddRateLimited(key)
		return true
	}
	m.queue.Forget(key)
	return true
}

func (m *secretMirror) sync(ctx context.Context, configMaps corelisters.ConfigMapNamespaceLister, name string) error {
	cm, err := configMaps.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || cm.Labels["mirror"] != "true" {
		return err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	secrets := m.cs.CoreV1().Secrets(cm.Namespace)
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: name}, Data: data}, metav1.CreateOptions{})
		return err
	}
	if err != nil || maps.EqualFunc(sec.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return err
	}
	sec.Data = data
	_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	return err
}

// TestTestenvClientGoController runs the client-go controller inside a
// testenv environment, over HTTP and HTTPS, and drives it with a clientset.
func TestTestenvClientGoController(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			t.Parallel()
			runMirror := func(ctx context.Context, env *testenv.Env) error {
				cs, err := kubernetes.NewForConfig(envRESTConfig(env))
				if err != nil {
					return err
				}
				m := &secretMirror{cs: cs, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
				return m.Run(ctx)
			}
			env := testenv.Start(t, testenv.WithTLS(useTLS), testenv.WithController("secret-mirror", runMirror))
			cs, err := kubernetes.NewForConfig(envRESTConfig(env))
			if err != nil {
				t.Fatal(err)
			}
			ns := env.Namespace(t)
			ctx := t.Context()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Labels: map[string]string{"mirror": "true"}},
				Data: map[string]string{"password": "one"}}
			cm, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, env, client.Secrets, ns+"/db", func(s *corev1.Secret) bool { return string(s.Data["password"]) == "one" })
			cm.Data["password"] = "two"
			if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, env, client.Secrets, ns+"/db", func(s *corev1.Secret) bool { return string(s.Data["password"]) == "two" })
		})
	}
}

// TestTestenvKubeconfig loads the environment's kubeconfig, bytes and
// file, with clientcmd.
func TestTestenvKubeconfig(t *testing.T) {
	env := testenv.Start(t, testenv.WithTLS(true))
	fromBytes, err := clientcmd.RESTConfigFromKubeConfig(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := clientcmd.BuildConfigFromFlags("", env.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*rest.Config{"bytes": fromBytes, "file": fromFile} {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Without the environment's credentials the server answers 401.
	anon := rest.AnonymousClientConfig(fromBytes)
	cs, err := kubernetes.NewForConfig(anon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("anonymous list: %v, want Unauthorized", err)
	}
}

// TestTestenvControllerRuntime runs a controller-runtime manager inside a
// testenv environment.
func TestTestenvControllerRuntime(t *testing.T) {
	runManager := func(ctx context.Context, env *testenv.Env) error {
		mgr, err := ctrl.NewManager(envRESTConfig(env), ctrl.Options{
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		if err != nil {
			return err
		}
		err = ctrl.NewControllerManagedBy(mgr).
			For(&appsv1.Deployment{}).
			Named("testenv-annotator").
			// Controller names are process-global in controller-runtime.
			WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				var d appsv1.Deployment
				if err := mgr.GetClient().Get(ctx, req.NamespacedName, &d); err != nil {
					return reconcile.Result{}, crclient.IgnoreNotFound(err)
				}
				if d.Annotations["testenv/replicas"] == fmt.Sprint(*d.Spec.Replicas) {
					return reconcile.Result{}, nil
				}
				patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"testenv/replicas":%q}}}`, fmt.Sprint(*d.Spec.Replicas))
				return reconcile.Result{}, mgr.GetClient().Patch(ctx, &d, crclient.RawPatch(types.MergePatchType, patch))
			}))
		if err != nil {
			return err
		}
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	dep := deploymentWithReplicas("web", 3)
	env := testenv.Start(t, testenv.WithObjects(dep), testenv.WithController("manager", runManager))
	got := testenv.WaitFor(t, env, client.Deployments, "default/web", func(d *appsv1.Deployment) bool {
		return d.Annotations["testenv/replicas"] == "3"
	})
	// Scale through controller-runtime's client; the reconciler follows.
	c, err := crclient.New(envRESTConfig(env), crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Replicas = ptr.To[int32](5)
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Deployments, "default/web", func(d *appsv1.Deployment) bool {
		return d.Annotations["testenv/replicas"] == "5"
	})
}

func deploymentWithReplicas(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
}

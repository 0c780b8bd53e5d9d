package compat

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// contentTypes records the Content-Type of every response a client gets.
type contentTypes struct {
	mu   sync.Mutex
	seen []string // "GET /api/v1/... -> application/..."
}

// wrap is a rest.Config WrapTransport recording into c.
func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil {
			c.mu.Lock()
			c.seen = append(c.seen, r.Method+" "+r.URL.RequestURI()+" -> "+resp.Header.Get("Content-Type"))
			c.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// expectProtobuf fails unless every response recorded, but those of paths
// containing one of except, was protobuf, and there was at least one.
func (c *contentTypes) expectProtobuf(t testing.TB, except ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
next:
	for _, s := range c.seen {
		for _, e := range except {
			if strings.Contains(s, e) {
				continue next
			}
		}
		n++
		if _, ct, _ := strings.Cut(s, " -> "); !strings.HasPrefix(ct, protobufMediaType) {
			t.Errorf("not protobuf: %s", s)
		}
	}
	if n == 0 {
		t.Error("no response recorded")
	}
}

// protobufConfig is s's rest.Config for a client speaking protobuf as
// kube-controller-manager does, recording the responses' Content-Types.
func protobufConfig(s *server, rec *contentTypes) *rest.Config {
	cfg := s.restConfig()
	cfg.ContentType = protobufMediaType
	cfg.AcceptContentTypes = protobufMediaType + ",application/json"
	cfg.WrapTransport = rec.wrap
	return cfg
}

// exerciseProtobufClientset drives a client-go clientset configured by
// cfg through every verb, the status and scale subresources and a watch.
func exerciseProtobufClientset(t *testing.T, cfg *rest.Config) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := pods.Create(ctx, pod("pb", map[string]string{"a": "b"}), metav1.CreateOptions{})
	if err != nil || created.UID == "" || created.Labels["a"] != "b" {
		t.Fatalf("create: %+v, %v", created, err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "pb" {
		t.Fatalf("watch: %s %v", ev.Type, ev.Object)
	}
	got, err := pods.Get(ctx, "pb", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %+v, %v", got, err)
	}
	got.Labels["a"] = "c"
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.Labels["a"] != "c" {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).Labels["a"] != "c" {
		t.Fatalf("watch: %s %v", ev.Type, ev.Object)
	}
	patched, err := pods.Patch(ctx, "pb", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"p":"1"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["p"] != "1" {
		t.Fatalf("patch: %+v, %v", patched, err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "a=c"})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	patched.Status.Message = "protobuf status"
	st, err := pods.UpdateStatus(ctx, patched, metav1.UpdateOptions{})
	if err != nil || st.Status.Message != "protobuf status" {
		t.Fatalf("update status: %+v, %v", st, err)
	}
	if _, err := pods.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: %v, want NotFound", err)
	}
	if _, err := pods.Create(ctx, pod("pb", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create again: %v, want AlreadyExists", err)
	}

	deps := cs.AppsV1().Deployments("default")
	if _, err := deps.Create(ctx, deployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("get scale: %+v, %v", scale, err)
	}
	scale.Spec.Replicas = 3
	if scale, err = deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil || scale.Spec.Replicas != 3 {
		t.Fatalf("update scale: %+v, %v", scale, err)
	}

	if err := pods.Delete(ctx, "pb", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for {
		ev := nextEvent(t, w)
		if ev.Type == watch.Deleted {
			break
		}
		if ev.Type != watch.Modified {
			t.Fatalf("watch: %s %v", ev.Type, ev.Object)
		}
	}
	if err := cs.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
}

// TestProtobufInformersAndMetadataClient syncs a shared informer over
// protobuf, and lists and watches with a metadata client, which asks for
// PartialObjectMetadata(List) in protobuf.
func TestProtobufInformersAndMetadataClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServer(t)
	var rec contentTypes
	cs, err := kubernetes.NewForConfig(protobufConfig(s, &rec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("before", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	lister := factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	syncCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	if _, err := lister.Pods("default").Get("before"); err != nil {
		t.Fatalf("lister after sync: %v", err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("after", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := lister.List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer never saw the new pod: %d pods", len(l))
		}
		time.Sleep(10 * time.Millisecond)
	}

	var mrec contentTypes
	mcfg := s.restConfig()
	mcfg.WrapTransport = mrec.wrap
	mc, err := metadata.NewForConfig(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	ml, err := mc.Resource(podsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(ml.Items) != 2 || ml.Items[0].UID == "" {
		t.Fatalf("metadata list: %+v, %v", ml, err)
	}
	m, err := mc.Resource(podsGVR).Namespace("default").Get(ctx, "after", metav1.GetOptions{})
	if err != nil || m.Name != "after" || m.UID == "" {
		t.Fatalf("metadata get: %+v, %v", m, err)
	}
	mw, err := mc.Resource(podsGVR).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: ml.ResourceVersion})
	if err != nil {
		t.Fatalf("metadata watch: %v", err)
	}
	defer mw.Stop()
	if err := cs.CoreV1().Pods("default").Delete(ctx, "after", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, mw)
		if pm, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok || pm.Name != "after" {
			t.Fatalf("metadata watch event %s %T", ev.Type, ev.Object)
		}
		if ev.Type == watch.Deleted {
			break
		}
	}
	rec.expectProtobuf(t)
	mrec.expectProtobuf(t)
}

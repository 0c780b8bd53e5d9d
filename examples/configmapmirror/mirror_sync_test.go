package configmapmirror

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

// fixture is the sample-controller style test bed: caches pre-filled with
// objects, a writer that records every action, and a recorder that records
// every event.
type fixture struct {
	t          *testing.T
	configMaps *cache.Indexer[*corev1.ConfigMap]
	secrets    *cache.Indexer[*corev1.Secret]
	writer     *fakeWriter
	events     *fakeEvents
	exp        *controller.Expectations
	s          *syncer
	// live is what an uncached read of the ConfigMap returns.
	live map[string]*corev1.ConfigMap
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cms, err := cache.NewIndexer(cache.IndexerConfig[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Secret]{})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := controller.NewExpectations(controller.ExpectationsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, configMaps: cms, secrets: secrets, writer: &fakeWriter{}, events: &fakeEvents{}, exp: exp,
		live: map[string]*corev1.ConfigMap{}}
	f.s = &syncer{
		configMaps: cache.NewLister(cms, schema.GroupResource{Resource: "configmaps"}),
		secrets:    cache.NewLister(secrets, schema.GroupResource{Resource: "secrets"}),
		writer:     f.writer,
		getConfigMap: func(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
			cm, ok := f.live[namespace+"/"+name]
			if !ok {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
			}
			return cm, nil
		},
		recorder:     f.events,
		expectations: exp,
	}
	return f
}

func (f *fixture) addConfigMap(cm *corev1.ConfigMap) {
	f.t.Helper()
	if err := f.configMaps.Add(cm); err != nil {
		f.t.Fatal(err)
	}
	f.live[cm.Namespace+"/"+cm.Name] = cm
}

func (f *fixture) addSecret(s *corev1.Secret) {
	f.t.Helper()
	if err := f.secrets.Add(s); err != nil {
		f.t.Fatal(err)
	}
}

type fakeWriter struct {
	actions []string
	err     error
}

func (w *fakeWriter) Create(_ context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	w.actions = append(w.actions, fmt.Sprintf("create %s/%s data=%q owner=%s", s.Namespace, s.Name, s.Data, metav1.GetControllerOf(s).UID))
	return s, w.err
}

func (w *fakeWriter) Update(_ context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	w.actions = append(w.actions, fmt.Sprintf("update %s/%s data=%q", s.Namespace, s.Name, s.Data))
	return s, w.err
}

func (w *fakeWriter) Delete(_ context.Context, namespace, name string, uid types.UID) error {
	w.actions = append(w.actions, fmt.Sprintf("delete %s/%s uid=%s", namespace, name, uid))
	return w.err
}

func (w *fakeWriter) Patch(_ context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	w.actions = append(w.actions, fmt.Sprintf("patch %s/%s %s", namespace, name, data))
	return w.err
}

type fakeEvents struct{ events []string }

func (e *fakeEvents) Event(obj record.Object, eventType, reason, message string) {
	e.events = append(e.events, fmt.Sprintf("%s %s %s: %s", obj.GetName(), eventType, reason, message))
}

func (e *fakeEvents) Eventf(obj record.Object, eventType, reason, format string, args ...any) {
	e.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func configMap(name string, enabled bool, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("cm-" + name)}, Data: data}
	if enabled {
		cm.Annotations = map[string]string{EnabledAnnotation: "true"}
	}
	return cm
}

func secretFor(cm *corev1.ConfigMap, data map[string]string) *corev1.Secret {
	s := newSecret(cm)
	s.UID = types.UID("secret-" + cm.Name)
	s.Data = nil
	for k, v := range data {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	return s
}

func TestSync(t *testing.T) {
	data := map[string]string{"a": "1"}
	tests := []struct {
		name       string
		cm         *corev1.ConfigMap
		secret     func(cm *corev1.ConfigMap) *corev1.Secret
		key        string
		terminal   bool
		wantAct    []string
		wantEvents []string
	}{
		{
			name:       "creates the mirror",
			cm:         configMap("app", true, data),
			wantAct:    []string{`create ns/app data=map["a":"1"] owner=cm-app`},
			wantEvents: []string{`app Normal MirrorCreated: Created Secret "app"`},
		},
		{
			name: "not annotated: nothing",
			cm:   configMap("app", false, data),
		},
		{
			name:   "in sync: nothing",
			cm:     configMap("app", true, data),
			secret: func(cm *corev1.ConfigMap) *corev1.Secret { return secretFor(cm, data) },
		},
		{
			name:       "stale data is updated",
			cm:         configMap("app", true, map[string]string{"a": "2"}),
			secret:     func(cm *corev1.ConfigMap) *corev1.Secret { return secretFor(cm, data) },
			wantAct:    []string{`update ns/app data=map["a":"2"]`},
			wantEvents: []string{`app Normal MirrorUpdated: Updated Secret "app"`},
		},
		{
			name:   "annotation removed: released",
			cm:     configMap("app", false, data),
			secret: func(cm *corev1.ConfigMap) *corev1.Secret { return secretFor(cm, data) },
			wantAct: []string{
				`patch ns/app {"metadata":{"ownerReferences":[{"$patch":"delete","uid":"cm-app"}],"uid":"secret-app"}}`,
			},
			wantEvents: []string{`app Normal MirrorReleased: Released Secret "app"`},
		},
		{
			name: "labelled orphan is adopted and updated",
			cm:   configMap("app", true, data),
			secret: func(cm *corev1.ConfigMap) *corev1.Secret {
				s := secretFor(cm, nil)
				s.OwnerReferences = nil
				return s
			},
			wantAct: []string{
				`patch ns/app {"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"app","uid":"cm-app","controller":true,"blockOwnerDeletion":true}],"uid":"secret-app"}}`,
				`update ns/app data=map["a":"1"]`,
			},
			wantEvents: []string{`app Normal MirrorUpdated: Updated Secret "app"`},
		},
		{
			name: "unlabelled orphan is someone else's",
			cm:   configMap("app", true, data),
			secret: func(cm *corev1.ConfigMap) *corev1.Secret {
				return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "x"}}
			},
			terminal:   true,
			wantEvents: []string{`app Warning ErrResourceExists: Secret "app" already exists and is not managed by this ConfigMap`},
		},
		{
			name: "controlled by another owner",
			cm:   configMap("app", true, data),
			secret: func(cm *corev1.ConfigMap) *corev1.Secret {
				other := configMap("app", true, nil)
				other.UID = "previous-incarnation"
				return secretFor(other, data)
			},
			terminal:   true,
			wantEvents: []string{`app Warning ErrResourceExists: Secret "app" already exists and is not managed by this ConfigMap`},
		},
		{
			name: "configmap deleted: its secret is deleted",
			key:  "ns/app",
			secret: func(*corev1.ConfigMap) *corev1.Secret {
				return secretFor(configMap("app", true, nil), data)
			},
			wantAct: []string{"delete ns/app uid=secret-app"},
		},
		{
			name: "configmap deleted: an unrelated secret stays",
			key:  "ns/app",
			secret: func(*corev1.ConfigMap) *corev1.Secret {
				return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "x"}}
			},
		},
		{
			name:     "bad key",
			key:      "a/b/c",
			terminal: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			key := tt.key
			if tt.cm != nil {
				f.addConfigMap(tt.cm)
				key = tt.cm.Namespace + "/" + tt.cm.Name
			}
			if tt.secret != nil {
				f.addSecret(tt.secret(tt.cm))
			}
			err := f.s.sync(t.Context(), key)
			if tt.terminal {
				if !controller.IsTerminal(err) {
					t.Fatalf("sync = %v, want a terminal error", err)
				}
			} else if err != nil {
				t.Fatalf("sync = %v", err)
			}
			if diff := cmp.Diff(tt.wantAct, f.writer.actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, f.events.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncExpectations: after a create, a second sync before the informer
// has seen the Secret does not create again; once it is observed, syncing
// resumes.
func TestSyncExpectations(t *testing.T) {
	f := newFixture(t)
	cm := configMap("app", true, map[string]string{"a": "1"})
	f.addConfigMap(cm)
	for range 2 {
		if err := f.s.sync(t.Context(), "ns/app"); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.writer.actions) != 1 {
		t.Fatalf("actions = %v, want one create", f.writer.actions)
	}
	f.exp.CreationObserved("ns/app")
	if err := f.s.sync(t.Context(), "ns/app"); err != nil {
		t.Fatal(err)
	}
	if len(f.writer.actions) != 2 {
		t.Fatalf("actions = %v, want a second create once the first was observed (cache still empty)", f.writer.actions)
	}
}

// TestSyncCreateFailure: a failed create lowers the expectation so the
// retry is not held back, and the error is returned for a retry.
func TestSyncCreateFailure(t *testing.T) {
	f := newFixture(t)
	f.addConfigMap(configMap("app", true, nil))
	f.writer.err = apierrors.NewServiceUnavailable("busy")
	err := f.s.sync(t.Context(), "ns/app")
	if !apierrors.IsServiceUnavailable(err) || controller.IsTerminal(err) {
		t.Fatalf("sync = %v, want the retryable create error", err)
	}
	if !f.exp.SatisfiedExpectations("ns/app") {
		t.Fatal("failed create left an expectation")
	}
	f.writer.err = apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "app")
	if err := f.s.sync(t.Context(), "ns/app"); err != nil {
		t.Fatalf("AlreadyExists should wait for the informer, got %v", err)
	}
}

// TestSyncAdoptionNeedsLiveOwner: a ConfigMap that is gone from the API
// server (though still in the cache) adopts nothing.
func TestSyncAdoptionNeedsLiveOwner(t *testing.T) {
	f := newFixture(t)
	cm := configMap("app", true, nil)
	f.addConfigMap(cm)
	delete(f.live, "ns/app")
	s := secretFor(cm, nil)
	s.OwnerReferences = nil
	f.addSecret(s)
	err := f.s.sync(t.Context(), "ns/app")
	if err == nil || controller.IsTerminal(err) {
		t.Fatalf("sync = %v, want a retryable error", err)
	}
	if len(f.writer.actions) != 0 {
		t.Fatalf("actions = %v, want none", f.writer.actions)
	}
}

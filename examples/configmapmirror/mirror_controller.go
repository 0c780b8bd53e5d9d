package configmapmirror

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/workqueue"
)

var errNoClient = errors.New("configmapmirror: client is required")

// Name is the controller's name in logs, metrics and events.
const Name = "configmap-mirror"

// Config configures New.
type Config struct {
	// Client talks to the API server. Required.
	Client *client.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics defaults to none.
	Metrics controller.Metrics
}

// Controller mirrors annotated ConfigMaps into Secrets; see the package
// documentation. Run it once.
type Controller struct {
	configMaps *cache.SharedIndexInformer[*corev1.ConfigMap]
	secrets    *cache.SharedIndexInformer[*corev1.Secret]
	recorder   *record.Recorder
	ctrl       *controller.Controller
	syncer     *syncer
}

// New builds the informers, queue, recorder and workers; it starts nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errNoClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cmClient := client.NewResource(cfg.Client, client.ConfigMaps)
	secretClient := client.NewResource(cfg.Client, client.Secrets)

	configMaps, err := cache.NewSharedIndexInformer(cache.InformerConfig[*corev1.ConfigMap]{
		Name: "configmaps", ListerWatcher: cmClient, Resource: client.ConfigMaps.GroupResource(), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	secrets, err := cache.NewSharedIndexInformer(cache.InformerConfig[*corev1.Secret]{
		Name: "secrets", ListerWatcher: secretClient, Resource: client.Secrets.GroupResource(), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	recorder, err := record.New(record.Config{
		Sink:      record.ClientSink{Events: client.NewResource(cfg.Client, client.Events)},
		Component: Name,
		Logger:    cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	expectations, err := controller.NewExpectations(controller.ExpectationsConfig{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	queue, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: Name}})
	if err != nil {
		return nil, err
	}
	s := &syncer{
		configMaps: configMaps.Lister(),
		secrets:    secrets.Lister(),
		writer:     secretAPI{secretClient},
		getConfigMap: func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
			return cmClient.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		recorder:     recorder,
		expectations: expectations,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"configmaps": configMaps.HasSynced, "secrets": secrets.HasSynced},
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}

	if _, err := configMaps.AddEventHandler(controller.EnqueueHandler[*corev1.ConfigMap](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	// A Secret's key is the key of the ConfigMap of the same name, whoever
	// owns it: a foreign Secret going away, an orphan appearing and our own
	// mirror changing all matter to that ConfigMap.
	sameName := controller.EnqueueHandler[*corev1.Secret](ctrl)
	if _, err := secrets.AddEventHandler(cache.HandlerFuncs[*corev1.Secret]{
		AddFunc: func(secret *corev1.Secret, initial bool) {
			if ref := metav1.GetControllerOf(secret); ref != nil && ref.Kind == configMapKind.Kind {
				expectations.CreationObserved(secret.Namespace + "/" + ref.Name)
			}
			sameName.OnAdd(secret, initial)
		},
		UpdateFunc: sameName.OnUpdate,
		DeleteFunc: sameName.OnDelete,
	}, cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	return &Controller{configMaps: configMaps, secrets: secrets, recorder: recorder, ctrl: ctrl, syncer: s}, nil
}

// Run starts the informers, the event recorder and workers workers, and
// blocks until ctx ends; it returns after every goroutine it started has
// exited.
func (c *Controller) Run(ctx context.Context, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.configMaps.Run(ctx) })
	wg.Go(func() { c.secrets.Run(ctx) })
	wg.Go(func() { _ = c.recorder.Run(ctx) })
	err := c.ctrl.Run(ctx, workers)
	cancel()
	wg.Wait()
	return err
}

// secretAPI adapts the typed Secret client to secretWriter.
type secretAPI struct {
	c *client.ResourceClient[*corev1.Secret]
}

func (a secretAPI) Create(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	return a.c.Namespace(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
}

func (a secretAPI) Update(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	return a.c.Namespace(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
}

func (a secretAPI) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.c.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (a secretAPI) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	_, err := a.c.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
	return err
}

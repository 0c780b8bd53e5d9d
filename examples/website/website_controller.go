package website

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/workqueue"
)

var errNoClient = errors.New("website: client is required")

// Name is the controller's name in logs, metrics and events.
const Name = "website-operator"

// Config configures New.
type Config struct {
	// Client talks to the API server. Required.
	Client *client.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics defaults to none.
	Metrics controller.Metrics
	// Clock stamps conditions. Defaults to the real clock.
	Clock clock.PassiveClock
}

// Controller keeps a Deployment for every Website; see the package
// documentation. Run it once.
type Controller struct {
	websites    *cache.SharedIndexInformer[*Website]
	deployments *cache.SharedIndexInformer[*appsv1.Deployment]
	recorder    *record.Recorder
	ctrl        *controller.Controller
}

// New builds the informers, queue, recorder and workers; it starts nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errNoClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	siteClient := client.NewResource(cfg.Client, Websites)
	deployClient := client.NewResource(cfg.Client, client.Deployments)

	websites, err := cache.NewSharedIndexInformer(cache.InformerConfig[*Website]{
		Name: "websites", ListerWatcher: siteClient, Resource: Websites.GroupResource(), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	deployments, err := cache.NewSharedIndexInformer(cache.InformerConfig[*appsv1.Deployment]{
		Name: "deployments", ListerWatcher: deployClient, Resource: client.Deployments.GroupResource(), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	scheme, err := eventScheme()
	if err != nil {
		return nil, err
	}
	recorder, err := record.New(record.Config{
		Sink:      record.ClientSink{Events: client.NewResource(cfg.Client, client.Events)},
		Component: Name,
		Scheme:    scheme,
		Logger:    cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	queue, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: Name}})
	if err != nil {
		return nil, err
	}
	s := &syncer{
		websites:    websites.Lister(),
		deployments: deployments.Lister(),
		api:         clientAPI{sites: siteClient, deployments: deployClient},
		recorder:    recorder,
		clock:       cfg.Clock,
	}
	ctrl, err := controller.New(controller.Config{
		Name:        Name,
		Queue:       queue,
		SyncHandler: s.sync,
		CacheSyncs:  map[string]controller.InformerSynced{"websites": websites.HasSynced, "deployments": deployments.HasSynced},
		Logger:      cfg.Logger,
		Metrics:     cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}
	if _, err := websites.AddEventHandler(controller.EnqueueHandler[*Website](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	// A Deployment's changes (its status above all) and its deletion
	// matter to the Website controlling it.
	if _, err := deployments.AddEventHandler(controller.EnqueueOwnerHandler[*appsv1.Deployment](ctrl, websiteKind), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	return &Controller{websites: websites, deployments: deployments, recorder: recorder, ctrl: ctrl}, nil
}

// Run starts the informers, the event recorder and workers workers, and
// blocks until ctx ends; it returns after every goroutine it started has
// exited.
func (c *Controller) Run(ctx context.Context, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.websites.Run(ctx) })
	wg.Go(func() { c.deployments.Run(ctx) })
	wg.Go(func() { _ = c.recorder.Run(ctx) })
	err := c.ctrl.Run(ctx, workers)
	cancel()
	wg.Wait()
	return err
}

// eventScheme knows the kinds events are recorded about: Websites, and
// the built-in kinds the recorder knows by default.
func eventScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// clientAPI adapts the typed clients to api.
type clientAPI struct {
	sites       *client.ResourceClient[*Website]
	deployments *client.ResourceClient[*appsv1.Deployment]
}

var _ api = clientAPI{}

func (a clientAPI) CreateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.deployments.Namespace(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
}

func (a clientAPI) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.deployments.Namespace(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
}

func (a clientAPI) DeleteDeployment(ctx context.Context, namespace, name string, uid types.UID) error {
	// Background: the Deployment goes at once and the garbage collector
	// (kplane's or a cluster's) removes its ReplicaSets and pods after.
	background := metav1.DeletePropagationBackground
	return a.deployments.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background,
	})
}

func (a clientAPI) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return a.deployments.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateWebsite(ctx context.Context, w *Website) (*Website, error) {
	return a.sites.Namespace(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
}

func (a clientAPI) UpdateWebsiteStatus(ctx context.Context, w *Website) (*Website, error) {
	return a.sites.Namespace(w.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{})
}

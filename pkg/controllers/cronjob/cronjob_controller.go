package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/internal/wakeup"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/workqueue"
)

// Name is the controller's name in logs, metrics and events.
const Name = "cronjob-controller"

// cronJobKind is written into the ownerReferences of the Jobs.
var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// EventRecorder records Events about CronJobs; *record.Recorder is one.
// Implementations must be safe for concurrent use and must not block.
type EventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
}

// Config configures New.
type Config struct {
	// Client writes Jobs and CronJob status. Required.
	Client *client.Client
	// Informers provides the CronJob and Job informers. Required; not
	// started by the controller.
	Informers *informers.Factory
	// Recorder receives the controller's Events. Defaults to dropping them.
	Recorder EventRecorder
	// Clock decides which start times are due and paces requeues. Defaults
	// to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the worker loop's measurements. Defaults to none.
	Metrics controller.Metrics
	// NewQueue builds the work queue, given the name "cronjob". Nil keeps
	// a workqueue.RateLimitingQueue on the real clock.
	NewQueue func(name string) (workqueue.RateLimitingInterface[string], error)
}

// Controller is the CronJob controller. Run it once.
type Controller struct {
	cronJobInformer *cache.SharedIndexInformer[*batchv1.CronJob]
	jobInformer     *cache.SharedIndexInformer[*batchv1.Job]
	ctrl            *controller.Controller
	wakeups         *wakeup.Delayer
}

// New builds the controller and registers its informer handlers; it starts
// nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil {
		return nil, errors.New("cronjob: client and informers are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = discardRecorder{}
	}
	if cfg.NewQueue == nil {
		cfg.NewQueue = func(name string) (workqueue.RateLimitingInterface[string], error) {
			return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: name}})
		}
	}
	cjInf, err := cfg.Informers.CronJobs()
	if err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	jobInf, err := cfg.Informers.Jobs()
	if err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	queue, err := cfg.NewQueue("cronjob")
	if err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	api := clientAPI{jobs: client.NewResource(cfg.Client, client.Jobs), cronJobs: client.NewResource(cfg.Client, client.CronJobs)}
	s := &syncer{
		cronJobLister: cjInf.Lister(), jobLister: jobInf.Lister(),
		jobs: api, cronJobs: api, recorder: cfg.Recorder, clock: cfg.Clock,
	}
	ctrl, err := controller.New(controller.Config{
		Name: Name, Queue: queue, SyncHandler: s.sync,
		CacheSyncs: map[string]controller.InformerSynced{"cronjobs": cjInf.HasSynced, "jobs": jobInf.HasSynced},
		Clock:      cfg.Clock, Logger: cfg.Logger, Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	c := &Controller{cronJobInformer: cjInf, jobInformer: jobInf, ctrl: ctrl}
	c.wakeups = wakeup.New(cfg.Clock, ctrl.EnqueueKey)
	s.enqueueAfter = c.wakeups.After
	if _, err := cjInf.AddEventHandler(cache.HandlerFuncs[*batchv1.CronJob]{
		AddFunc: func(cj *batchv1.CronJob, _ bool) { ctrl.Enqueue(cj) },
		UpdateFunc: func(old, cj *batchv1.CronJob) {
			if old.Spec.Schedule != cj.Spec.Schedule || ptr.Deref(old.Spec.TimeZone, "") != ptr.Deref(cj.Spec.TimeZone, "") {
				// The pending wake-up was for the old schedule.
				c.wakeups.Forget(keyOf(cj))
			}
			ctrl.Enqueue(cj)
		},
		DeleteFunc: func(obj any) {
			if cj, err := cache.Unwrap[*batchv1.CronJob](obj); err == nil {
				c.wakeups.Forget(keyOf(cj))
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	if _, err := jobInf.AddEventHandler(controller.EnqueueOwnerHandler[*batchv1.Job](ctrl, cronJobKind), cache.HandlerOptions{}); err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	return c, nil
}

// Run waits for the CronJob and Job caches, runs workers workers until ctx
// ends and returns once they have exited.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.wakeups.Stop()
	if !cache.WaitForCacheSync(ctx, c.cronJobInformer.HasSynced, c.jobInformer.HasSynced) {
		return fmt.Errorf("cronjob: caches did not sync: %w", context.Cause(ctx))
	}
	return c.ctrl.Run(ctx, workers)
}

func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

type discardRecorder struct{}

func (discardRecorder) Event(record.Object, string, string, string) {}

// clientAPI adapts the typed clients to jobWriter and cronJobWriter.
type clientAPI struct {
	jobs     *client.ResourceClient[*batchv1.Job]
	cronJobs *client.ResourceClient[*batchv1.CronJob]
}

func (a clientAPI) CreateJob(ctx context.Context, j *batchv1.Job) (*batchv1.Job, error) {
	return a.jobs.Namespace(j.Namespace).Create(ctx, j, metav1.CreateOptions{})
}

func (a clientAPI) GetJob(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return a.jobs.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) DeleteJob(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.jobs.Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
}

func (a clientAPI) GetCronJob(ctx context.Context, namespace, name string) (*batchv1.CronJob, error) {
	return a.cronJobs.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) UpdateStatus(ctx context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error) {
	return a.cronJobs.Namespace(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{})
}

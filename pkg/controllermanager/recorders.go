package controllermanager

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
)

// eventScheme knows the kinds the controllers record events about.
func eventScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// recorder returns an event recorder writing through the manager's
// client as component (kube-controller-manager's names, such as
// "job-controller"), on the manager's clock. withRecorder runs it.
func (d deps) recorder(component string) (*record.Recorder, error) {
	scheme, err := eventScheme()
	if err != nil {
		return nil, err
	}
	return record.New(record.Config{
		Sink:      record.ClientSink{Events: client.NewResource(d.cfg.Client, client.Events)},
		Component: component,
		Scheme:    scheme,
		Clock:     d.cfg.Clock,
	})
}

// withRecorder runs r with the recorder it records events through: the
// recorder runs while r does and stops after it.
func withRecorder(r runner, rec *record.Recorder, err error) (runner, error) {
	if err != nil || r == nil {
		return nil, err
	}
	return recorded{runner: r, rec: rec}, nil
}

// recorded is a controller and its event recorder.
type recorded struct {
	runner
	rec *record.Recorder
}

// Run runs the controller and, until it returns, its recorder.
func (r recorded) Run(ctx context.Context, workers int) error {
	recCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.rec.Run(recCtx) })
	err := r.runner.Run(ctx, workers)
	cancel()
	wg.Wait()
	return err
}

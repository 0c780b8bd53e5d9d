package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
)

// benchTracker follows the bench namespace's pods, ReplicaSets and
// Deployment through watches and times a phase's milestones by the
// arrival of the events that reach them. It is safe for concurrent use:
// Run feeds it, begin and progress are called by the driver.
type benchTracker struct {
	replicas int

	mu sync.Mutex
	// pods, replicaSets and deployments are the objects the watches
	// reported last, by name; deleted objects are removed.
	pods        map[string]*corev1.Pod
	replicaSets map[string]*appsv1.ReplicaSet
	deployments map[string]*appsv1.Deployment
	// phase is the phase being timed; nil between phases.
	phase *benchPhase
	// err is why the watches stopped before Run's ctx ended.
	err error
	// failed is closed when err is set.
	failed chan struct{}
}

// benchPhase is one timed phase: its milestones, in the order they are
// printed, and when each was first reached.
type benchPhase struct {
	name  string
	start time.Time
	// image is the image of the pods the phase wants; the ReplicaSet
	// whose template has it is the "new" one.
	image      string
	milestones []benchMilestone
	// reached holds the time since start each milestone was first seen
	// true, by name.
	reached map[string]time.Duration
	// done is closed when every milestone is reached.
	done chan struct{}
}

// benchMilestone is a state the phase waits for.
type benchMilestone struct {
	name  string
	label string
	ok    func(s benchSummary) bool
}

// benchSummary counts what the watches show, for the milestones.
type benchSummary struct {
	replicas int
	// pods is the number of pods; scheduled, ready of them have a node,
	// are Running and Ready.
	pods, scheduled, ready int
	// newPods and oldPods are the pods of the new ReplicaSet (by their
	// pod-template-hash) and the rest; newReady are Running and Ready.
	newPods, newReady, oldPods int
	replicaSets                int
	// newRS is whether a ReplicaSet with the phase's image exists,
	// newRSAvailable its status.availableReplicas; oldRSActive counts the
	// other ReplicaSets whose spec or status replicas are not yet 0.
	newRS          bool
	newRSAvailable int
	oldRSActive    int
	deployments    int
	// available is whether the Deployment reports all replicas available
	// and updated for its current generation.
	available bool
}

func newBenchTracker(replicas int) *benchTracker {
	return &benchTracker{
		replicas:    replicas,
		pods:        map[string]*corev1.Pod{},
		replicaSets: map[string]*appsv1.ReplicaSet{},
		deployments: map[string]*appsv1.Deployment{},
		failed:      make(chan struct{}),
	}
}

// begin starts timing a phase now. Call it just before the action that
// starts the phase.
func (t *benchTracker) begin(name, image string, milestones []benchMilestone) *benchPhase {
	p := &benchPhase{
		name: name, start: time.Now(), image: image, milestones: milestones,
		reached: map[string]time.Duration{}, done: make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase = p
	t.observeLocked(p.start)
	return p
}

// wait blocks until the phase reached every milestone, the watches
// failed or ctx ended, and then stops timing it.
func (t *benchTracker) wait(ctx context.Context, p *benchPhase, exited <-chan struct{}) error {
	defer func() {
		t.mu.Lock()
		t.phase = nil
		t.mu.Unlock()
	}()
	select {
	case <-p.done:
		return nil
	case <-t.failed:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.err
	case <-exited:
		return errors.New("kplane up exited")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress describes how far the phase got, for a timeout message.
func (t *benchTracker) progress(p *benchPhase) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.summaryLocked(p.image)
	switch p.name {
	case "create":
		return fmt.Sprintf("%d/%d pods created, %d scheduled, %d running and ready, deployment available: %t",
			s.pods, s.replicas, s.scheduled, s.ready, s.available)
	case "rollout":
		return fmt.Sprintf("new ReplicaSet %d/%d available (%d new pods, %d ready), %d old ReplicaSets not scaled to 0, %d old pods left",
			s.newRSAvailable, s.replicas, s.newPods, s.newReady, s.oldRSActive, s.oldPods)
	default:
		return fmt.Sprintf("%d deployments, %d ReplicaSets and %d pods left", s.deployments, s.replicaSets, s.pods)
	}
}

// Run consumes the three watches until ctx ends or one of them fails.
// Every event is timestamped as it is taken off its watch.
func (t *benchTracker) Run(ctx context.Context, pods cache.Watch[*corev1.Pod], rss cache.Watch[*appsv1.ReplicaSet], deps cache.Watch[*appsv1.Deployment]) {
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-pods.ResultChan():
			err = benchApply(t, ok, ev, "pods", t.pods)
		case ev, ok := <-rss.ResultChan():
			err = benchApply(t, ok, ev, "replicasets", t.replicaSets)
		case ev, ok := <-deps.ResultChan():
			err = benchApply(t, ok, ev, "deployments", t.deployments)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			close(t.failed)
			return
		}
	}
}

// benchApply records one event of a watch into objs and checks the
// current phase's milestones.
func benchApply[T cache.Object](t *benchTracker, ok bool, ev cache.Event[T], resource string, objs map[string]T) error {
	now := time.Now()
	if !ok {
		return fmt.Errorf("the %s watch ended early", resource)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Type {
	case watch.Added, watch.Modified:
		objs[ev.Object.GetName()] = ev.Object
	case watch.Deleted:
		delete(objs, ev.Object.GetName())
	case watch.Bookmark:
		return nil
	case watch.Error:
		msg := "unknown error"
		if ev.Status != nil {
			msg = ev.Status.Message
		}
		return fmt.Errorf("the %s watch failed: %s", resource, msg)
	}
	t.observeLocked(now)
	return nil
}

// observeLocked records the milestones of the current phase that hold now.
func (t *benchTracker) observeLocked(now time.Time) {
	p := t.phase
	if p == nil || len(p.reached) == len(p.milestones) {
		return
	}
	s := t.summaryLocked(p.image)
	for _, m := range p.milestones {
		if _, ok := p.reached[m.name]; !ok && m.ok(s) {
			p.reached[m.name] = now.Sub(p.start)
		}
	}
	if len(p.reached) == len(p.milestones) {
		close(p.done)
	}
}

func (t *benchTracker) summaryLocked(image string) benchSummary {
	s := benchSummary{replicas: t.replicas, replicaSets: len(t.replicaSets), deployments: len(t.deployments)}
	newHash := ""
	for _, rs := range t.replicaSets {
		if benchImage(rs.Spec.Template.Spec) == image {
			s.newRS = true
			s.newRSAvailable = int(rs.Status.AvailableReplicas)
			newHash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			continue
		}
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 0 || rs.Status.Replicas != 0 {
			s.oldRSActive++
		}
	}
	for _, pod := range t.pods {
		s.pods++
		ready := benchPodReady(pod)
		if pod.Spec.NodeName != "" {
			s.scheduled++
		}
		if ready {
			s.ready++
		}
		if newHash != "" && pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == newHash {
			s.newPods++
			if ready {
				s.newReady++
			}
		} else {
			s.oldPods++
		}
	}
	for _, d := range t.deployments {
		want := int32(t.replicas)
		s.available = d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == want &&
			d.Status.UpdatedReplicas == want && d.Status.Replicas == want
	}
	return s
}

func benchImage(spec corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	return spec.Containers[0].Image
}

// benchPodReady is whether the pod is Running with a true Ready condition.
func benchPodReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The milestones of each phase, in order. The last one of each is the
// phase's completion.
var (
	benchCreateMilestones = []benchMilestone{
		{"first_pod_created", "first pod created", func(s benchSummary) bool { return s.pods > 0 }},
		{"pods_created", "all pods created", func(s benchSummary) bool { return s.pods >= s.replicas }},
		{"pods_scheduled", "all pods scheduled", func(s benchSummary) bool { return s.scheduled >= s.replicas }},
		{"pods_ready", "all pods running and ready", func(s benchSummary) bool { return s.ready >= s.replicas }},
		{"available", "deployment available", func(s benchSummary) bool { return s.available }},
	}
	benchRolloutMilestones = []benchMilestone{
		{"new_replicaset_created", "new ReplicaSet created", func(s benchSummary) bool { return s.newRS }},
		{"first_new_pod_created", "first new pod created", func(s benchSummary) bool { return s.newPods > 0 }},
		{"new_pods_available", "new ReplicaSet all available", func(s benchSummary) bool { return s.newRS && s.newRSAvailable >= s.replicas }},
		{"old_replicasets_scaled_down", "old ReplicaSets scaled to 0", func(s benchSummary) bool { return s.newRS && s.oldRSActive == 0 }},
		{"complete", "rollout complete, old pods gone", func(s benchSummary) bool {
			return s.newRS && s.newRSAvailable >= s.replicas && s.oldRSActive == 0 && s.oldPods == 0
		}},
	}
	benchDeleteMilestones = []benchMilestone{
		{"deployment_gone", "deployment gone", func(s benchSummary) bool { return s.deployments == 0 }},
		{"replicasets_gone", "ReplicaSets gone", func(s benchSummary) bool { return s.replicaSets == 0 }},
		{"complete", "all pods gone", func(s benchSummary) bool { return s.replicaSets == 0 && s.pods == 0 }},
	}
)

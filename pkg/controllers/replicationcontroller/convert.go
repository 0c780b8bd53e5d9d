package replicationcontroller

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// toReplicaSet presents rc as the ReplicaSet the ReplicaSet controller
// manages: the same metadata, the map selector as matchLabels, and the
// status fields the two share. rc is not modified.
func toReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        copyInt32(rc.Spec.Replicas),
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Selector != nil {
		sel := make(map[string]string, len(rc.Spec.Selector))
		for k, v := range rc.Spec.Selector {
			sel[k] = v
		}
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetConditionType(c.Type),
			Status:             c.Status,
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return rs
}

// toReplicationController is the inverse of toReplicaSet. A selector with
// expressions cannot come from an RC and is dropped.
func toReplicationController(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        copyInt32(rs.Spec.Replicas),
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = make(map[string]string, len(rs.Spec.Selector.MatchLabels))
		for k, v := range rs.Spec.Selector.MatchLabels {
			rc.Spec.Selector[k] = v
		}
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type:               corev1.ReplicationControllerConditionType(c.Type),
			Status:             c.Status,
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return rc
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// listerWatcher lists and watches ReplicationControllers as ReplicaSets.
type listerWatcher struct {
	rcs *client.ResourceClient[*corev1.ReplicationController]
}

var _ cache.ListerWatcher[*appsv1.ReplicaSet] = listerWatcher{}

func (l listerWatcher) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[*appsv1.ReplicaSet], error) {
	list, err := l.rcs.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &cache.List[*appsv1.ReplicaSet]{ListMeta: list.ListMeta, Items: make([]*appsv1.ReplicaSet, len(list.Items))}
	for i, rc := range list.Items {
		out.Items[i] = toReplicaSet(rc)
	}
	return out, nil
}

func (l listerWatcher) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[*appsv1.ReplicaSet], error) {
	src, err := l.rcs.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	w := &convertingWatch{
		src:  src,
		out:  make(chan cache.Event[*appsv1.ReplicaSet]),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.run()
	return w, nil
}

// convertingWatch passes on the events of a ReplicationController watch
// with their objects as ReplicaSets. Its goroutine ends when the source
// watch closes or Stop is called; Stop waits for it.
type convertingWatch struct {
	src      cache.Watch[*corev1.ReplicationController]
	out      chan cache.Event[*appsv1.ReplicaSet]
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func (w *convertingWatch) run() {
	defer close(w.done)
	defer close(w.out)
	in := w.src.ResultChan()
	for {
		var ev cache.Event[*corev1.ReplicationController]
		var ok bool
		select {
		case <-w.stop:
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		conv := cache.Event[*appsv1.ReplicaSet]{Type: ev.Type, Status: ev.Status}
		if ev.Object != nil {
			conv.Object = toReplicaSet(ev.Object)
		}
		select {
		case <-w.stop:
			return
		case w.out <- conv:
		}
	}
}

// ResultChan is the converted events; it is closed when the watch ends.
func (w *convertingWatch) ResultChan() <-chan cache.Event[*appsv1.ReplicaSet] { return w.out }

// Stop ends the watch and waits for its goroutine. It is safe to call more
// than once and from any goroutine.
func (w *convertingWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.src.Stop()
	})
	<-w.done
}

package replicationcontroller

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
)

func newRC() *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rc-uid", Generation: 4, ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        ptr.To[int32](3),
			MinReadySeconds: 5,
			Selector:        map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 4,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}},
		},
	}
}

func TestConversionKeepsWhatTheReplicaSetLogicReadsAndWrites(t *testing.T) {
	rc := newRC()
	rs := toReplicaSet(rc)
	if diff := cmp.Diff(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, rs.Spec.Selector); diff != "" {
		t.Errorf("map selector not turned into matchLabels (-want +got):\n%s", diff)
	}
	if *rs.Spec.Replicas != 3 || rs.Spec.MinReadySeconds != 5 || rs.Status.AvailableReplicas != 1 ||
		rs.Status.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure || rs.UID != rc.UID || rs.ResourceVersion != "7" {
		t.Errorf("ReplicaSet view lost fields: %+v", rs)
	}
	if diff := cmp.Diff(rc, toReplicationController(rs)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// The conversion copies: the cached RC is never written through.
	*rs.Spec.Replicas = 9
	rs.Spec.Selector.MatchLabels["x"] = "y"
	rs.Spec.Template.Labels["x"] = "y"
	if *rc.Spec.Replicas != 3 || len(rc.Spec.Selector) != 1 || len(rc.Spec.Template.Labels) != 1 {
		t.Errorf("conversion shares memory with its input: %+v", rc.Spec)
	}
}

// fakeWatch is a ReplicationController watch fed by the test.
type fakeWatch struct {
	ch      chan cache.Event[*corev1.ReplicationController]
	stopped bool
}

func (f *fakeWatch) ResultChan() <-chan cache.Event[*corev1.ReplicationController] { return f.ch }
func (f *fakeWatch) Stop() {
	if !f.stopped {
		f.stopped = true
		close(f.ch)
	}
}

func TestConvertingWatch(t *testing.T) {
	newWatch := func(src *fakeWatch) *convertingWatch {
		w := &convertingWatch{src: src, out: make(chan cache.Event[*appsv1.ReplicaSet]), stop: make(chan struct{}), done: make(chan struct{})}
		go w.run()
		return w
	}
	t.Run("events pass converted and the end of the source closes the watch", func(t *testing.T) {
		src := &fakeWatch{ch: make(chan cache.Event[*corev1.ReplicationController], 3)}
		w := newWatch(src)
		src.ch <- cache.Event[*corev1.ReplicationController]{Type: watch.Added, Object: newRC()}
		src.ch <- cache.Event[*corev1.ReplicationController]{Type: watch.Error, Status: &metav1.Status{Code: 410}}
		close(src.ch)
		src.stopped = true
		var got []string
		for ev := range w.ResultChan() {
			name := ""
			if ev.Object != nil {
				name = ev.Object.Name
			}
			got = append(got, string(ev.Type)+" "+name)
		}
		if diff := cmp.Diff([]string{"ADDED web", "ERROR "}, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		w.Stop()
	})
	t.Run("stop ends a watch blocked on its consumer", func(t *testing.T) {
		src := &fakeWatch{ch: make(chan cache.Event[*corev1.ReplicationController], 1)}
		w := newWatch(src)
		src.ch <- cache.Event[*corev1.ReplicationController]{Type: watch.Added, Object: newRC()}
		w.Stop()
		w.Stop()
		if !src.stopped {
			t.Error("source watch not stopped")
		}
		for range w.ResultChan() {
		}
	})
}

// recordingRecorder keeps the types of the objects events are about.
type recordingRecorder struct{ got []string }

func (r *recordingRecorder) Event(obj record.Object, _, reason, _ string) {
	r.got = append(r.got, fmt.Sprintf("%T %s %s", obj, obj.GetName(), reason))
}

func TestEventsAreRecordedOnTheReplicationController(t *testing.T) {
	inner := &recordingRecorder{}
	recorder{inner}.Event(toReplicaSet(newRC()), corev1.EventTypeNormal, replicaset.ReasonSuccessfulCreate, "Created pod: web-x")
	if diff := cmp.Diff([]string{"*v1.ReplicationController web SuccessfulCreate"}, inner.got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

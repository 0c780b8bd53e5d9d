package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/workqueue"
)

func noopHandler(context.Context, string) error { return nil }

func TestEnqueueDeleted(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{name: "object", obj: p, want: []string{"add ns/p"}},
		{name: "tombstone", obj: cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/p", Obj: p}, want: []string{"add ns/p"}},
		{name: "tombstone pointer", obj: &cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/p", Obj: p}, want: []string{"add ns/p"}},
		{name: "tombstone without object", obj: cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/gone"}, want: []string{"add ns/gone"}},
		{name: "tombstone of another type", obj: cache.DeletedFinalStateUnknown[*corev1.Secret]{Key: "ns/s"}},
		{name: "garbage", obj: "ns/p"},
		{name: "nil", obj: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, q := newTestController(t, Config{SyncHandler: noopHandler})
			EnqueueDeleted[*corev1.Pod](c, tt.obj)
			if diff := cmp.Diff(tt.want, q.recorded()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnqueueHandler(t *testing.T) {
	c, q := newTestController(t, Config{SyncHandler: noopHandler})
	h := EnqueueHandler[*corev1.Pod](c)
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	h.OnAdd(a, true)
	h.OnUpdate(a, b)
	h.OnDelete(cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/c"})
	if diff := cmp.Diff([]string{"add ns/a", "add ns/b", "add ns/c"}, q.recorded()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestEnqueueOwnerHandler(t *testing.T) {
	owned := func(name string, uid types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		if name != "" {
			tr := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid, Controller: &tr}}
		}
		return p
	}
	tests := []struct {
		name string
		call func(h cache.HandlerFuncs[*corev1.Pod])
		want []string
	}{
		{name: "add", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnAdd(owned("rs1", "1"), false) }, want: []string{"add ns/rs1"}},
		{name: "add orphan", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnAdd(owned("", ""), false) }},
		{name: "update same owner", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnUpdate(owned("rs1", "1"), owned("rs1", "1")) }, want: []string{"add ns/rs1"}},
		{name: "update changed owner", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnUpdate(owned("rs1", "1"), owned("rs2", "2")) }, want: []string{"add ns/rs1", "add ns/rs2"}},
		{name: "update released", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnUpdate(owned("rs1", "1"), owned("", "")) }, want: []string{"add ns/rs1"}},
		{name: "update adopted", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnUpdate(owned("", ""), owned("rs2", "2")) }, want: []string{"add ns/rs2"}},
		{name: "delete", call: func(h cache.HandlerFuncs[*corev1.Pod]) { h.OnDelete(owned("rs1", "1")) }, want: []string{"add ns/rs1"}},
		{name: "delete tombstone", call: func(h cache.HandlerFuncs[*corev1.Pod]) {
			h.OnDelete(&cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/p", Obj: owned("rs1", "1")})
		}, want: []string{"add ns/rs1"}},
		{name: "delete empty tombstone", call: func(h cache.HandlerFuncs[*corev1.Pod]) {
			h.OnDelete(cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/p"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, q := newTestController(t, Config{SyncHandler: noopHandler})
			tt.call(EnqueueOwnerHandler[*corev1.Pod](c, rsKind))
			if diff := cmp.Diff(tt.want, q.recorded()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnqueueHandlerPriorities: on a priority queue the initial list and
// resyncs wait behind real changes.
func TestEnqueueHandlerPriorities(t *testing.T) {
	q, err := workqueue.NewPriority(workqueue.PriorityConfig[string]{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	c, err := New(Config{Name: "prio", Queue: q, SyncHandler: noopHandler})
	if err != nil {
		t.Fatal(err)
	}
	h := EnqueueHandler[*corev1.Pod](c)
	p := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	h.OnAdd(p("listed", "1"), true)
	h.OnUpdate(p("resynced", "2"), p("resynced", "2"))
	h.OnAdd(p("created", "3"), false)
	h.OnUpdate(p("changed", "4"), p("changed", "5"))
	var got []string
	var prios []int
	for range 4 {
		key, prio, _ := q.GetWithPriority()
		q.Done(key)
		got = append(got, key)
		prios = append(prios, prio)
	}
	if diff := cmp.Diff([]string{"ns/created", "ns/changed", "ns/listed", "ns/resynced"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0, LowPriority, LowPriority}, prios); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
}

func TestEnqueueNil(t *testing.T) {
	c, q := newTestController(t, Config{SyncHandler: noopHandler})
	var nilPod *corev1.Pod
	c.Enqueue(nil)
	c.Enqueue(nilPod)
	c.EnqueueAfter(nilPod, time.Second)
	c.EnqueueControllerOf(nilPod, rsKind)
	c.EnqueueControllerOf(nil, rsKind)
	EnqueueDeleted[*corev1.Pod](c, nilPod)
	if got := q.recorded(); len(got) != 0 {
		t.Fatalf("nil objects enqueued: %v", got)
	}
}

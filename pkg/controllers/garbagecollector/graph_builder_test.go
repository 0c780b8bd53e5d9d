package garbagecollector

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// recordingQueue records the uids of the nodes added to it.
type recordingQueue struct{ uids []types.UID }

func (q *recordingQueue) Add(n *node)            { q.uids = append(q.uids, n.identity.UID) }
func (q *recordingQueue) AddRateLimited(n *node) { q.uids = append(q.uids, n.identity.UID) }

// set is the queued uids without duplicates, sorted.
func (q *recordingQueue) set() []types.UID {
	out := slices.Clone(q.uids)
	slices.Sort(out)
	return slices.Compact(out)
}

var cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// object is a ConfigMap's metadata with the given owners (by uid; the owner
// refs name ConfigMaps called after their uid in the same namespace).
type object struct {
	ns, uid    string
	name       string // defaults to uid
	owners     []string
	blocking   bool
	deleting   bool
	finalizers []string
}

func (o object) meta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: o.ns, Name: o.name, UID: types.UID(o.uid), Finalizers: o.finalizers,
	}}
	if m.Name == "" {
		m.Name = o.uid
	}
	if m.Namespace == "" {
		m.Namespace = "ns"
	}
	for _, owner := range o.owners {
		r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: types.UID(owner)}
		if o.blocking {
			b := true
			r.BlockOwnerDeletion = &b
		}
		m.OwnerReferences = append(m.OwnerReferences, r)
	}
	if o.deleting {
		ts := metav1.NewTime(time.Unix(1, 0))
		m.DeletionTimestamp = &ts
	}
	return m
}

func add(o object) *event    { return &event{typ: addEvent, obj: o.meta(), gvk: cmGVK} }
func remove(o object) *event { return &event{typ: deleteEvent, obj: o.meta(), gvk: cmGVK} }
func update(old, o object) *event {
	return &event{typ: updateEvent, old: old.meta(), obj: o.meta(), gvk: cmGVK}
}
func virtualDelete(o object) *event {
	return &event{typ: deleteEvent, virtual: true, obj: o.meta(), gvk: cmGVK}
}

// nodeView is what the tests compare of a node.
type nodeView struct {
	Namespace          string
	Owners             []types.UID
	Dependents         []types.UID
	Virtual            bool
	BeingDeleted       bool
	DeletingDependents bool
}

func snapshot(g *graph) map[types.UID]nodeView {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := map[types.UID]nodeView{}
	for uid, n := range g.nodes {
		v := nodeView{Namespace: n.identity.Namespace, Virtual: n.virtual, BeingDeleted: n.beingDeleted, DeletingDependents: n.deletingDependents}
		for _, r := range n.owners {
			v.Owners = append(v.Owners, r.UID)
		}
		for d := range n.dependents {
			v.Dependents = append(v.Dependents, d.identity.UID)
		}
		slices.Sort(v.Dependents)
		out[uid] = v
	}
	return out
}

func uids(s ...string) []types.UID {
	var out []types.UID
	for _, x := range s {
		out = append(out, types.UID(x))
	}
	return out
}

func newTestBuilder() (*graphBuilder, *recordingQueue, *recordingQueue, *fakeRecorder) {
	del, orphan, rec := &recordingQueue{}, &recordingQueue{}, newFakeRecorder()
	return &graphBuilder{
		graph:           newGraph(),
		absent:          newAbsentCache(10),
		attemptToDelete: del,
		attemptToOrphan: orphan,
		recorder:        rec,
		logger:          slog.New(slog.DiscardHandler),
	}, del, orphan, rec
}

func TestGraphBuilder(t *testing.T) {
	owner := object{uid: "owner"}
	dep := object{uid: "dep", owners: []string{"owner"}}
	tests := []struct {
		name       string
		events     []*event
		want       map[types.UID]nodeView
		wantDelete []types.UID
		wantOrphan []types.UID
		wantAbsent []identity
		wantEvents []recordedEvent
	}{{
		name:   "owner then dependent",
		events: []*event{add(owner), add(dep)},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep")},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
	}, {
		name:   "dependent first makes a virtual owner, queued for a check",
		events: []*event{add(dep)},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep"), Virtual: true},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
		wantDelete: uids("owner"),
	}, {
		name:   "a virtual owner becomes observed",
		events: []*event{add(dep), add(owner)},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep")},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
		wantDelete: uids("owner"),
	}, {
		name: "an update changes owners",
		events: []*event{add(owner), add(object{uid: "other"}), add(dep),
			update(dep, object{uid: "dep", owners: []string{"other", "third"}})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns"},
			"other": {Namespace: "ns", Dependents: uids("dep")},
			"third": {Namespace: "ns", Dependents: uids("dep"), Virtual: true},
			"dep":   {Namespace: "ns", Owners: uids("other", "third")},
		},
		wantDelete: uids("third"),
	}, {
		name:       "deleting an owner queues its dependents and remembers it absent",
		events:     []*event{add(owner), add(dep), remove(owner)},
		want:       map[types.UID]nodeView{"dep": {Namespace: "ns", Owners: uids("owner")}},
		wantDelete: uids("dep"),
		wantAbsent: []identity{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "owner", UID: "owner"}},
	}, {
		name:   "deleting a dependent unlinks it",
		events: []*event{add(owner), add(dep), remove(dep)},
		want:   map[types.UID]nodeView{"owner": {Namespace: "ns"}},
	}, {
		name:   "a delete of an unknown object changes nothing",
		events: []*event{remove(dep)},
		want:   map[types.UID]nodeView{},
	}, {
		name: "foreground deletion marks the owner and queues it and its dependents",
		events: []*event{add(owner), add(dep),
			update(owner, object{uid: "owner", deleting: true, finalizers: []string{metav1.FinalizerDeleteDependents}})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep"), BeingDeleted: true, DeletingDependents: true},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
		wantDelete: uids("dep", "owner"),
	}, {
		name: "orphan deletion queues the owner for orphaning",
		events: []*event{add(owner), add(dep),
			update(owner, object{uid: "owner", deleting: true, finalizers: []string{metav1.FinalizerOrphanDependents}})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep"), BeingDeleted: true},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
		wantOrphan: uids("owner"),
	}, {
		name: "a dependent dropping a blocking reference unblocks a foreground owner",
		events: []*event{
			add(object{uid: "owner", deleting: true, finalizers: []string{metav1.FinalizerDeleteDependents}}),
			add(object{uid: "dep", owners: []string{"owner"}, blocking: true}),
			update(object{uid: "dep", owners: []string{"owner"}, blocking: true}, object{uid: "dep", owners: []string{"owner"}}),
			update(object{uid: "dep", owners: []string{"owner"}}, object{uid: "dep"}),
		},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", BeingDeleted: true, DeletingDependents: true},
			"dep":   {Namespace: "ns"},
		},
		// owner: on its add (foreground) and when dep stopped blocking.
		wantDelete: uids("owner"),
	}, {
		name: "a cycle is built and torn down",
		events: []*event{
			add(object{uid: "a", owners: []string{"b"}}),
			add(object{uid: "b", owners: []string{"a"}}),
			add(object{uid: "self", owners: []string{"self"}}),
			remove(object{uid: "a", owners: []string{"b"}}),
			remove(object{uid: "b", owners: []string{"a"}}),
			remove(object{uid: "self", owners: []string{"self"}}),
		},
		want: map[types.UID]nodeView{},
		// b: virtual when a named it, then a's dependent; self: its own
		// dependent when it went.
		wantDelete: uids("b", "self"),
		wantAbsent: []identity{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", UID: "a"},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "self", UID: "self"},
		},
	}, {
		name:   "a virtual delete removes a virtual owner",
		events: []*event{add(dep), virtualDelete(owner)},
		want: map[types.UID]nodeView{
			"dep": {Namespace: "ns", Owners: uids("owner")},
		},
		wantDelete: uids("dep", "owner"),
	}, {
		name:   "a virtual delete with other coordinates keeps an observed node",
		events: []*event{add(owner), add(dep), virtualDelete(object{ns: "elsewhere", uid: "owner"})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "ns", Dependents: uids("dep")},
			"dep":   {Namespace: "ns", Owners: uids("owner")},
		},
	}, {
		name:   "an observed owner in another namespace is reported",
		events: []*event{add(object{ns: "a", uid: "owner"}), add(object{ns: "b", uid: "dep", owners: []string{"owner"}})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "a", Dependents: uids("dep")},
			"dep":   {Namespace: "b", Owners: uids("owner")},
		},
		wantDelete: uids("dep"),
		wantEvents: []recordedEvent{{Namespace: "b", Name: "dep", Type: corev1.EventTypeWarning, Reason: "OwnerRefInvalidNamespace"}},
	}, {
		name:   "a virtual owner observed in another namespace is reported",
		events: []*event{add(object{ns: "b", uid: "dep", owners: []string{"owner"}}), add(object{ns: "a", uid: "owner"})},
		want: map[types.UID]nodeView{
			"owner": {Namespace: "a", Dependents: uids("dep")},
			"dep":   {Namespace: "b", Owners: uids("owner")},
		},
		wantDelete: uids("dep", "owner"),
		wantEvents: []recordedEvent{{Namespace: "b", Name: "dep", Type: corev1.EventTypeWarning, Reason: "OwnerRefInvalidNamespace"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gb, del, orphan, rec := newTestBuilder()
			for _, ev := range tt.events {
				gb.processEvent(ev)
			}
			if diff := cmp.Diff(tt.want, snapshot(gb.graph)); diff != "" {
				t.Errorf("graph (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDelete, del.set()); diff != "" {
				t.Errorf("attemptToDelete (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOrphan, orphan.set()); diff != "" {
				t.Errorf("attemptToOrphan (-want +got):\n%s", diff)
			}
			for _, id := range tt.wantAbsent {
				if !gb.absent.has(id) {
					t.Errorf("%s not remembered absent", id)
				}
			}
			if diff := cmp.Diff(tt.wantEvents, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

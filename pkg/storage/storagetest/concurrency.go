package storagetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

var concurrencyTests = []test{
	{name: "Linearizable", run: testLinearizable},
	{name: "WatchHistory", run: testWatchHistory},
	{name: "WatchListUnderWrites", run: testWatchListUnderWrites},
}

// linKeys is how many keys the concurrent clients share: few, so they collide.
const linKeys = 3

type linOpKind int

const (
	opCreate linOpKind = iota
	opUpdate
	opDelete
	opGet
)

func (k linOpKind) String() string {
	return [...]string{"create", "update", "delete", "get"}[k]
}

type linInput struct {
	Op    linOpKind
	Key   int
	Value string
}

// linOutput is what a call returned: OK false means AlreadyExists for a
// create and NotFound otherwise. Rev is the object's resourceVersion.
type linOutput struct {
	OK    bool
	Value string
	Rev   uint64
}

// linState is the sequential model: a few keys, each with a value and the
// revision it was written at, and the newest revision of any write.
type linState struct {
	Present [linKeys]bool
	Value   [linKeys]string
	Rev     [linKeys]uint64
	Last    uint64
}

func linStep(st linState, in linInput, out linOutput) (bool, linState) {
	k := in.Key
	switch in.Op {
	case opCreate:
		if !out.OK {
			return st.Present[k], st
		}
		if st.Present[k] || out.Rev <= st.Last || out.Value != in.Value {
			return false, st
		}
		st.Present[k], st.Value[k], st.Rev[k], st.Last = true, in.Value, out.Rev, out.Rev
		return true, st
	case opUpdate:
		if !out.OK {
			return !st.Present[k], st
		}
		if !st.Present[k] || out.Rev <= st.Last || out.Value != in.Value {
			return false, st
		}
		st.Value[k], st.Rev[k], st.Last = in.Value, out.Rev, out.Rev
		return true, st
	case opDelete:
		if !out.OK {
			return !st.Present[k], st
		}
		// The deleted object carries the delete's revision.
		if !st.Present[k] || out.Value != st.Value[k] || out.Rev <= st.Last {
			return false, st
		}
		st.Present[k], st.Value[k], st.Rev[k], st.Last = false, "", 0, out.Rev
		return true, st
	case opGet:
		if !out.OK {
			return !st.Present[k], st
		}
		return st.Present[k] && out.Value == st.Value[k] && out.Rev == st.Rev[k], st
	}
	return false, st
}

func linModel(start uint64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return linState{Last: start} },
		Step: func(st, in, out any) (bool, any) {
			return linStep(st.(linState), in.(linInput), out.(linOutput))
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(linInput), out.(linOutput)
			return fmt.Sprintf("%s(k%d, %q) -> ok=%v %q@%d", i.Op, i.Key, i.Value, o.OK, o.Value, o.Rev)
		},
	}
}

func linKey(k int) string { return cmKey("lin", fmt.Sprintf("k%d", k)) }

// linCall runs one operation against s.
func linCall(ctx context.Context, s storage.Interface, in linInput) (linOutput, error) {
	out := &corev1.ConfigMap{}
	var err error
	switch in.Op {
	case opCreate:
		err = s.Create(ctx, linKey(in.Key), newCM("lin", fmt.Sprintf("k%d", in.Key), in.Value, nil), out)
		if storage.IsExists(err) {
			return linOutput{}, nil
		}
	case opUpdate:
		err = s.GuaranteedUpdate(ctx, linKey(in.Key), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			cm.Data = map[string]string{"v": in.Value}
			return cm, nil
		})
	case opDelete:
		err = s.Delete(ctx, linKey(in.Key), out, nil, nil)
	case opGet:
		err = s.Get(ctx, linKey(in.Key), storage.GetOptions{}, out)
	}
	if storage.IsNotFound(err) {
		return linOutput{}, nil
	}
	if err != nil {
		return linOutput{}, fmt.Errorf("%s k%d: %w", in.Op, in.Key, err)
	}
	rv, err := storage.ObjectResourceVersion(out)
	if err != nil {
		return linOutput{}, err
	}
	return linOutput{OK: true, Value: out.Data["v"], Rev: rv}, nil
}

func testLinearizable(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	clients, ops := 6, 150
	if testing.Short() {
		ops = 25
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	start := currentRev(t, b)
	var clock atomic.Int64
	history := make([][]porcupine.Operation, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(c)))
			for i := range ops {
				in := linInput{Op: linOpKind(rng.IntN(4)), Key: rng.IntN(linKeys), Value: fmt.Sprintf("c%d-%d", c, i)}
				call := clock.Add(1)
				out, err := linCall(context.Background(), s, in)
				ret := clock.Add(1)
				if err != nil {
					errs <- err
					return
				}
				history[c] = append(history[c], porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent client: %v", err)
	}
	var all []porcupine.Operation
	for _, h := range history {
		all = append(all, h...)
	}
	res, info := porcupine.CheckOperationsVerbose(linModel(start), all, 60*time.Second)
	if res != porcupine.Ok {
		var b strings.Builder
		for _, part := range info.PartialLinearizationsOperations() {
			for _, lin := range part {
				if len(lin) > 0 {
					fmt.Fprintf(&b, "longest linearizable prefix has %d of %d operations\n", len(lin), len(all))
					break
				}
			}
		}
		t.Fatalf("history of %d operations is not linearizable (result %v, seed %d)\n%s", len(all), res, seed, b.String())
	}
}

// write is one successful write of the history test.
type write struct {
	rev   uint64
	key   string // namespace/name
	typ   watch.EventType
	value string // the new value, or the last one for a delete
}

func testWatchHistory(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	writers, ops := 4, 100
	if testing.Short() {
		ops = 30
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	startRV := rvString(currentRev(t, b))
	ctx := context.Background()

	// collect gathers w's events until the final write, value "end" on k0.
	type stream struct {
		name string
		got  []evSummary
		done chan struct{}
		want func(write) bool
	}
	collect := func(name string, w storage.Watcher, want func(write) bool) *stream {
		st := &stream{name: name, done: make(chan struct{}), want: want}
		go func() {
			defer close(st.done)
			for e := range w.ResultChan() {
				if e.Type == watch.Bookmark {
					continue
				}
				ev := summarize(e)
				st.got = append(st.got, ev)
				if ev.Name == "hist/k0" && ev.Value == "end" && e.Type != watch.Deleted {
					return
				}
			}
		}()
		return st
	}
	everything := func(write) bool { return true }
	// Watchers opened before the writes: the whole prefix and one key.
	streams := []*stream{
		collect("prefix", watchOpen(t, s, "/configmaps/hist", storage.ListOptions{Recursive: true, ResourceVersion: startRV}), everything),
		collect("single key", watchOpen(t, s, cmKey("hist", "k0"), storage.ListOptions{ResourceVersion: startRV}),
			func(w write) bool { return w.key == "hist/k0" }),
	}

	var mu sync.Mutex
	var writes []write
	record := func(typ watch.EventType, name string, out *corev1.ConfigMap) error {
		rv, err := storage.ObjectResourceVersion(out)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, write{rev: rv, key: "hist/" + name, typ: typ, value: out.Data["v"]})
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for c := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(c)))
			for i := range ops {
				name := fmt.Sprintf("k%d", rng.IntN(5))
				key, value := cmKey("hist", name), fmt.Sprintf("c%d-%d", c, i)
				out := &corev1.ConfigMap{}
				var err error
				var typ watch.EventType
				switch rng.IntN(3) {
				case 0:
					typ, err = watch.Added, s.Create(ctx, key, newCM("hist", name, value, nil), out)
				case 1:
					typ = watch.Modified
					err = s.GuaranteedUpdate(ctx, key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
						cm := cur.(*corev1.ConfigMap)
						cm.Data = map[string]string{"v": value}
						return cm, nil
					})
				case 2:
					typ, err = watch.Deleted, s.Delete(ctx, key, out, nil, nil)
				}
				if storage.IsExists(err) || storage.IsNotFound(err) {
					continue
				}
				if err == nil {
					err = record(typ, name, out)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	// The final write, which every stream ends with.
	typ := watch.Modified
	if err := s.Get(ctx, cmKey("hist", "k0"), storage.GetOptions{}, &corev1.ConfigMap{}); storage.IsNotFound(err) {
		typ = watch.Added
	}
	final := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdate(ctx, cmKey("hist", "k0"), final, true, nil, func(runtime.Object) (runtime.Object, error) {
		return newCM("hist", "k0", "end", nil), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := record(typ, "k0", final); err != nil {
		t.Fatal(err)
	}
	// A watcher opened after the writes replays them from the history.
	streams = append(streams, collect("late prefix", watchOpen(t, s, "/configmaps/hist", storage.ListOptions{Recursive: true, ResourceVersion: startRV}), everything))

	sort.Slice(writes, func(i, j int) bool { return writes[i].rev < writes[j].rev })
	for _, st := range streams {
		timer := time.NewTimer(eventTimeout)
		select {
		case <-st.done:
		case <-timer.C:
			t.Fatalf("%s watcher did not deliver the final write within %v", st.name, eventTimeout)
		}
		timer.Stop()
		var want, got []evSummary
		for _, w := range writes {
			if st.want(w) {
				want = append(want, evSummary{Type: w.typ, Name: w.key, Value: w.value})
			}
		}
		var prev uint64
		for _, e := range st.got {
			var rv uint64
			if _, err := fmt.Sscan(e.RV, &rv); err != nil || rv <= prev {
				t.Errorf("%s watcher: revision %q after %d: out of order or duplicate", st.name, e.RV, prev)
			}
			prev = rv
			got = append(got, evSummary{Type: e.Type, Name: e.Name, Value: e.Value})
		}
		diff(t, st.name+" watcher history (a gap, duplicate or reordering)", want, got)
	}
}

// testWatchListUnderWrites opens watch-lists (SendInitialEvents) while
// writers run, and checks that each one's initial state followed by its
// changes rebuilds the final state exactly: no change is lost or doubled
// between the initial events and the stream.
func testWatchListUnderWrites(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	ops := 150
	if testing.Short() {
		ops = 50
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := range 10 {
		create(t, s, newCM("wl", fmt.Sprintf("k%d", i), "init", nil))
	}
	type stream struct {
		events []storage.Event
		done   chan struct{}
	}
	yes := true
	open := func() *stream {
		w := watchOpen(t, s, "/configmaps/wl", storage.ListOptions{Recursive: true, SendInitialEvents: &yes, ResourceVersionMatch: "NotOlderThan"})
		st := &stream{done: make(chan struct{})}
		go func() {
			defer close(st.done)
			for e := range w.ResultChan() {
				st.events = append(st.events, e)
				if cm, ok := e.Object.(*corev1.ConfigMap); ok && cm.Name == "end" {
					return
				}
			}
		}()
		return st
	}
	var streams []*stream
	streams = append(streams, open())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for c := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(c)))
			for i := range ops {
				name := fmt.Sprintf("k%d", rng.IntN(15))
				key, value := cmKey("wl", name), fmt.Sprintf("c%d-%d", c, i)
				var err error
				switch rng.IntN(3) {
				case 0:
					err = s.Create(ctx, key, newCM("wl", name, value, nil), &corev1.ConfigMap{})
				case 1:
					err = s.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
						cm := cur.(*corev1.ConfigMap)
						cm.Data = map[string]string{"v": value}
						return cm, nil
					})
				case 2:
					err = s.Delete(ctx, key, &corev1.ConfigMap{}, nil, nil)
				}
				if err != nil && !storage.IsExists(err) && !storage.IsNotFound(err) {
					errs <- err
					return
				}
			}
		})
	}
	// More watch-lists open while the writes go on.
	for range 3 {
		streams = append(streams, open())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	create(t, s, newCM("wl", "end", "end", nil))
	final := map[string]string{}
	for _, cm := range list(t, s, "/configmaps/wl", storage.ListOptions{}).Items {
		final[cm.Name] = cm.Data["v"]
	}
	for i, st := range streams {
		timer := time.NewTimer(eventTimeout)
		select {
		case <-st.done:
		case <-timer.C:
			t.Fatalf("watch-list %d did not reach the final write", i)
		}
		timer.Stop()
		state := map[string]string{}
		initial := true
		var bookmark, last uint64
		for _, e := range st.events {
			if e.Type == watch.Bookmark {
				if initial {
					initial = false
					bookmark = rvOf(t, e.Object)
					last = bookmark
				}
				continue
			}
			cm := e.Object.(*corev1.ConfigMap)
			rv := rvOf(t, cm)
			if initial {
				if e.Type != watch.Added {
					t.Fatalf("watch-list %d: %s before the initial-events bookmark", i, e.Type)
				}
				if _, dup := state[cm.Name]; dup {
					t.Fatalf("watch-list %d: %s twice in the initial events", i, cm.Name)
				}
				state[cm.Name] = cm.Data["v"]
				continue
			}
			if rv <= last {
				t.Fatalf("watch-list %d: event at %d after %d (bookmark %d)", i, rv, last, bookmark)
			}
			last = rv
			_, exists := state[cm.Name]
			switch {
			case e.Type == watch.Added && exists, e.Type != watch.Added && !exists:
				t.Fatalf("watch-list %d: %s of %s at %d contradicts the state so far (exists=%v)", i, e.Type, cm.Name, rv, exists)
			case e.Type == watch.Deleted:
				delete(state, cm.Name)
			default:
				state[cm.Name] = cm.Data["v"]
			}
		}
		if initial {
			t.Fatalf("watch-list %d never sent the initial-events bookmark", i)
		}
		diff(t, fmt.Sprintf("watch-list %d rebuilt state", i), final, state)
	}
}

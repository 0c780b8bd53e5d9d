package cache_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

// checker is a Handler that replays what it is told onto its own view of
// the world and records every event that does not fit that view.
type checker struct {
	mu         sync.Mutex
	view       map[string]int64 // key -> resourceVersion
	violations []string
	events     int
}

func newChecker() *checker { return &checker{view: map[string]int64{}} }

func rvOf(p *corev1.Pod) int64 {
	n, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	return n
}

func (c *checker) bad(format string, args ...any) {
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

func (c *checker) OnAdd(p *corev1.Pod, _ bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	k := key(p)
	if rv, ok := c.view[k]; ok {
		c.bad("add of %s at %d while present at %d", k, rvOf(p), rv)
	}
	c.view[k] = rvOf(p)
}

func (c *checker) OnUpdate(old, p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	k := key(p)
	rv, ok := c.view[k]
	switch {
	case !ok:
		c.bad("update of absent %s", k)
	case rvOf(old) != rv:
		c.bad("update of %s from %d, but it was at %d", k, rvOf(old), rv)
	case rvOf(p) <= rv:
		c.bad("update of %s does not move forward: %d -> %d", k, rv, rvOf(p))
	}
	c.view[k] = rvOf(p)
}

func (c *checker) OnDelete(obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	p, err := cache.Unwrap[*corev1.Pod](obj)
	if err != nil {
		c.bad("junk delete: %v", err)
		return
	}
	k := key(p)
	rv, ok := c.view[k]
	_, tomb := obj.(cache.DeletedFinalStateUnknown[*corev1.Pod])
	switch {
	case !ok:
		c.bad("delete of absent %s", k)
	case tomb && rvOf(p) != rv:
		c.bad("tombstone of %s carries %d, last seen %d", k, rvOf(p), rv)
	case !tomb && rvOf(p) < rv:
		c.bad("delete of %s at %d older than %d", k, rvOf(p), rv)
	}
	delete(c.view, k)
}

var seedFlag = flag.Int64("seed", 0, "seed of TestInformerRandomized's first run (0: time-based)")

func TestInformerRandomized(t *testing.T) {
	seeds := 10
	steps := 3000
	if testing.Short() {
		seeds, steps = 2, 400
	}
	base := time.Now().UnixNano()
	if *seedFlag != 0 {
		base, seeds = *seedFlag, 1
	}
	for i := range seeds {
		seed := base + int64(i)
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			synctest.Test(t, func(t *testing.T) { randomRun(t, seed, steps) })
		})
	}
}

func randomRun(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	src := cachetest.New[*corev1.Pod](cachetest.Config{RefuseWatchList: rng.IntN(3) == 0})
	watchList := rng.IntN(2) == 0
	t.Logf("watchList=%v", watchList)
	inf := newInformer(t, src, func(c *cache.InformerConfig[*corev1.Pod]) {
		c.DisableWatchList = !watchList
		c.PageSize = int64(1 + rng.IntN(10))
	})
	early := newChecker()
	addHandler(t, inf, early, 0)
	startInformer(t, inf)
	var late *checker
	lateAt := rng.IntN(steps)
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprint("p", i)
	}
	var counts [8]int
	for step := range steps {
		if step == lateAt {
			late = newChecker()
			addHandler(t, inf, late, 0)
		}
		name := keys[rng.IntN(len(keys))]
		op := rng.IntN(100)
		switch {
		case op < 35:
			_, err := src.Create(pod("ns", name, "", "n", fmt.Sprint(step)))
			if err == nil {
				counts[0]++
			} else if p, ok := src.Get("ns/" + name); ok {
				c := p.DeepCopy()
				c.Labels = map[string]string{"n": fmt.Sprint(step)}
				_, _ = src.Update(c)
				counts[1]++
			}
		case op < 65:
			if p, ok := src.Get("ns/" + name); ok {
				_, _ = src.Update(p.DeepCopy())
				counts[1]++
			}
		case op < 85:
			if _, err := src.Delete("ns/" + name); err == nil {
				counts[2]++
			}
		case op < 89:
			src.DropWatches()
			counts[3]++
		case op < 92:
			src.ExpireWatches()
			counts[4]++
		case op < 95:
			src.Compact()
			counts[5]++
		case op < 97:
			src.Bookmark()
			counts[6]++
		default:
			settle() // let the informer catch up now and then
			counts[7]++
		}
		if rng.IntN(10) == 0 {
			synctest.Wait()
		}
	}
	t.Logf("creates %d updates %d deletes %d drops %d expiries %d compactions %d bookmarks %d settles %d",
		counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], counts[7])
	// A last change, so that an informer whose watch was cut after the
	// final operation reconnects and sees the end state.
	_, _ = src.Create(pod("ns", "last", ""))
	settle()
	settle()

	want := map[string]int64{}
	for k, p := range src.Objects() {
		want[k] = rvOf(p)
	}
	got := map[string]int64{}
	for _, p := range inf.Indexer().List() {
		got[key(p)] = rvOf(p)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("store differs from the source (-source +store):\n%s", d)
	}
	for name, c := range map[string]*checker{"early": early, "late": late} {
		if c == nil {
			continue
		}
		c.mu.Lock()
		if len(c.violations) > 0 {
			t.Errorf("%s handler saw inconsistent events:\n%v", name, c.violations)
		}
		if d := cmp.Diff(want, c.view); d != "" {
			t.Errorf("%s handler's view differs from the source (-source +handler):\n%s", name, d)
		}
		t.Logf("%s handler: %d events", name, c.events)
		c.mu.Unlock()
	}
}

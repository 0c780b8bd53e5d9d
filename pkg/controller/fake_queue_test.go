package controller

import (
	"fmt"
	"sync"
	"time"
)

// fakeQueue is an action-recording Queue with the workqueue's guarantees
// (dedup while waiting, no key handed out twice at once, re-queue on Done of
// a key added while processed) and no delays: AddRateLimited and AddAfter
// add at once, so tests that drive processNextWorkItem by hand see retries
// immediately.
type fakeQueue struct {
	mu   sync.Mutex
	cond *sync.Cond
	// queue is the ready keys in order; dirty is the keys that need
	// processing (ready, or added while processed); processing is the keys
	// handed out and not Done.
	queue      []string
	dirty      map[string]bool
	processing map[string]bool
	requeues   map[string]int
	shutdown   bool
	actions    []string
}

var _ Queue[string] = (*fakeQueue)(nil)

func newFakeQueue() *fakeQueue {
	q := &fakeQueue{dirty: map[string]bool{}, processing: map[string]bool{}, requeues: map[string]int{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *fakeQueue) record(format string, args ...any) {
	q.actions = append(q.actions, fmt.Sprintf(format, args...))
}

func (q *fakeQueue) addLocked(key string) {
	if q.shutdown || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if q.processing[key] {
		return
	}
	q.queue = append(q.queue, key)
	q.cond.Signal()
}

func (q *fakeQueue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record("add %s", key)
	q.addLocked(key)
}

func (q *fakeQueue) AddAfter(key string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record("addAfter %s %v", key, d)
	q.addLocked(key)
}

func (q *fakeQueue) AddRateLimited(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record("addRateLimited %s", key)
	q.requeues[key]++
	q.addLocked(key)
}

func (q *fakeQueue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record("forget %s", key)
	delete(q.requeues, key)
}

func (q *fakeQueue) NumRequeues(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.requeues[key]
}

func (q *fakeQueue) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.queue) == 0 {
		return "", true
	}
	key := q.queue[0]
	q.queue = q.queue[1:]
	q.processing[key] = true
	delete(q.dirty, key)
	q.record("get %s", key)
	return key, false
}

func (q *fakeQueue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record("done %s", key)
	delete(q.processing, key)
	if q.dirty[key] {
		q.queue = append(q.queue, key)
		q.cond.Signal()
	}
}

func (q *fakeQueue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.shutdown {
		q.record("shutdown")
	}
	q.shutdown = true
	q.cond.Broadcast()
}

func (q *fakeQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

func (q *fakeQueue) recorded() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.actions...)
}

func (q *fakeQueue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.actions = nil
}

// fakeMetrics counts what a Controller reports.
type fakeMetrics struct {
	mu                                 sync.Mutex
	results                            map[string]int
	durations                          []time.Duration
	terminal, panics, dropped, active  int
	maxActive, maxWorkers, activeCalls int
}

var _ Metrics = (*fakeMetrics)(nil)

func newFakeMetrics() *fakeMetrics { return &fakeMetrics{results: map[string]int{}} }

func (m *fakeMetrics) ObserveReconcile(_, result string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results[result]++
	m.durations = append(m.durations, d)
}
func (m *fakeMetrics) IncTerminalErrors(string) { m.mu.Lock(); m.terminal++; m.mu.Unlock() }
func (m *fakeMetrics) IncPanics(string)         { m.mu.Lock(); m.panics++; m.mu.Unlock() }
func (m *fakeMetrics) IncDropped(string)        { m.mu.Lock(); m.dropped++; m.mu.Unlock() }
func (m *fakeMetrics) SetMaxWorkers(_ string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxWorkers = n
}
func (m *fakeMetrics) AddActiveWorkers(_ string, d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active += d
	m.activeCalls++
	m.maxActive = max(m.maxActive, m.active)
}

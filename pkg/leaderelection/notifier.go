package leaderelection

import "sync"

// notifier hands new leader identities to OnNewLeader from one goroutine.
// It keeps only the latest identity not yet handed out: a slow callback
// skips intermediate leaders instead of buffering without bound.
type notifier struct {
	wake chan struct{} // size 1: a pending identity may exist

	mu      sync.Mutex
	pending string
	has     bool // pending is set and not yet handed out
}

func newNotifier() *notifier { return &notifier{wake: make(chan struct{}, 1)} }

// post makes id the pending identity. It never blocks.
func (n *notifier) post(id string) {
	n.mu.Lock()
	n.pending, n.has = id, true
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// take returns the pending identity, if any, and clears it.
func (n *notifier) take() (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, has := n.pending, n.has
	n.pending, n.has = "", false
	return id, has
}

// run calls f with each pending identity until stop is closed, then hands
// out the last pending one, if any, and returns.
func (n *notifier) run(stop <-chan struct{}, f func(string)) {
	for {
		select {
		case <-stop:
			if id, ok := n.take(); ok {
				f(id)
			}
			return
		case <-n.wake:
			if id, ok := n.take(); ok {
				f(id)
			}
		}
	}
}

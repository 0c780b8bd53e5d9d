// Package freshconn closes the connections an HTTP server accepted but that
// never sent a request, so that shutting the server down does not wait for
// them.
//
// net/http's Server.Shutdown treats a connection that has sent nothing yet
// (http.StateNew) as busy until it is five seconds old. HTTP clients open
// such connections ahead of need, so a server stopped right after being used
// would wait those five seconds. A Tracker, hooked in as the server's
// ConnState, remembers them and closes them when Stop is called.
package freshconn

import (
	"net"
	"net/http"
	"sync"
)

// Tracker remembers a server's connections that have not sent a request.
// The zero value is ready to use; it is safe for concurrent use.
type Tracker struct {
	mu sync.Mutex
	// stopping is set by Stop; connections accepted after it are closed at once.
	stopping bool
	// fresh holds the connections in http.StateNew.
	fresh map[net.Conn]struct{}
}

// ConnState is the http.Server ConnState hook.
func (t *Tracker) ConnState(c net.Conn, state http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if state != http.StateNew {
		delete(t.fresh, c)
		return
	}
	if t.stopping {
		_ = c.Close()
		return
	}
	if t.fresh == nil {
		t.fresh = map[net.Conn]struct{}{}
	}
	t.fresh[c] = struct{}{}
}

// Stop closes every connection that has not sent a request, and every one
// accepted from now on. Call it right before http.Server.Shutdown. It is
// idempotent.
func (t *Tracker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	for c := range t.fresh {
		_ = c.Close()
	}
	clear(t.fresh)
}

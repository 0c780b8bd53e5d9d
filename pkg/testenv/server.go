package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kplane/kplane/internal/freshconn"
)

// server serves an API server's handler on a listener for one
// environment. It does not use apiserver.Server.Run so that it can check
// credentials and stop in milliseconds: at stop it ends every request's
// context (which ends watches), closes connections that never sent a
// request at once (net/http's Shutdown would wait five seconds for them),
// and waits for every handler to return.
type server struct {
	http *http.Server
	ln   net.Listener
	// cancel ends the contexts of all requests.
	cancel context.CancelFunc
	// handlers counts running handlers.
	handlers sync.WaitGroup
	// done receives Serve's result once.
	done chan error

	// fresh closes the connections that never sent a request at stop.
	fresh freshconn.Tracker
}

// authenticator says whether a request carries the environment's
// credentials: its bearer token, or a client certificate the TLS layer
// verified against the environment's CA.
type authenticator struct {
	users *users
}

// open paths answer without credentials, as kube-apiserver's default
// roles let unauthenticated clients read health and version.
var openPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

func (a *authenticator) allowed(r *http.Request) bool {
	if openPaths[r.URL.Path] {
		return true
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && a.users.known(strings.TrimSpace(got))
}

// unauthorized is kube-apiserver's answer to a request without valid
// credentials.
const unauthorized = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"

// newServer prepares to serve h on ln.
// A nil auth leaves authentication to h.
func newServer(h http.Handler, ln net.Listener, auth *authenticator, logger *slog.Logger) *server {
	s := &server{ln: ln, done: make(chan error, 1)}
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.handlers.Add(1)
			defer s.handlers.Done()
			if auth != nil && !auth.allowed(r) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(unauthorized))
				return
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         s.fresh.ConnState,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	return s
}

// start serves in a new goroutine.
func (s *server) start() {
	go func() { s.done <- s.http.Serve(s.ln) }()
}

// stop ends every request, stops serving and waits for the serving
// goroutine and every handler. It must be called once, after start.
func (s *server) stop() error {
	s.fresh.Stop()
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), serverShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		// A handler ignored its cancelled context: cut its connection.
		_ = s.http.Close()
		err = fmt.Errorf("requests still running %v after shutdown began: %w", serverShutdownTimeout, err)
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	s.handlers.Wait()
	return err
}

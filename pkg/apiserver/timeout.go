package apiserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultRequestTimeout is kube-apiserver's --request-timeout default.
const DefaultRequestTimeout = 60 * time.Second

// timeoutMessage is the message of the 504 of a request out of time.
const timeoutMessage = "the server was unable to return a response in the time allotted, but may still be processing the request"

// withTimeout bounds non-long-running requests by Config.RequestTimeout
// (or the shorter ?timeout= of the request), as kube-apiserver's request
// deadline and timeout filters do: the handler's context gets that
// deadline, and when it passes before the handler answers the client gets
// a 504 Timeout Status at once while the handler, whose context is now
// done, finishes on its own; what it writes afterwards is dropped. A
// handler that had begun its answer cannot be told apart from a complete
// one, so its connection is cut instead.
func (s *Server) withTimeout(next http.Handler) http.Handler {
	if s.cfg.RequestTimeout < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := requestInfoFrom(r)
		if ri.longRunning() {
			next.ServeHTTP(w, r)
			return
		}
		timeout := s.cfg.RequestTimeout
		if v := r.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				s.writeError(w, r, apierrors.NewBadRequest("invalid timeout specified in the request URL"))
				return
			}
			if d > 0 && d < timeout {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		tw := &timeoutWriter{w: w, header: w.Header().Clone(), ctx: ctx}
		// The handler labels its metrics in a record of its own, copied
		// to the request's once it has returned: a handler running late
		// must not race the labels of the 504.
		shared := recordFrom(r.Context())
		own := *shared
		hctx := context.WithValue(ctx, recordKey{}, &own)
		done := make(chan struct{})
		var panicked any
		go func() {
			defer close(done)
			defer func() { panicked = recover() }()
			next.ServeHTTP(tw, r.WithContext(hctx))
		}()
		select {
		case <-done:
			*shared = own
			if panicked != nil {
				panic(panicked)
			}
			if !tw.dropped() {
				return
			}
			// The handler answered after the deadline: its answer was
			// dropped, the 504 is sent instead.
		case <-ctx.Done():
		}
		if !tw.timeOut() {
			// The handler had started its answer: it cannot be completed.
			panic(http.ErrAbortHandler)
		}
		err := &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusGatewayTimeout,
			Reason: metav1.StatusReasonTimeout, Message: timeoutMessage,
		}}
		s.terminate(w, r, ri, err)
	})
}

// timeoutWriter lets a handler write until its request times out; from
// then on its writes fail with http.ErrHandlerTimeout. The handler's
// header map is its own, copied to the real one when it writes its
// header, so that a handler running late cannot touch the 504's headers.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header
	// ctx is the handler's: once it is done, the handler's writes are
	// dropped even before the filter takes over, so that an error the
	// handler writes because its context ended does not race the 504.
	ctx context.Context

	mu          sync.Mutex
	wroteHeader bool // the handler's status line is sent
	timedOut    bool // the request timed out: the handler's writes are dropped
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

// lateLocked reports whether the handler's writes are to be dropped.
func (tw *timeoutWriter) lateLocked() bool {
	if !tw.timedOut && tw.ctx.Err() != nil {
		tw.timedOut = true
	}
	return tw.timedOut
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.lateLocked() || tw.wroteHeader {
		return
	}
	tw.wroteHeader = true
	dst := tw.w.Header()
	clear(dst)
	for k, v := range tw.header {
		dst[k] = v
	}
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.lateLocked() {
		return 0, http.ErrHandlerTimeout
	}
	tw.writeHeaderLocked(http.StatusOK)
	return tw.w.Write(b)
}

// Flush sends what the handler wrote so far.
func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.lateLocked() {
		return
	}
	if f, ok := tw.w.(http.Flusher); ok {
		tw.writeHeaderLocked(http.StatusOK)
		f.Flush()
	}
}

// dropped reports whether writes of the handler were dropped as late.
func (tw *timeoutWriter) dropped() bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.timedOut
}

// timeOut ends the handler's use of the writer and reports whether it had
// not begun its answer, so that the 504 may be sent.
func (tw *timeoutWriter) timeOut() bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
	return !tw.wroteHeader
}

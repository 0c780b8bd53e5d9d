package freshconn

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShutdownDoesNotWaitForFreshConnections holds a connection that never
// sends a request and checks that Shutdown, with a deadline well under
// net/http's five-second grace for such connections, completes. Without
// the Tracker the same Shutdown fails with the deadline (checked by the
// "without" case, so the test shows the difference it relies on).
func TestShutdownDoesNotWaitForFreshConnections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tracked bool
		wantErr error
	}{
		{"with tracker", true, nil},
		{"without tracker", false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var tr Tracker
			srv := &http.Server{Handler: http.NotFoundHandler()}
			accepted := make(chan struct{}, 1)
			srv.ConnState = func(c net.Conn, s http.ConnState) {
				if tc.tracked {
					tr.ConnState(c, s)
				}
				if s == http.StateNew {
					accepted <- struct{}{}
				}
			}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()

			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			<-accepted

			tr.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err = srv.Shutdown(ctx)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Shutdown = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				_ = srv.Close()
			}
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve = %v", err)
			}
			if tc.tracked {
				// The server closed the idle connection: the client reads EOF.
				if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
					t.Errorf("read on the fresh connection = %v, want EOF", err)
				}
			}
		})
	}
}

func TestConnectionsAcceptedAfterStopAreClosed(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	var tr Tracker
	tr.Stop()
	tr.Stop() // idempotent
	tr.ConnState(a, http.StateNew)
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write after Stop = %v, want the connection closed", err)
	}
}

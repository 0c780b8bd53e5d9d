package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
)

// watcher decodes one watch stream into typed events.
//
// One goroutine (receive) owns the response body and the result channel:
// it alone sends on result and closes it when the stream ends, on a decode
// error, or when done is closed. Stop closes done, cancels the request
// (which unblocks a read in progress) and waits for receive to exit.
type watcher[T cache.Object] struct {
	result   chan cache.Event[T] // unbuffered: a slow consumer holds the stream back (TCP pushes back on the server)
	done     chan struct{}       // closed by Stop
	exited   chan struct{}       // closed when receive returns
	cancel   context.CancelFunc  // cancels the HTTP request
	stopOnce sync.Once
}

// startWatch sends req (a watch request) and starts decoding its stream.
func startWatch[T cache.Object](ctx context.Context, c *Client, req Request, ec errorContext) (cache.Watch[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.send(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	c.handleWarnings(resp.Header)
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if rerr != nil {
			return nil, fmt.Errorf("client: watch %s: read response: %w", req.Path, rerr)
		}
		return nil, decodeError(resp, body, req.method(), ec)
	}
	w := &watcher[T]{
		result: make(chan cache.Event[T]),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		cancel: cancel,
	}
	go w.receive(resp.Body)
	return w, nil
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *watcher[T]) ResultChan() <-chan cache.Event[T] { return w.result }

// Stop ends the watch and waits until the stream is closed and ResultChan
// is closed. It is idempotent and safe from any goroutine, but must not be
// called while holding up the receiver of ResultChan in a way that needs
// the channel drained: Stop does not drain it and does not need to.
func (w *watcher[T]) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.cancel()
	})
	<-w.exited
}

func (w *watcher[T]) receive(body io.ReadCloser) {
	defer close(w.exited)
	defer close(w.result)
	defer w.cancel()
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		ev, err := decodeEvent[T](dec)
		if err != nil {
			if errors.Is(err, io.EOF) || w.stopped() {
				return
			}
			// A stream that breaks mid-way (connection reset, server gone,
			// ctx cancelled) just ends the watch, as client-go does; only
			// bytes that are not a watch event are reported.
			var se *json.SyntaxError
			var ue *json.UnmarshalTypeError
			var de *eventError
			if !errors.As(err, &se) && !errors.As(err, &ue) && !errors.As(err, &de) {
				return
			}
			ev = cache.Event[T]{Type: watch.Error, Status: &metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusInternalServerError,
				Reason:  metav1.StatusReasonInternalError,
				Message: fmt.Sprintf("unable to decode an event from the watch stream: %v", err),
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ClientWatchDecoding", Message: err.Error()}}},
			}}
			w.send(ev)
			return
		}
		if !w.send(ev) {
			return
		}
	}
}

// send delivers ev unless the watch is stopped first.
func (w *watcher[T]) send(ev cache.Event[T]) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

func (w *watcher[T]) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// eventError is a well-formed JSON value that is not a valid watch event.
type eventError struct{ msg string }

func (e *eventError) Error() string { return e.msg }

// wireEvent is a watch event as the API sends it (metav1.WatchEvent).
type wireEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// decodeEvent reads the next event from dec.
func decodeEvent[T cache.Object](dec *json.Decoder) (cache.Event[T], error) {
	var we wireEvent
	if err := dec.Decode(&we); err != nil {
		return cache.Event[T]{}, err
	}
	return parseEvent[T](we)
}

// parseEvent turns a wire event into a typed one.
func parseEvent[T cache.Object](we wireEvent) (cache.Event[T], error) {
	ev := cache.Event[T]{Type: we.Type}
	switch we.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if len(we.Object) == 0 || string(we.Object) == "null" {
			return ev, &eventError{fmt.Sprintf("%s event has no object", we.Type)}
		}
		if err := decodeEventObject(we.Object, &ev.Object); err != nil {
			return ev, &eventError{fmt.Sprintf("decode %s event object: %v", we.Type, err)}
		}
	case watch.Error:
		var st metav1.Status
		if len(we.Object) > 0 {
			if err := utiljson.Unmarshal(we.Object, &st); err != nil {
				return ev, &eventError{fmt.Sprintf("decode ERROR event status: %v", err)}
			}
		}
		ev.Status = &st
	default:
		return ev, &eventError{fmt.Sprintf("got invalid watch event type: %q", we.Type)}
	}
	return ev, nil
}

// decodeEventObject decodes the object of an event into *out. An
// *unstructured.Unstructured is decoded as a plain JSON object, without
// the apiVersion and kind its UnmarshalJSON insists on: a bookmark's object
// may carry no kind (kplane's bookmarks of custom resources do not), and a
// typed watch does not require one either.
func decodeEventObject[T cache.Object](data []byte, out *T) error {
	if u, ok := any(out).(**unstructured.Unstructured); ok {
		var m map[string]any
		if err := utiljson.Unmarshal(data, &m); err != nil {
			return err
		}
		if m == nil {
			return errors.New("object is null")
		}
		*u = &unstructured.Unstructured{Object: m}
		return nil
	}
	return utiljson.Unmarshal(data, out)
}

// isNilPointer reports whether v is a nil pointer (or nil interface).
func isNilPointer(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

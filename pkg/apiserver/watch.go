package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

// serveWatch streams the changes of a collection (or of one named object)
// until the client goes away, the timeout passes, the storage ends the
// watch or the server shuts down: newline-delimited JSON events, or
// length-delimited protobuf ones for a client that asks for protobuf (see
// encodeProtobufEvent). YAML has no stream framing: a client that asks
// for it first is answered 406, as kube-apiserver does.
//
// A resourceVersion too old to resume from is answered, as kube-apiserver
// does, with a 200 stream holding one ERROR event whose Status is 410
// Expired; clients then relist.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err == nil && f.media == mediaYAML {
		err = notAcceptableWatch()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	contentType := f.media.contentType()
	if f.media != mediaJSON {
		contentType += ";stream=watch"
	}
	opts, err := parseListOptions(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	timeout := time.Duration(float64(s.cfg.MinRequestTimeout) * (1 + rand.Float64()))
	if t := opts.timeoutSeconds; t != nil && *t > 0 {
		timeout = time.Duration(*t) * time.Second
	}
	if t := opts.timeoutSeconds; t != nil && *t < 0 {
		// kube-apiserver's watch timer fires at once for a negative
		// timeout: the stream ends empty.
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	watcher, err := q.res.store.Watch(ctx, q.res.prefix(q.namespace), opts.storage)
	if err != nil {
		se := toStatusError(err, q.gr(), q.name)
		if se.ErrStatus.Code != http.StatusGone {
			s.writeErrorFor(w, r, err, q.gr(), q.name)
			return
		}
		// Too old: a stream holding one ERROR event.
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(s.encodeEvent(q.res, storage.Event{Type: watch.Error, Object: &se.ErrStatus}, f, tableOptions(r)))
		return
	}
	defer watcher.Stop()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		s.log.Debug("watch: flush not supported", "err", err)
	}
	timer := s.clock.NewTimer(timeout)
	defer timer.Stop()
	stop := stopping(r.Context())
	tableOpts := tableOptions(r)
	events := watcher.ResultChan()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-timer.C():
			return
		case <-q.res.gone:
			// The CRD is gone: its objects are, and so is this watch.
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type == watch.Bookmark && !opts.allowWatchBookmarks {
				// Not for this client; still flush what the burst before
				// it wrote, or it would wait for the next event.
				if len(events) == 0 {
					if err := rc.Flush(); err != nil {
						return
					}
				}
				continue
			}
			if _, err := w.Write(s.encodeEvent(q.res, ev, f, tableOpts)); err != nil {
				return
			}
			// Batch a burst of events into one flush.
			if len(events) == 0 {
				if err := rc.Flush(); err != nil {
					return
				}
			}
			if ev.Type == watch.Error {
				_ = rc.Flush()
				return
			}
		}
	}
}

// encodeEvent renders one event as a JSON line or a protobuf frame.
func (s *Server) encodeEvent(res *resource, ev storage.Event, f format, tableOpts metav1.TableOptions) []byte {
	if f.media == mediaProtobuf {
		return s.encodeProtobufWatchEvent(res, ev, f)
	}
	var obj []byte
	var err error
	switch {
	case ev.Type == watch.Error:
		obj, err = json.Marshal(eventStatus(ev))
	case f.view == viewTable && ev.Type != watch.Bookmark:
		var table *metav1.Table
		if table, err = s.toTable(ev.Object, tableOpts); err == nil {
			table.APIVersion, table.Kind = metav1.GroupName+"/"+f.version, "Table"
			obj, err = json.Marshal(table)
		}
	case f.view == viewMetadata:
		var m runtime.Object
		if m, err = toMetadata(ev.Object, f.version); err == nil {
			obj, err = json.Marshal(m)
		}
	case ev.Raw != nil && s.rawIsJSON && res.storedAsServed():
		obj = withTypeMeta(ev.Raw, res.info.GVK)
	default:
		if obj, err = marshalJSON(res.asServed(ev.Object)); err == nil {
			obj = withTypeMeta(obj, res.info.GVK)
		}
	}
	if err != nil {
		obj, _ = json.Marshal(encodeFailure(err))
		ev.Type = watch.Error
	}
	// Written by hand: json.Marshal would re-validate and compact the
	// object, once per watcher, though it is already compact JSON.
	line := make([]byte, 0, len(obj)+len(ev.Type)+24)
	line = append(line, `{"type":`...)
	line = strconv.AppendQuote(line, string(ev.Type))
	line = append(line, `,"object":`...)
	line = append(line, obj...)
	return append(line, "}\n"...)
}

// encodeProtobufWatchEvent renders one event as a protobuf frame. The
// event's object is shared with other watchers: its kind is given to the
// encoder rather than set on it, and its encoding is shared with them too
// (see protoEventCache).
func (s *Server) encodeProtobufWatchEvent(res *resource, ev storage.Event, f format) []byte {
	var frame []byte
	var err error
	switch {
	case ev.Type == watch.Error:
		st := eventStatus(ev)
		frame, err = encodeProtobufEvent(ev.Type, st, st.GroupVersionKind())
	case ev.Type == watch.Bookmark:
		// Bookmarks are not shared: nothing to remember.
		obj, gvk, perr := protobufEventObject(res, ev, f)
		if err = perr; err == nil {
			frame, err = encodeProtobufEvent(ev.Type, obj, gvk)
		}
	default:
		var env []byte
		env, err = s.protoEvents.envelope(protoEventKey{obj: ev.Object, gvk: res.info.GVK, f: f}, func() ([]byte, error) {
			obj, gvk, err := protobufEventObject(res, ev, f)
			if err != nil {
				return nil, err
			}
			return encodeProtobuf(obj, gvk)
		})
		if err == nil {
			frame = protobufEventFrame(ev.Type, env)
		}
	}
	if err != nil {
		st := encodeFailure(err)
		frame, _ = encodeProtobufEvent(watch.Error, st, st.GroupVersionKind())
	}
	return frame
}

// protobufEventObject is what a protobuf watcher gets of an event's
// object, and its kind: the object itself, or its metadata.
func protobufEventObject(res *resource, ev storage.Event, f format) (runtime.Object, schema.GroupVersionKind, error) {
	if f.view == viewMetadata {
		obj, err := toMetadata(ev.Object, f.version)
		if err != nil {
			return nil, schema.GroupVersionKind{}, err
		}
		return obj, obj.GetObjectKind().GroupVersionKind(), nil
	}
	return ev.Object, res.info.GVK, nil
}

// eventStatus is the Status of an Error event, with its kind and status
// set (on a copy: the event is shared).
func eventStatus(ev storage.Event) *metav1.Status {
	st, ok := ev.Object.(*metav1.Status)
	if !ok {
		st = &apierrors.NewInternalError(fmt.Errorf("watch error: %v", ev.Object)).ErrStatus
	}
	cp := *st
	cp.Kind, cp.APIVersion = "Status", "v1"
	if cp.Status == "" {
		cp.Status = metav1.StatusFailure
	}
	return &cp
}

// encodeFailure is the Status of an Error event sent in place of an event
// that could not be encoded.
func encodeFailure(err error) *metav1.Status {
	st := apierrors.NewInternalError(fmt.Errorf("encode watch event: %w", err)).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// withTypeMeta makes sure an encoded object starts with its kind and
// apiVersion; objects stored by the server already do, and shared event
// objects must not be mutated to add them.
func withTypeMeta(raw []byte, gvk schema.GroupVersionKind) []byte {
	if bytes.HasPrefix(raw, []byte(`{"kind":`)) || bytes.HasPrefix(raw, []byte(`{"apiVersion":`)) || len(raw) < 2 || raw[0] != '{' {
		return raw
	}
	head := fmt.Sprintf(`{"kind":%q,"apiVersion":%q`, gvk.Kind, gvk.GroupVersion().String())
	out := make([]byte, 0, len(raw)+len(head)+1)
	out = append(out, head...)
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

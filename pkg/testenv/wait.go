package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// Key returns the key of obj for Wait and WaitFor: "namespace/name", or
// "name" when obj has no namespace.
func Key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// WaitFor waits until cond holds for the object of res at key
// ("namespace/name", or "name" for a cluster-scoped resource) and returns
// the object it held for. It waits at most the environment's wait timeout
// (WithWaitTimeout) and never past the test's deadline; when the time is
// up it fails the test with t.Fatal and a message that shows the object's
// last state. See Wait for the details; WaitFor must be called from the
// test's goroutine.
func WaitFor[T cache.Object](t testing.TB, env *Env, res client.Resource[T], key string, cond func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), env.waitTimeoutFor(t))
	defer cancel()
	obj, err := Wait(ctx, env.Client, res, key, cond)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// waitTimeoutFor is the env's wait timeout, cut to leave a twentieth of
// the time to t's deadline for the failure to be reported.
func (e *Env) waitTimeoutFor(t testing.TB) time.Duration {
	d := e.waitTimeout
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := dt.Deadline(); ok {
			left := time.Until(deadline)
			d = min(d, left-left/20)
		}
	}
	return d
}

// Wait waits until cond holds for the object of res at key ("namespace/name",
// or "name" for a cluster-scoped resource) and returns the object it held
// for. cond sees the object's states in order, starting with its current
// one: every state while the watch lasts (when a watch ends, the object is
// listed again, and states between are not seen). It is not called while
// the object does not exist.
//
// Wait lists the one object and then watches it from the list's
// resourceVersion, listing again when the watch ends or expires, so no
// change is missed and nothing is polled. When ctx ends first, the error
// names the object and shows its last state as YAML (or says that it never
// existed, or was deleted); an error the server returns other than 410
// Gone ends the wait too.
func Wait[T cache.Object](ctx context.Context, c *client.Client, res client.Resource[T], key string, cond func(T) bool) (T, error) {
	return wait(ctx, c, res, key, "condition not met", func(obj T, exists bool) bool { return exists && cond(obj) })
}

// WaitForDeletion waits until the object of res at key does not exist,
// watching as Wait does. It returns at once when the object does not
// exist. On a timeout it fails the test with t.Fatal and the object's last
// state; it must be called from the test's goroutine.
func WaitForDeletion[T cache.Object](t testing.TB, env *Env, res client.Resource[T], key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), env.waitTimeoutFor(t))
	defer cancel()
	if err := WaitDeleted(ctx, env.Client, res, key); err != nil {
		t.Fatal(err)
	}
}

// WaitDeleted waits until the object of res at key does not exist, as
// WaitForDeletion does, until ctx ends.
func WaitDeleted[T cache.Object](ctx context.Context, c *client.Client, res client.Resource[T], key string) error {
	_, err := wait(ctx, c, res, key, "not deleted", func(_ T, exists bool) bool { return !exists })
	return err
}

// wait waits until done holds for the object's state; done sees every
// state, and exists false when the object does not exist. goal names the
// failure ("condition not met").
func wait[T cache.Object](ctx context.Context, c *client.Client, res client.Resource[T], key, goal string, done func(obj T, exists bool) bool) (T, error) {
	var zero T
	ns, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return zero, fmt.Errorf("testenv: wait for %s %q: %w", res.Kind, key, err)
	}
	if res.Namespaced && ns == "" {
		return zero, fmt.Errorf("testenv: wait for %s %q: %s is namespaced, the key must be namespace/name", res.Kind, key, res.Resource)
	}
	if !res.Namespaced && ns != "" {
		return zero, fmt.Errorf("testenv: wait for %s %q: %s is cluster-scoped, the key must be a name", res.Kind, key, res.Resource)
	}
	rc := client.NewResource(c, res).Namespace(ns)
	w := waiter[T]{res: res, key: key, name: name, rc: rc, goal: goal, done: done, began: time.Now()}
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		list, err := rc.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return zero, w.failed(ctx, err)
		}
		if len(list.Items) > 0 {
			if w.see(list.Items[0], true) {
				return w.last, nil
			}
		} else if w.gone() {
			return w.last, nil
		}
		watcher, err := rc.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			continue
		}
		if err != nil {
			return zero, w.failed(ctx, err)
		}
		held, err := w.follow(ctx, watcher)
		watcher.Stop()
		if held {
			return w.last, nil
		}
		if err != nil {
			return zero, err
		}
	}
}

// waiter is the progress of one Wait.
type waiter[T cache.Object] struct {
	res   client.Resource[T]
	key   string
	name  string
	rc    *client.ResourceClient[T]
	goal  string
	done  func(obj T, exists bool) bool
	began time.Time
	// last is the newest state seen, valid when seen.
	last T
	seen bool
	// exists is false before the object was first seen and after it was
	// deleted; deleted says the latter.
	exists, deleted bool
	// states counts the states of the existing object seen.
	states int
}

// see records a state of the object (exists false: its deletion, obj
// its final state) and reports whether the wait is over.
func (w *waiter[T]) see(obj T, exists bool) bool {
	w.last, w.seen = obj, true
	w.exists, w.deleted = exists, !exists
	if exists {
		w.states++
	}
	return w.done(obj, exists)
}

// gone records that a list found no object and reports whether the wait
// is over.
func (w *waiter[T]) gone() bool {
	if w.exists {
		w.exists, w.deleted = false, true
	}
	var zero T
	return w.done(zero, false)
}

// follow feeds the watch's events to done until it holds (true), the
// watch ends (false, nil: list again) or ctx ends (false, error).
func (w *waiter[T]) follow(ctx context.Context, watcher cache.Watch[T]) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, w.failed(ctx, ctx.Err())
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if w.see(ev.Object, true) {
					return true, nil
				}
			case watch.Deleted:
				if w.see(ev.Object, false) {
					return true, nil
				}
			case watch.Error:
				return false, nil // 410 or another stream failure: list again
			}
		}
	}
}

// failed builds Wait's error: a timeout showing the last state, or err.
func (w *waiter[T]) failed(ctx context.Context, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "testenv: %s %s: ", w.res.Kind, w.key)
	if ctx.Err() != nil {
		fmt.Fprintf(&b, "%s after %v", w.goal, time.Since(w.began).Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "wait failed after %v: %v", time.Since(w.began).Round(time.Millisecond), err)
	}
	switch {
	case !w.seen:
		// Time ran out before the first list answered: read the object
		// now, on a context of its own, to show what the condition
		// would have seen.
		gctx, cancel := context.WithTimeout(context.Background(), failureReadTimeout)
		obj, gerr := w.rc.Get(gctx, w.name, metav1.GetOptions{})
		cancel()
		switch {
		case gerr == nil:
			fmt.Fprintf(&b, "; the condition was never evaluated; current state:\n%s", objectYAML(obj))
		case apierrors.IsNotFound(gerr):
			b.WriteString("; the object does not exist")
		default:
			fmt.Fprintf(&b, "; the object was never read (%v)", gerr)
		}
	case w.deleted:
		fmt.Fprintf(&b, "; the object was deleted after %d states seen; last state before deletion:\n%s", w.states, objectYAML(w.last))
	default:
		fmt.Fprintf(&b, "; %d states seen; last state:\n%s", w.states, objectYAML(w.last))
	}
	if ctx.Err() != nil {
		return &waitError{msg: b.String(), err: ctx.Err()}
	}
	return &waitError{msg: b.String(), err: err}
}

// failureReadTimeout bounds the read of an object for a failure message.
const failureReadTimeout = 5 * time.Second

// waitError keeps the cause (context.DeadlineExceeded or the server's
// error) for errors.Is and errors.As.
type waitError struct {
	msg string
	err error
}

func (e *waitError) Error() string { return e.msg }
func (e *waitError) Unwrap() error { return e.err }

// objectYAML renders obj for people: YAML without managedFields, indented.
func objectYAML(obj any) string {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("  (cannot render %T: %v)", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Sprintf("  (cannot render %T: %v)", obj, err)
	}
	return indent(renderYAML(m), "  ")
}

// renderYAML writes one object as YAML without its managedFields.
func renderYAML(m map[string]any) string {
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return fmt.Sprintf("(cannot render: %v)\n", err)
	}
	return string(out)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

package client

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
)

// TestRetryAfter checks the retries of answers that carry Retry-After, on
// a fake clock: the client waits exactly as long as told, re-sends the same
// body, and gives up after MaxRetries.
func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		answers    []int // status codes before success; all with Retry-After: 2
		maxRetries int
		wantCalls  int
		wantErr    func(error) bool
	}{
		{"429 then success", []int{429, 429}, 0, 3, nil},
		{"503 then success", []int{503}, 0, 2, nil},
		{"retries exhausted", []int{429, 429, 429}, 2, 3, apierrors.IsTooManyRequests},
		{"retries disabled", []int{500}, -1, 1, apierrors.IsInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(time.Unix(0, 0))
			var mu sync.Mutex
			var bodies []string
			rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if len(bodies) < len(tt.answers) {
					code := tt.answers[len(bodies)]
					bodies = append(bodies, "")
					w.Header().Set("Retry-After", "2")
					writeStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: "busy"}})
					return
				}
				bodies = append(bodies, "")
				writeJSON(w, http.StatusCreated, testPod("ns1", "p1"))
			}, func(cfg *Config) { cfg.Clock = clk; cfg.MaxRetries = tt.maxRetries })

			done := make(chan error, 1)
			go func() {
				_, err := NewResource(c, Pods).Create(context.Background(), testPod("ns1", "p1"), metav1.CreateOptions{})
				done <- err
			}()
			var err error
		loop:
			for {
				select {
				case err = <-done:
					break loop
				default:
				}
				if clk.HasWaiters() {
					clk.Step(time.Second)
					if clk.HasWaiters() {
						clk.Step(time.Second) // a wait of exactly two seconds ends here
					} else {
						t.Fatal("the client retried after one second; Retry-After said two")
					}
				}
				select {
				case err = <-done:
					break loop
				case <-time.After(time.Millisecond): // poll for the client's next wait
				}
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !tt.wantErr(err) {
				t.Fatalf("error = %v", err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.reqs) != tt.wantCalls {
				t.Fatalf("server saw %d requests, want %d", len(rec.reqs), tt.wantCalls)
			}
			for _, r := range rec.reqs[1:] {
				if diff := cmp.Diff(rec.reqs[0].Body, r.Body); diff != "" || r.Method != "POST" {
					t.Errorf("retry differs from the first request: %s %s", r.Method, diff)
				}
			}
		})
	}
}

// TestNoRetryWithoutRetryAfter checks that errors without Retry-After are
// returned at once.
func TestNoRetryWithoutRetryAfter(t *testing.T) {
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, apierrors.NewServiceUnavailable("down"))
	})
	if _, err := NewResource(c, Pods).Namespace("a").Get(context.Background(), "b", metav1.GetOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error = %v", err)
	}
	if n := len(rec.reqs); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestWarnings checks that 299 warnings reach the WarningHandler, on
// success, on errors and on watches.
func TestWarnings(t *testing.T) {
	var mu sync.Mutex
	var got []string
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Warning", `299 - "unknown field \"spec.bogus\""`)
		w.Header().Add("Warning", `299 - "second", 199 - "not a 299"`)
		switch {
		case r.URL.Query().Get("watch") == "true":
			streamHandler(nil, false)(w, r)
		case r.Method == http.MethodDelete:
			writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), "p"))
		default:
			writeJSON(w, http.StatusOK, testPod("a", "p"))
		}
	}, func(cfg *Config) {
		cfg.WarningHandler = func(text string) {
			mu.Lock()
			got = append(got, text)
			mu.Unlock()
		}
	})
	pods := NewResource(c, Pods).Namespace("a")
	ctx := context.Background()
	if _, err := pods.Create(ctx, testPod("a", "p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	want := strings.Repeat(`unknown field "spec.bogus"|second|`, 3)
	if g := strings.Join(got, "|") + "|"; g != want {
		t.Errorf("warnings = %q, want %q", g, want)
	}
}

package workqueue

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoff(t *testing.T) {
	const maxDur = time.Duration(math.MaxInt64)
	tests := []struct {
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{5 * time.Millisecond, 1000 * time.Second, 0, 5 * time.Millisecond},
		{5 * time.Millisecond, 1000 * time.Second, 1, 10 * time.Millisecond},
		{5 * time.Millisecond, 1000 * time.Second, 10, 5120 * time.Millisecond},
		{5 * time.Millisecond, 1000 * time.Second, 17, 655360 * time.Millisecond},
		{5 * time.Millisecond, 1000 * time.Second, 18, 1000 * time.Second},
		{5 * time.Millisecond, 1000 * time.Second, 1000, 1000 * time.Second},
		{5 * time.Millisecond, 1000 * time.Second, math.MaxInt, 1000 * time.Second},
		{1, maxDur, 62, 1 << 62},
		{1, maxDur, 63, maxDur},
		{1, maxDur, 64, maxDur},
		{2, maxDur, 62, maxDur},
		{3, maxDur, 61, 3 << 61},
		{4, maxDur, 61, maxDur},
		{maxDur, maxDur, 1, maxDur},
		{time.Second, time.Second, 0, time.Second},
	}
	for _, tt := range tests {
		if got := backoff(tt.base, tt.max, tt.n); got != tt.want || got < 0 {
			t.Errorf("backoff(%v, %v, %d) = %v, want %v", tt.base, tt.max, tt.n, got, tt.want)
		}
	}
}

// whens calls When n times for item and returns the delays.
func whens[T comparable](l RateLimiter[T], item T, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, l.When(item))
	}
	return out
}

// mustWhens calls When for item once per delay in want, expecting those
// delays and then as many failures counted.
func mustWhens(t *testing.T, l RateLimiter[string], item string, want []time.Duration) {
	t.Helper()
	if diff := cmp.Diff(want, whens(l, item, len(want))); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues(item); n != len(want) {
		t.Errorf("NumRequeues = %d, want %d", n, len(want))
	}
}

func TestExponentialLimiter(t *testing.T) {
	ms := time.Millisecond
	l, err := NewExponentialLimiter[string](ExponentialConfig{Base: ms, Max: 10 * ms})
	mustNoErr(t, err)
	if diff := cmp.Diff([]time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms, 10 * ms}, whens[string](l, "a", 6)); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if got := l.NumRequeues("a"); got != 6 {
		t.Errorf("NumRequeues(a) = %d, want 6", got)
	}
	if got := l.When("b"); got != ms {
		t.Errorf("When(b) = %v, want %v: items are independent", got, ms)
	}
	l.Forget("a")
	if got := l.NumRequeues("a"); got != 0 {
		t.Errorf("NumRequeues after Forget = %d", got)
	}
	if got := l.When("a"); got != ms {
		t.Errorf("When after Forget = %v, want %v", got, ms)
	}
	if got := l.NumRequeues("b"); got != 1 {
		t.Errorf("Forget(a) changed b: NumRequeues(b) = %d", got)
	}

	def, err := NewExponentialLimiter[string](ExponentialConfig{})
	mustNoErr(t, err)
	got := whens[string](def, "x", 300)
	if got[0] != DefaultExponentialBase || got[1] != 2*DefaultExponentialBase {
		t.Errorf("default delays start %v, want 5ms, 10ms", got[:2])
	}
	for i, d := range got {
		if d <= 0 || d > DefaultExponentialMax {
			t.Fatalf("delay %d = %v, outside (0, %v]", i, d, DefaultExponentialMax)
		}
	}
	if got[299] != DefaultExponentialMax {
		t.Errorf("delay after 300 failures = %v, want the cap", got[299])
	}
}

func TestFastSlowLimiter(t *testing.T) {
	f, s := time.Millisecond, time.Minute
	l, err := NewFastSlowLimiter[string](FastSlowConfig{Fast: f, Slow: s, FastAttempts: 3})
	mustNoErr(t, err)
	if diff := cmp.Diff([]time.Duration{f, f, f, s, s}, whens[string](l, "a", 5)); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if got := l.NumRequeues("a"); got != 5 {
		t.Errorf("NumRequeues = %d, want 5", got)
	}
	l.Forget("a")
	if got := l.When("a"); got != f {
		t.Errorf("When after Forget = %v, want fast", got)
	}
	allSlow, err := NewFastSlowLimiter[string](FastSlowConfig{Slow: s})
	mustNoErr(t, err)
	if got := allSlow.When("a"); got != s {
		t.Errorf("zero fast attempts: When = %v, want slow", got)
	}
}

func TestBucketLimiter(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	l, err := NewBucketLimiter[string](BucketConfig{QPS: 2, Burst: 3, Clock: fc})
	mustNoErr(t, err)
	ms := time.Millisecond
	// The burst goes at once, then one token every 500ms, across all items.
	got := []time.Duration{l.When("a"), l.When("b"), l.When("a"), l.When("c"), l.When("d")}
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 500 * ms, 1000 * ms}, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	fc.Step(10 * time.Second) // refills the bucket up to its burst
	got = whens[string](l, "a", 4)
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 500 * ms}, got); diff != "" {
		t.Errorf("delays after refill (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues("a"); n != 0 {
		t.Errorf("NumRequeues = %d, want 0", n)
	}
	l.Forget("a") // no effect, no panic

	def, err := NewBucketLimiter[string](BucketConfig{Clock: fc})
	mustNoErr(t, err)
	for i := range DefaultBucketBurst {
		if d := def.When("a"); d != 0 {
			t.Fatalf("default bucket: When %d = %v inside the burst", i, d)
		}
	}
	if d := def.When("a"); d != 100*ms {
		t.Errorf("default bucket: first When past the burst = %v, want 100ms", d)
	}
	inf, err := NewBucketLimiter[string](BucketConfig{QPS: math.Inf(1), Burst: 1, Clock: fc})
	mustNoErr(t, err)
	for range 10 {
		if d := inf.When("a"); d != 0 {
			t.Fatalf("infinite rate: When = %v", d)
		}
	}
}

func TestMaxOfLimiter(t *testing.T) {
	fast, err := NewFastSlowLimiter[string](FastSlowConfig{Fast: time.Millisecond, Slow: time.Hour, FastAttempts: 2})
	mustNoErr(t, err)
	exp, err := NewExponentialLimiter[string](ExponentialConfig{Base: 100 * time.Microsecond, Max: time.Second})
	mustNoErr(t, err)
	l, err := NewMaxOfLimiter[string](fast, exp)
	mustNoErr(t, err)
	us := time.Microsecond
	got := whens[string](l, "a", 5)
	want := []time.Duration{1000 * us, 1000 * us, time.Hour, time.Hour, time.Hour}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	exp.When("a") // exp now counts 6 failures, fast 5
	if n := l.NumRequeues("a"); n != 6 {
		t.Errorf("NumRequeues = %d, want the highest, 6", n)
	}
	l.Forget("a")
	if fast.NumRequeues("a") != 0 || exp.NumRequeues("a") != 0 {
		t.Error("Forget did not reach every limiter")
	}
}

// The max-wait limiter is client-go's WithMaxWaitRateLimiter: the wrapped
// limiter's delays, capped; its failures, untouched by the cap.
func TestMaxWaitLimiter(t *testing.T) {
	ms := time.Millisecond
	exp, err := NewExponentialLimiter[string](ExponentialConfig{Base: ms, Max: time.Hour})
	mustNoErr(t, err)
	l, err := NewMaxWaitLimiter(MaxWaitConfig[string]{Limiter: exp, Max: 5 * ms})
	mustNoErr(t, err)
	mustWhens(t, l, "a", []time.Duration{ms, 2 * ms, 4 * ms, 5 * ms, 5 * ms})
	l.Forget("a")
	if n := exp.NumRequeues("a"); n != 0 {
		t.Errorf("Forget did not reach the wrapped limiter: %d failures left", n)
	}
	zero, err := NewMaxWaitLimiter(MaxWaitConfig[string]{Limiter: exp})
	mustNoErr(t, err)
	if d := zero.When("b"); d != 0 {
		t.Errorf("a zero cap gave %v, want 0", d)
	}
}

func TestDefaultControllerRateLimiter(t *testing.T) {
	l := DefaultControllerRateLimiter[string]()
	ms := time.Millisecond
	// Far inside the bucket's burst, the exponential backoff decides.
	mustWhens(t, l, "a", []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms})
	l.Forget("a")
	if n := l.NumRequeues("a"); n != 0 {
		t.Errorf("NumRequeues after Forget = %d", n)
	}
	// Past the burst the bucket decides: 100 tokens, then one per 100ms.
	var last time.Duration
	for i := range 110 {
		last = l.When(string(rune('a' + i%26)))
	}
	if last < 500*ms {
		t.Errorf("110th retry within a moment got %v, want the bucket to push it out", last)
	}
}

func TestLimiterConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"negative base", second(NewExponentialLimiter[string](ExponentialConfig{Base: -1}))},
		{"negative max", second(NewExponentialLimiter[string](ExponentialConfig{Max: -1}))},
		{"negative fast", second(NewFastSlowLimiter[string](FastSlowConfig{Fast: -1}))},
		{"negative slow", second(NewFastSlowLimiter[string](FastSlowConfig{Slow: -1}))},
		{"negative attempts", second(NewFastSlowLimiter[string](FastSlowConfig{FastAttempts: -1}))},
		{"negative qps", second(NewBucketLimiter[string](BucketConfig{QPS: -1}))},
		{"NaN qps", second(NewBucketLimiter[string](BucketConfig{QPS: math.NaN()}))},
		{"negative burst", second(NewBucketLimiter[string](BucketConfig{Burst: -1}))},
		{"no limiters", second(NewMaxOfLimiter[string]())},
		{"nil limiter", second(NewMaxOfLimiter[string](DefaultControllerRateLimiter[string](), nil))},
		{"max-wait without limiter", second(NewMaxWaitLimiter(MaxWaitConfig[string]{Max: time.Second}))},
		{"negative max wait", second(NewMaxWaitLimiter(MaxWaitConfig[string]{Limiter: DefaultControllerRateLimiter[string](), Max: -1}))},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func second[A any](_ A, err error) error { return err }

// client-go's exponential limiter takes a base above its cap and returns
// the cap for every failure; a port that passes such values must not fail.
func TestExponentialLimiterBaseAboveMaxReturnsMaxAsClientGo(t *testing.T) {
	for _, cfg := range []ExponentialConfig{
		{Base: time.Second, Max: time.Millisecond},
		{Max: time.Millisecond}, // below the default base
	} {
		l, err := NewExponentialLimiter[string](cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		for i := range 3 {
			if d := l.When("a"); d != time.Millisecond {
				t.Fatalf("%+v: failure %d delay %v, want the cap 1ms", cfg, i+1, d)
			}
		}
		if n := l.NumRequeues("a"); n != 3 {
			t.Fatalf("NumRequeues = %d, want 3", n)
		}
	}
}

func TestRateLimitingQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		exp, err := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Minute})
		mustNoErr(t, err)
		q, err := NewRateLimiting(RateLimitingConfig[string]{Config: Config{Clock: fc}, RateLimiter: exp})
		mustNoErr(t, err)
		defer q.ShutDown()

		q.AddRateLimited("a") // 1s
		synctest.Wait()
		if q.NumRequeues("a") != 1 || q.Len() != 0 {
			t.Fatalf("after one AddRateLimited: NumRequeues %d Len %d", q.NumRequeues("a"), q.Len())
		}
		fc.Step(time.Second)
		synctest.Wait()
		if q.Len() != 1 {
			t.Fatal("rate-limited item not ready after its delay")
		}
		item, _ := q.Get()
		q.AddRateLimited(item) // 2s, while processing
		q.Done(item)
		fc.Step(time.Second)
		synctest.Wait()
		if q.Len() != 0 {
			t.Fatal("second retry came before its 2s backoff")
		}
		fc.Step(time.Second)
		synctest.Wait()
		if q.Len() != 1 || q.NumRequeues("a") != 2 {
			t.Fatalf("after the 2s backoff: Len %d NumRequeues %d", q.Len(), q.NumRequeues("a"))
		}
		q.Forget("a")
		if q.NumRequeues("a") != 0 {
			t.Fatal("Forget did not reset the failures")
		}
		if q.Len() != 1 {
			t.Fatal("Forget removed the item from the queue")
		}
		q.ShutDown()
		q.AddRateLimited("b")
		if q.NumRequeues("b") != 0 {
			t.Fatal("AddRateLimited after ShutDown counted a failure")
		}
	})
}

// The default limiter of a queue reads the queue's clock, so a test with a
// fake clock controls the token bucket too.
func TestDefaultLimiterUsesQueueClock(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	q, err := NewRateLimiting(RateLimitingConfig[string]{Config: Config{Clock: fc}})
	mustNoErr(t, err)
	defer q.ShutDown()
	ms := time.Millisecond
	var last time.Duration
	for i := range DefaultBucketBurst + 2 {
		last = q.limiter.When(fmt.Sprint(i))
	}
	if last != 200*ms {
		t.Fatalf("102nd retry at a standstill waits %v, want 200ms", last)
	}
	fc.Step(time.Hour) // refills the bucket
	if d := q.limiter.When("fresh"); d != DefaultExponentialBase {
		t.Fatalf("after the clock moved on: When = %v, want the 5ms backoff", d)
	}
}

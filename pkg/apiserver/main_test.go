package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testEnv is a server on a memory backend with a fake clock, over loopback HTTP.
type testEnv struct {
	t      testing.TB
	clock  *testclock.FakeClock
	server *Server
	http   *httptest.Server
}

func newTestEnv(t testing.TB, mutate ...func(*Config)) *testEnv {
	t.Helper()
	return newTestEnvWithStorage(t, memory.Config{}, mutate...)
}

// newTestEnvWithStorage is newTestEnv with a tuned memory backend; its
// Clock is always the env's fake clock.
func newTestEnvWithStorage(t testing.TB, mcfg memory.Config, mutate ...func(*Config)) *testEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	mcfg.Clock = clk
	backend, err := memory.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	// The first request for the OpenAPI documents builds them, which under
	// -race on a loaded machine can outlast the default request timeout;
	// the tests of the timeout set it themselves.
	cfg := Config{Backend: backend, Clock: clk, RequestTimeout: 10 * time.Minute}
	// No controller creates the default ServiceAccounts pods would need;
	// the tests of ServiceAccount admission enable it.
	cfg.Admission = noServiceAccounts
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return &testEnv{t: t, clock: clk, server: s, http: hs}
}

// noServiceAccounts is the admission of the test servers: no controller
// creates the default ServiceAccounts pods would need (and with a fake
// clock, waiting for one never ends); the tests of ServiceAccount
// admission enable it.
var noServiceAccounts = AdmissionConfig{Disable: []string{admission.ServiceAccount}}

// response is a finished HTTP exchange.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends a request; body may be a string, []byte or a value to encode as JSON.
func (e *testEnv) do(method, path string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// decode decodes the body into v, failing the test on error.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// status decodes a metav1.Status body.
func (r response) status(t testing.TB) metav1.Status {
	t.Helper()
	var st metav1.Status
	r.decode(t, &st)
	return st
}

// expect fails unless the response has the code (and, for failures, the reason).
func (r response) expect(t testing.TB, code int, reason metav1.StatusReason) {
	t.Helper()
	if r.code != code {
		t.Fatalf("got %d, want %d: %s", r.code, code, r.body)
	}
	if reason != "" {
		st := r.status(t)
		if st.Reason != reason || st.Code != int32(code) || st.Kind != "Status" {
			t.Fatalf("got status %+v, want reason %s code %d", st, reason, code)
		}
	}
}

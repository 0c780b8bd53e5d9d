package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorded is one request as the server saw it.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// recorder is an API server double: it records each request and answers
// with the next canned response (or the last one, repeatedly).
type recorder struct {
	mu    sync.Mutex
	reqs  []recorded
	reply func(w http.ResponseWriter, r *http.Request)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	reply := rec.reply
	rec.mu.Unlock()
	reply(w, r)
}

func (rec *recorder) last(t testing.TB) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("server saw no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

// newServer starts an httptest server that answers with reply and a Client
// for it.
func newServer(t testing.TB, reply func(w http.ResponseWriter, r *http.Request), mutate ...func(*Config)) (*recorder, *Client) {
	t.Helper()
	rec := &recorder{reply: reply}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	cfg := Config{Host: ts.URL, BearerToken: "secret", UserAgent: "kplane-test/1.0"}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rec, c
}

// writeJSON answers with code and v as JSON, as kube-apiserver does.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := utiljson.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeStatus answers with err's Status, exactly as kube-apiserver encodes
// one: kind Status, apiVersion v1, and the HTTP code of the status.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(st.Code), st)
}

package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
)

// syncBuffer is a Sink tests can read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) events(t *testing.T) []audit.Event {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []audit.Event
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var ev audit.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON event: %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// byID returns the events of one request, in order.
func byID(evs []audit.Event, id string) []audit.Event {
	var out []audit.Event
	for _, ev := range evs {
		if string(ev.AuditID) == id {
			out = append(out, ev)
		}
	}
	return out
}

const auditTestPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: None
  nonResourceURLs: ["/healthz*"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: Metadata
  omitStages: [RequestReceived]
`

func newAuditEnv(t *testing.T) (*testEnv, *syncBuffer) {
	t.Helper()
	p, err := audit.ParsePolicy([]byte(auditTestPolicy))
	if err != nil {
		t.Fatal(err)
	}
	sink := &syncBuffer{}
	e := newTestEnv(t, func(c *Config) {
		a, err := audit.New(audit.Config{Policy: p, Sink: sink, Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		c.Auditor = a
	})
	return e, sink
}

// TestAuditLog checks the events kube-apiserver writes: stages, levels,
// the Audit-ID header, bodies at RequestResponse, responseStatus of
// failures, and that Secrets are never recorded above Metadata.
func TestAuditLog(t *testing.T) {
	e, sink := newAuditEnv(t)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}}
	created := e.do("POST", "/api/v1/namespaces/default/configmaps", cm)
	created.expect(t, 201, "")
	id := created.header.Get("Audit-ID")
	if id == "" {
		t.Fatal("no Audit-ID header")
	}
	evs := byID(sink.events(t), id)
	if len(evs) != 2 || evs[0].Stage != audit.StageRequestReceived || evs[1].Stage != audit.StageResponseComplete {
		t.Fatalf("configmap create events %+v, want RequestReceived then ResponseComplete", evs)
	}
	done := evs[1]
	if done.Level != audit.LevelRequestResponse || done.Verb != "create" || done.Kind != "Event" || done.APIVersion != "audit.k8s.io/v1" {
		t.Errorf("event %+v", done)
	}
	if done.ObjectRef == nil || done.ObjectRef.Resource != "configmaps" || done.ObjectRef.Namespace != "default" || done.ObjectRef.APIVersion != "v1" {
		t.Errorf("objectRef %+v", done.ObjectRef)
	}
	if done.ResponseStatus == nil || done.ResponseStatus.Code != 201 {
		t.Errorf("responseStatus %+v", done.ResponseStatus)
	}
	if !bytes.Contains(done.RequestObject, []byte(`"fast"`)) || !bytes.Contains(done.ResponseObject, []byte(`"uid"`)) {
		t.Errorf("bodies not recorded: request %s response %s", done.RequestObject, done.ResponseObject)
	}
	if bytes.Contains(done.ResponseObject, []byte("managedFields")) {
		t.Errorf("omitManagedFields: response %s", done.ResponseObject)
	}
	if len(done.SourceIPs) == 0 || done.SourceIPs[0] != "127.0.0.1" || done.UserAgent == "" {
		t.Errorf("sourceIPs %v userAgent %q", done.SourceIPs, done.UserAgent)
	}
	if done.RequestReceivedTimestamp.IsZero() || done.StageTimestamp.IsZero() {
		t.Error("timestamps missing")
	}

	// Secrets: never a body, whatever the policy says.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "hunter2"}}
	r := e.do("POST", "/api/v1/namespaces/default/secrets", secret)
	r.expect(t, 201, "")
	r = e.do("GET", "/api/v1/namespaces/default/secrets/creds", nil)
	r.expect(t, 200, "")
	for _, ev := range sink.events(t) {
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" {
			if ev.Level != audit.LevelMetadata || ev.RequestObject != nil || ev.ResponseObject != nil {
				t.Errorf("secret event above Metadata: %+v", ev)
			}
		}
	}
	sink.mu.Lock()
	leaked := bytes.Contains(sink.buf.Bytes(), []byte("hunter2")) || bytes.Contains(sink.buf.Bytes(), []byte("aHVudGVyMg"))
	sink.mu.Unlock()
	if leaked {
		t.Error("the secret's value is in the audit log")
	}

	// A failure: Metadata, RequestReceived omitted, the Status recorded.
	missing := e.do("GET", "/api/v1/namespaces/default/pods/nope", nil, "Audit-ID", "client-chosen")
	missing.expect(t, 404, "NotFound")
	if got := missing.header.Get("Audit-ID"); got != "client-chosen" {
		t.Errorf("Audit-ID %q, want the client's", got)
	}
	evs = byID(sink.events(t), "client-chosen")
	if len(evs) != 1 || evs[0].Stage != audit.StageResponseComplete || evs[0].Level != audit.LevelMetadata {
		t.Fatalf("events %+v", evs)
	}
	if st := evs[0].ResponseStatus; st == nil || st.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Status != metav1.StatusFailure || st.Message == "" {
		t.Errorf("responseStatus %+v", st)
	}
	if evs[0].RequestObject != nil || evs[0].ResponseObject != nil {
		t.Error("Metadata level recorded a body")
	}

	// Level None: nothing written, the header still sent.
	before := len(sink.events(t))
	h := e.do("GET", "/healthz", nil)
	if h.header.Get("Audit-ID") == "" {
		t.Error("no Audit-ID on an unaudited request")
	}
	if after := len(sink.events(t)); after != before {
		t.Errorf("healthz wrote %d events", after-before)
	}
}

// TestAuditWatchResponseStarted checks that a watch gets a ResponseStarted
// event when its stream begins, and ResponseComplete when it ends.
func TestAuditWatchResponseStarted(t *testing.T) {
	e, sink := newAuditEnv(t)
	w := e.watch("/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1")
	if w.code != 200 {
		t.Fatalf("watch %d", w.code)
	}
	e.clock.Step(2e9)
	for range w.events {
	}
	var stages []audit.Stage
	for _, ev := range sink.events(t) {
		if ev.Verb == "watch" {
			stages = append(stages, ev.Stage)
		}
	}
	if len(stages) != 2 || stages[0] != audit.StageResponseStarted || stages[1] != audit.StageResponseComplete {
		t.Fatalf("watch stages %v, want ResponseStarted, ResponseComplete", stages)
	}
}

// TestAuditRecordsUserAndRefusals checks that the authenticated user is
// recorded and that requests the in-flight limits refuse are audited too.
func TestAuditRecordsUserAndRefusals(t *testing.T) {
	p, err := audit.ParsePolicy([]byte(auditTestPolicy))
	if err != nil {
		t.Fatal(err)
	}
	sink := &syncBuffer{}
	e := newTestEnv(t, func(c *Config) {
		a, err := audit.New(audit.Config{Policy: p, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		c.Auditor, c.MaxRequestsInFlight = a, 1
	})
	b := newBlockingChain(t, e.server, &authentication.User{Name: "alice", UID: "u1", Groups: []string{"dev"}})
	b.hold(t, "GET", "/api/v1/pods")
	got := b.send(t, "GET", "/api/v1/namespaces/default/pods/x")
	if got.code != http.StatusTooManyRequests {
		t.Fatalf("%d", got.code)
	}
	evs := byID(sink.events(t), got.header.Get("Audit-ID"))
	if len(evs) != 1 {
		t.Fatalf("events %+v", evs)
	}
	ev := evs[0]
	if ev.User.Username != "alice" || ev.User.UID != "u1" || len(ev.User.Groups) != 1 {
		t.Errorf("user %+v", ev.User)
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 429 || ev.ResponseStatus.Reason != metav1.StatusReasonTooManyRequests {
		t.Errorf("responseStatus %+v", ev.ResponseStatus)
	}
}

// TestAuditIDOnTimeout checks that the 504 of a request out of time
// carries the request's Audit-ID, as every answer does.
func TestAuditIDOnTimeout(t *testing.T) {
	p, err := audit.ParsePolicy([]byte(auditTestPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(c *Config) {
		a, err := audit.New(audit.Config{Policy: p, Sink: &syncBuffer{}})
		if err != nil {
			t.Fatal(err)
		}
		c.Auditor, c.RequestTimeout = a, time.Second
	})
	synctest.Test(t, func(t *testing.T) {
		h := e.server.withFilters(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/api/v1/pods", nil)
		req.Header.Set("Audit-ID", "slow-one")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusGatewayTimeout || rec.Header().Get("Audit-ID") != "slow-one" {
			t.Fatalf("%d Audit-ID %q", rec.Code, rec.Header().Get("Audit-ID"))
		}
	})
}

// TestAuditObjectRefFromRequestObject checks that, as kube-apiserver's
// LogRequestObject does, the objectRef of a write is completed from the
// decoded body at Metadata level too: a create's name (the URL has none),
// an update's uid and resourceVersion.
func TestAuditObjectRefFromRequestObject(t *testing.T) {
	e, sink := newAuditEnv(t)

	created := e.do("POST", "/api/v1/namespaces/default/serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}})
	created.expect(t, 201, "")
	var sa corev1.ServiceAccount
	created.decode(t, &sa)
	evs := byID(sink.events(t), created.header.Get("Audit-ID"))
	if len(evs) != 1 || evs[0].Level != audit.LevelMetadata {
		t.Fatalf("create events %+v, want one Metadata event", evs)
	}
	if ref := evs[0].ObjectRef; ref == nil || ref.Name != "robot" || ref.Namespace != "default" || ref.UID != "" || ref.ResourceVersion != "" {
		t.Errorf("create objectRef %+v, want name robot from the body and no uid or resourceVersion", ref)
	}

	sa.Labels = map[string]string{"team": "a"}
	updated := e.do("PUT", "/api/v1/namespaces/default/serviceaccounts/robot", &sa)
	updated.expect(t, 200, "")
	evs = byID(sink.events(t), updated.header.Get("Audit-ID"))
	if len(evs) != 1 {
		t.Fatalf("update events %+v", evs)
	}
	if ref := evs[0].ObjectRef; ref == nil || ref.Name != "robot" || ref.UID != sa.UID || ref.ResourceVersion != sa.ResourceVersion {
		t.Errorf("update objectRef %+v, want uid %s and resourceVersion %s of the body", ref, sa.UID, sa.ResourceVersion)
	}

	// A body that does not decode leaves the objectRef as the URL gave it.
	bad := e.do("PUT", "/api/v1/namespaces/default/serviceaccounts/robot", map[string]any{"metadata": map[string]any{"name": 7}})
	if bad.code < 400 || bad.code >= 500 {
		t.Fatalf("malformed update answered %d", bad.code)
	}
	evs = byID(sink.events(t), bad.header.Get("Audit-ID"))
	if len(evs) != 1 || evs[0].ObjectRef == nil || evs[0].ObjectRef.UID != "" || evs[0].ObjectRef.ResourceVersion != "" {
		t.Errorf("malformed update events %+v", evs)
	}
}

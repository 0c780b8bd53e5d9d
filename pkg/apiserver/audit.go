package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
)

// auditIDHeader is the header carrying a request's audit ID, as in
// kube-apiserver: a client's value is kept, otherwise one is generated,
// and it is sent back in the response.
const auditIDHeader = "Audit-ID"

// maxAuditedResponse caps the response bytes kept to record a response
// body; a larger response is recorded without its body.
const maxAuditedResponse = 4 << 20

// withAudit records each request as Config.Auditor's policy asks: events
// at RequestReceived, ResponseStarted (long-running requests), and
// ResponseComplete or Panic. It runs after authentication (it records the
// authenticated user) and before impersonation, authorization and the
// in-flight limits, so that refused requests are recorded too. With no
// Auditor it is not in the chain at all.
func (s *Server) withAudit(next http.Handler) http.Handler {
	a := s.cfg.Auditor
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := requestInfoFrom(r)
		ctx := r.Context()
		id := audit.AuditIDFrom(ctx)
		if id == "" {
			// Not behind withAuditID (a handler chain built otherwise).
			id = uuid.NewUUID()
			ctx = audit.WithAuditID(ctx, id)
		}
		var user *audit.UserInfo
		if u := authentication.UserFrom(ctx); u != nil {
			user = &audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
		}
		rc := a.Evaluate(audit.Attributes{
			User: user, ResourceRequest: ri.resourceRequest, Verb: ri.verb,
			APIGroup: ri.apiGroup, Resource: ri.resource, Subresource: ri.subresource, Name: ri.name,
			Namespace: ri.namespace, Path: ri.path,
		})
		if rc.Level == audit.LevelNone {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		ev := &audit.Event{
			Level:                    rc.Level,
			AuditID:                  id,
			RequestURI:               r.URL.RequestURI(),
			Verb:                     ri.verb,
			SourceIPs:                sourceIPs(r),
			UserAgent:                r.UserAgent(),
			RequestReceivedTimestamp: metav1.NewMicroTime(a.Clock().Now()),
		}
		if user != nil {
			ev.User = *user
		}
		if ri.resourceRequest {
			ev.ObjectRef = &audit.ObjectRef{
				Resource: ri.resource, Namespace: ri.namespace, Name: ri.name,
				APIGroup: ri.apiGroup, APIVersion: ri.apiVersion, Subresource: ri.subresource,
			}
		}
		ctx = audit.WithEvent(ctx, ev)
		emit := func(stage audit.Stage, edit func(*audit.Event)) {
			if rc.Omits(stage) {
				return
			}
			a.Write(audit.Snapshot(ctx, func(e *audit.Event) {
				e.Stage = stage
				if edit != nil {
					edit(e)
				}
			}))
		}
		emit(audit.StageRequestReceived, nil)

		var reqBody *capturedBody
		if audit.LevelMetadata.Less(rc.Level) && r.Body != nil && r.Body != http.NoBody {
			reqBody = &capturedBody{ReadCloser: r.Body, limit: s.cfg.MaxRequestBodyBytes}
			r.Body = reqBody
		}
		aw := &auditWriter{ResponseWriter: w, keepBody: rc.Level == audit.LevelRequestResponse}
		if ri.longRunning() {
			aw.onStart = func(code int) {
				emit(audit.StageResponseStarted, func(e *audit.Event) { e.ResponseStatus = &metav1.Status{Code: int32(code)} })
			}
		}
		defer func() {
			if v := recover(); v != nil {
				emit(audit.StagePanic, func(e *audit.Event) {
					e.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
						Reason: metav1.StatusReasonInternalError, Message: "APIServer panic'd"}
				})
				panic(v)
			}
		}()
		next.ServeHTTP(aw, r.WithContext(ctx))
		emit(audit.StageResponseComplete, func(e *audit.Event) {
			e.ResponseStatus = aw.status()
			if reqBody != nil {
				e.RequestObject = jsonBody(reqBody.buf.Bytes(), reqBody.over, rc.OmitManagedFields)
			}
			if aw.keepBody && aw.code < 300 {
				e.ResponseObject = jsonBody(aw.body.Bytes(), aw.over, rc.OmitManagedFields)
			}
		})
	})
}

// withAuditID gives each request its audit ID, in its context and in the
// Audit-ID response header, outside the other filters so that every
// answer (a 504 of the timeout included) carries it. With no Auditor it
// is not in the chain.
func (s *Server) withAuditID(next http.Handler) http.Handler {
	if s.cfg.Auditor == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := types.UID(r.Header.Get(auditIDHeader))
		if id == "" {
			id = uuid.NewUUID()
		}
		w.Header().Set(auditIDHeader, string(id))
		next.ServeHTTP(w, r.WithContext(audit.WithAuditID(r.Context(), id)))
	})
}

// jsonBody is a recorded body: JSON only (a protobuf body is not
// recorded), nil when it was cut short.
func jsonBody(b []byte, over, omitManagedFields bool) json.RawMessage {
	b = bytes.TrimSpace(b)
	if over || len(b) == 0 || !json.Valid(b) {
		return nil
	}
	raw := json.RawMessage(bytes.Clone(b))
	if omitManagedFields {
		raw = audit.StripManagedFields(raw)
	}
	return raw
}

// sourceIPs lists the client's addresses: X-Forwarded-For, X-Real-Ip,
// then the connection's peer, as kube-apiserver records them.
func sourceIPs(r *http.Request) []string {
	var ips []string
	add := func(ip string) {
		ip = strings.TrimSpace(ip)
		if net.ParseIP(ip) == nil {
			return
		}
		for _, have := range ips {
			if have == ip {
				return
			}
		}
		ips = append(ips, ip)
	}
	for _, v := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		add(v)
	}
	add(r.Header.Get("X-Real-Ip"))
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	add(host)
	return ips
}

// capturedBody keeps a copy of what the handler reads of a request body,
// up to limit bytes.
type capturedBody struct {
	io.ReadCloser
	limit int64
	buf   bytes.Buffer
	over  bool
}

func (b *capturedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.over {
		if int64(b.buf.Len()+n) > b.limit {
			b.over = true
			b.buf.Reset()
		} else {
			b.buf.Write(p[:n])
		}
	}
	return n, err
}

// auditWriter remembers the response's code and, for failures or when
// keepBody is set, its body; onStart, when set, is called when the
// response begins.
type auditWriter struct {
	http.ResponseWriter
	keepBody bool
	onStart  func(code int)
	code     int
	body     bytes.Buffer
	over     bool
}

func (w *auditWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		if w.onStart != nil {
			w.onStart(code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if (w.keepBody || w.code >= 300) && !w.over {
		if w.body.Len()+len(b) > maxAuditedResponse {
			w.over = true
			w.body.Reset()
		} else {
			w.body.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on, so that watch streams keep working.
func (w *auditWriter) Flush() {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the recorded responseStatus: the code, and for a failure the
// Status the server answered with.
func (w *auditWriter) status() *metav1.Status {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	st := &metav1.Status{Code: int32(code)}
	if code >= 300 {
		var got metav1.Status
		if json.Unmarshal(w.body.Bytes(), &got) == nil && got.Kind == "Status" {
			st.Status, st.Reason, st.Message, st.Details = got.Status, got.Reason, got.Message, got.Details
		}
	}
	if code < 300 {
		st.Status = metav1.StatusSuccess
	}
	return st
}

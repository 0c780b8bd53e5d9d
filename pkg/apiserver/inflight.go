package apiserver

import (
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
)

// The in-flight limits of kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight defaults.
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// tooManyRequestsMessage is kube-apiserver's answer to a request over the
// in-flight limit.
const tooManyRequestsMessage = "Too many requests, please try again later."

// inflightLimit counts the requests being served by kind and refuses those
// over the limit. A nil channel is no limit. The channels' capacities are
// the limits: a request holds one slot from admission until its handler
// returns.
type inflightLimit struct {
	readOnly, mutating chan struct{}
}

// newInflightLimit returns the limits; negative means unlimited.
func newInflightLimit(readOnly, mutating int) *inflightLimit {
	l := &inflightLimit{}
	if readOnly > 0 {
		l.readOnly = make(chan struct{}, readOnly) // the limit
	}
	if mutating > 0 {
		l.mutating = make(chan struct{}, mutating) // the limit
	}
	return l
}

// withInFlightLimit refuses, with 429 TooManyRequests and Retry-After: 1,
// the requests over the in-flight limit of their kind (read-only: get,
// list and the non-resource GETs; mutating: the rest), as kube-apiserver's
// max-in-flight filter does. Long-running requests (watches, the kubelet
// streams) and health checks are not counted, and members of
// system:masters are served even over the limit, so that an administrator
// can always reach a loaded server.
func (s *Server) withInFlightLimit(next http.Handler) http.Handler {
	l := s.inflight
	if l.readOnly == nil && l.mutating == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := requestInfoFrom(r)
		if ri.longRunning() || isHealth(ri.path) {
			next.ServeHTTP(w, r)
			return
		}
		kind, slots := "readOnly", l.readOnly
		if ri.mutating() {
			kind, slots = "mutating", l.mutating
		}
		if slots == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			if u := authentication.UserFrom(r.Context()); u != nil && slices.Contains(u.Groups, authentication.SystemPrivilegedGroup) {
				next.ServeHTTP(w, r)
				return
			}
			s.metrics.dropped.WithLabelValues(kind).Inc()
			s.terminate(w, r, ri, tooManyRequests())
			return
		}
		gauge := s.metrics.inflight.WithLabelValues(kind)
		gauge.Inc()
		defer func() {
			gauge.Dec()
			<-slots
		}()
		next.ServeHTTP(w, r)
	})
}

// mutating tells the requests counted against the mutating limit: every
// method but GET and HEAD, as in kube-apiserver.
func (ri *requestInfo) mutating() bool {
	return ri.verb != "get" && ri.verb != "list" && ri.verb != "watch" && ri.verb != "head"
}

// tooManyRequests is the Status of a request refused by the limits.
func tooManyRequests() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusTooManyRequests,
		Reason:  metav1.StatusReasonTooManyRequests,
		Message: tooManyRequestsMessage,
		Details: &metav1.StatusDetails{RetryAfterSeconds: 1},
	}}
}

// terminate answers a request the server refuses in self-defence (over the
// limits, out of time) with err, counting it in
// apiserver_request_terminations_total and labelling its
// apiserver_request_total line as the verb handler would have.
func (s *Server) terminate(w http.ResponseWriter, r *http.Request, ri *requestInfo, err *apierrors.StatusError) {
	rec := recordFrom(r.Context())
	ri.fillRecord(rec)
	s.metrics.terminations.WithLabelValues(rec.verb, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver", itoa(int(err.ErrStatus.Code))).Inc()
	s.writeError(w, r, err)
}

package apiserver

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"
)

// metrics are the server's Prometheus metrics, named as kube-apiserver names them.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	// dropped and terminations count the requests the server refused in
	// self-defence (the in-flight limits, the request timeout).
	dropped      *prometheus.CounterVec
	terminations *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, version, resource, subresource, scope, component and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Number of requests currently counted against the in-flight limit of this apiserver per request kind.",
		}, []string{"request_kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_dropped_requests_total",
			Help: "Number of requests dropped with 'Try again later' response per request kind.",
		}, []string{"request_kind"}),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_terminations_total",
			Help: "Number of requests which apiserver terminated in self-defense.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inflight, m.dropped, m.terminations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// requestRecord collects the labels of one request while it is served.
type requestRecord struct {
	verb, group, version, resource, subresource, scope string
}

type recordKey struct{}

// recordFrom returns the request's record; handlers fill it in.
func recordFrom(ctx context.Context) *requestRecord {
	rec, _ := ctx.Value(recordKey{}).(*requestRecord)
	if rec == nil {
		return &requestRecord{}
	}
	return rec
}

// wrap counts and times every request handled by next.
func (m *metrics) wrap(next http.Handler, gatherer prometheus.Gatherer, clk clock.PassiveClock, log *slog.Logger) http.Handler {
	metricsHandler := promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			metricsHandler.ServeHTTP(w, r)
			return
		}
		start := clk.Now()
		rec := &requestRecord{verb: r.Method}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		m.requests.WithLabelValues(rec.verb, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver", strconv.Itoa(code)).Inc()
		elapsed := clk.Since(start)
		m.duration.WithLabelValues(rec.verb, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver").Observe(elapsed.Seconds())
		log.Debug("request", "verb", rec.verb, "uri", r.URL.RequestURI(), "code", code, "duration", elapsed, "userAgent", r.UserAgent())
	})
}

// statusWriter remembers the response code and passes Flush through so
// that watch streams keep working.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijack not supported")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

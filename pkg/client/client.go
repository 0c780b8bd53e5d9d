package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/clock"
)

// Config holds the settings of a Client. The zero value of every field but
// Host is a valid choice.
type Config struct {
	// Host is the server's base URL, such as "https://127.0.0.1:6443". A bare
	// "host:port" means https. A path ("https://h/prefix") prefixes every
	// request path. Required.
	Host string

	// CAData is a PEM bundle of certificate authorities that the server's
	// certificate must chain to. It is combined with CAFile. When both are
	// empty the system roots are used.
	CAData []byte
	// CAFile is a file holding a PEM bundle, read once by New.
	CAFile string
	// TLSServerName, when set, is the name the server's certificate must be
	// valid for instead of the host in Host.
	TLSServerName string
	// Insecure skips verification of the server's certificate. Tests only.
	Insecure bool
	// CertData and KeyData are a PEM client certificate and its key, sent
	// when the server asks for one. Both or neither.
	CertData []byte
	KeyData  []byte
	// GetClientCertificate, when set, returns the client certificate of
	// each new connection instead of CertData and KeyData, which must then
	// be empty: for certificates renewed while the client lives.
	GetClientCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)

	// BearerToken is sent as "Authorization: Bearer <token>" on every request.
	BearerToken string
	// TokenSource, when set, supplies the bearer token of each request
	// instead of BearerToken, which must then be empty: for tokens that
	// expire and are renewed, such as ServiceAccount tokens from the
	// TokenRequest API. If it also implements TokenInvalidator, a request
	// answered 401 is sent once more with a renewed token. Derive the
	// Config of such a client from another one with WithoutCredentials.
	TokenSource TokenSource
	// UserAgent is the User-Agent header. Default "kplane-client".
	UserAgent string

	// QPS, when above zero, limits the client to that many requests per
	// second on average (watches excluded). Zero, the default, is no limit.
	QPS float32
	// Burst is how many requests may exceed QPS momentarily. Default
	// max(1, ceil(QPS)) when QPS is set.
	Burst int

	// InFlight, when set, bounds the requests outstanding at once of every
	// client whose Config carries the same limit (watches excluded): see
	// InFlightLimit. Copies of a Config share it.
	InFlight *InFlightLimit

	// HTTPClient, when set, carries every request instead of a client built
	// from the TLS fields above, which must then be empty (the HTTPClient's
	// own transport decides TLS). BearerToken, TokenSource and UserAgent
	// still apply.
	HTTPClient *http.Client
	// Timeout, when above zero, bounds each non-watch call from sending to
	// reading the whole response, retries included. Watches are bounded only
	// by their context and timeoutSeconds, as they are meant to stay open.
	Timeout time.Duration

	// MaxRetries is how many times a request the server answers with 429
	// or 500-504 and a Retry-After header is sent again, after waiting as
	// told, as client-go does. Zero means the default, 10; negative
	// disables retries. Watches are not retried.
	MaxRetries int
	// Clock times the waits between retries. Default the real clock.
	Clock clock.Clock

	// WarningHandler, when set, receives the text of every warning (HTTP
	// "Warning: 299" header) the server sends, such as the unknown fields
	// of a request with fieldValidation=Warn. It may be called from several
	// goroutines at once and must not block for long.
	WarningHandler func(text string)
}

// DefaultMaxRetries is the number of retries of Config.MaxRetries zero.
const DefaultMaxRetries = 10

// maxIdleConnsPerHost is how many idle connections to the server the
// client's own transport keeps, as client-go does: net/http's default of 2
// would close, and dial again, every connection but two after each burst
// of concurrent calls over HTTP/1.1 (a controller creating pods in
// parallel).
const maxIdleConnsPerHost = 25

// Client talks to one API server. It is safe for concurrent use; it starts
// no goroutines of its own, so it needs no closing.
type Client struct {
	base      *url.URL // scheme and host; path is a prefix without a trailing slash
	http      *http.Client
	token     string
	tokens    TokenSource // nil: token (possibly empty) is sent
	userAgent string
	timeout   time.Duration
	limiter   *rate.Limiter  // nil: unlimited
	inFlight  *InFlightLimit // nil: unlimited
	retries   int            // retries after Retry-After answers; 0 disables
	clock     clock.Clock
	onWarning func(string) // nil: warnings are dropped
}

// New validates cfg and returns a Client for it.
func New(cfg Config) (*Client, error) {
	if cfg.Host == "" {
		return nil, errors.New("client: Config.Host is required")
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	base, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("client: parse Config.Host %q: %w", cfg.Host, err)
	}
	if base.Scheme != "http" && base.Scheme != "https" {
		return nil, fmt.Errorf("client: Config.Host %q: scheme must be http or https", cfg.Host)
	}
	if base.Host == "" {
		return nil, fmt.Errorf("client: Config.Host %q has no host", cfg.Host)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("client: Config.Host %q must not have a query or fragment", cfg.Host)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawPath = ""
	if cfg.QPS < 0 || cfg.Burst < 0 {
		return nil, fmt.Errorf("client: QPS (%v) and Burst (%d) must not be negative", cfg.QPS, cfg.Burst)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("client: Timeout (%v) must not be negative", cfg.Timeout)
	}
	if cfg.TokenSource != nil && cfg.BearerToken != "" {
		return nil, errors.New("client: Config.BearerToken and Config.TokenSource exclude each other")
	}

	c := &Client{
		base:      base,
		token:     cfg.BearerToken,
		tokens:    cfg.TokenSource,
		userAgent: cfg.UserAgent,
		timeout:   cfg.Timeout,
		retries:   cfg.MaxRetries,
		clock:     cfg.Clock,
		onWarning: cfg.WarningHandler,
		inFlight:  cfg.InFlight,
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultMaxRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.userAgent == "" {
		c.userAgent = "kplane-client"
	}
	if cfg.QPS > 0 {
		burst := cfg.Burst
		if burst == 0 {
			burst = max(1, int(math.Ceil(float64(cfg.QPS))))
		}
		c.limiter = rate.NewLimiter(rate.Limit(cfg.QPS), burst)
	}

	hasTLS := len(cfg.CAData) > 0 || cfg.CAFile != "" || cfg.Insecure || cfg.TLSServerName != "" ||
		len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 || cfg.GetClientCertificate != nil
	if cfg.HTTPClient != nil {
		if hasTLS {
			return nil, errors.New("client: Config.HTTPClient excludes the TLS settings (CAData, CAFile, TLSServerName, Insecure, CertData, KeyData, GetClientCertificate)")
		}
		c.http = cfg.HTTPClient
		return c, nil
	}
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	transport.MaxIdleConnsPerHost = maxIdleConnsPerHost
	c.http = &http.Client{Transport: transport}
	return c, nil
}

// tlsConfig builds the TLS settings of cfg.
func tlsConfig(cfg Config) (*tls.Config, error) {
	t := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         cfg.TLSServerName,
		InsecureSkipVerify: cfg.Insecure, //nolint:gosec // explicitly requested
	}
	ca := cfg.CAData
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("client: read CAFile: %w", err)
		}
		ca = append(append(append([]byte{}, ca...), '\n'), data...)
	}
	if len(ca) > 0 {
		if cfg.Insecure {
			return nil, errors.New("client: Insecure excludes CAData and CAFile")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("client: CAData/CAFile hold no PEM certificate")
		}
		t.RootCAs = pool
	}
	if len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		if cfg.GetClientCertificate != nil {
			return nil, errors.New("client: GetClientCertificate excludes CertData and KeyData")
		}
		cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			return nil, fmt.Errorf("client: client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	t.GetClientCertificate = cfg.GetClientCertificate
	return t, nil
}

// Request is one raw API call for Client.Do.
type Request struct {
	// Method is the HTTP method; default GET.
	Method string
	// Path is the API path, such as "/api/v1/namespaces/default/pods".
	Path string
	// Query is the URL query.
	Query url.Values
	// Header holds extra headers. Accept defaults to application/json, and
	// Content-Type to application/json when Body is set.
	Header http.Header
	// Body is the request body; nil sends none.
	Body []byte
}

// Response is the answer to a successful (2xx) Request.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Do sends req and reads the whole response. A status outside 2xx returns
// an *apierrors.StatusError decoded from the body. Do waits for the rate
// limiter and honours Config.Timeout. It is safe for concurrent use.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	return c.do(ctx, req, errorContext{})
}

// errorContext names what a request was about, for errors built from
// responses that are not a metav1.Status.
type errorContext struct {
	group, resource, name string
}

func (c *Client) do(ctx context.Context, req Request, ec errorContext) (*Response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				return nil, fmt.Errorf("client: rate limiter: %w", err)
			}
		}
		if err := c.inFlight.acquire(ctx); err != nil {
			return nil, err
		}
		resp, err := c.send(ctx, req)
		if err != nil {
			c.inFlight.release()
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.inFlight.release()
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: read response: %w", req.method(), req.Path, err)
		}
		c.handleWarnings(resp.Header)
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}, nil
		}
		wait, retry := retryAfter(resp)
		if !retry || attempt >= c.retries {
			return nil, decodeError(resp, body, req.method(), ec)
		}
		select {
		case <-c.clock.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("client: %s %s: waiting to retry: %w", req.method(), req.Path, ctx.Err())
		}
	}
}

// retryAfter reports whether resp asks to retry the request, and after how
// long: 429 or 500-504 with a Retry-After header in seconds, as client-go
// retries.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests &&
		(resp.StatusCode < http.StatusInternalServerError || resp.StatusCode > http.StatusGatewayTimeout) {
		return 0, false
	}
	h := resp.Header.Get("Retry-After")
	if h == "" {
		return 0, false
	}
	secs, err := strconv.Atoi(h)
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// handleWarnings passes the server's 299 warnings to the WarningHandler.
func (c *Client) handleWarnings(h http.Header) {
	if c.onWarning == nil || len(h["Warning"]) == 0 {
		return
	}
	warnings, _ := utilnet.ParseWarningHeaders(h["Warning"])
	for _, w := range warnings {
		if w.Code == 299 && w.Text != "" {
			c.onWarning(w.Text)
		}
	}
}

// send issues req and returns the response with its body unread. A 401
// answer is retried once with a renewed token (see TokenInvalidator).
func (c *Client) send(ctx context.Context, req Request) (*http.Response, error) {
	token, err := c.bearerToken(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.sendWith(ctx, req, token)
	if err != nil || c.tokens == nil {
		return resp, err
	}
	fresh, retry, err := c.renewToken(ctx, resp, token)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("client: %s %s: renew the token refused with 401: %w", req.method(), req.Path, err)
	}
	if !retry {
		return resp, nil
	}
	return c.sendWith(ctx, req, fresh)
}

// sendWith issues req with token (none when empty) and returns the
// response with its body unread.
func (c *Client) sendWith(ctx context.Context, req Request, token string) (*http.Response, error) {
	u := *c.base
	u.Path = c.base.Path + req.Path
	if len(req.Query) > 0 {
		u.RawQuery = req.Query.Encode()
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method(), u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: build request: %w", err)
	}
	for k, vs := range req.Header {
		hreq.Header[k] = append([]string(nil), vs...)
	}
	if hreq.Header.Get("Accept") == "" {
		hreq.Header.Set("Accept", "application/json")
	}
	if req.Body != nil && hreq.Header.Get("Content-Type") == "" {
		hreq.Header.Set("Content-Type", "application/json")
	}
	hreq.Header.Set("User-Agent", c.userAgent)
	if token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", req.method(), u.Redacted(), err)
	}
	return resp, nil
}

func (r Request) method() string {
	if r.Method == "" {
		return http.MethodGet
	}
	return r.Method
}

// CloseIdleConnections closes the kept-alive connections that no request
// is using, as http.Client.CloseIdleConnections does. Requests and watches
// in progress are not affected, and later requests open new connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

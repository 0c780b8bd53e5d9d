package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxResponseBytes bounds a webhook's answer. Kubernetes reads answers
// whole; kplane refuses larger ones rather than hold them in memory (an
// answer carries at most a patch of an object, itself under the 3 MiB a
// request body may have).
const maxResponseBytes = 3 << 20

// maxErrorTextBytes bounds the text of a failed answer quoted in an error,
// as Kubernetes' REST client.
const maxErrorTextBytes = 2048

var (
	servicesResource       = corev1.SchemeGroupVersion.WithResource("services")
	endpointsResource      = corev1.SchemeGroupVersion.WithResource("endpoints")
	endpointSlicesResource = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

// clientKey identifies a client by what it connects to and trusts, so
// that recompiled configurations keep their connections.
type clientKey struct {
	url       string
	namespace string
	name      string
	path      string
	port      int32
	caBundle  string
}

// client calls one webhook endpoint. Safe for concurrent use.
type client struct {
	http *http.Client
	// url is where requests go; a service's host is its DNS name
	// (<name>.<namespace>.svc), resolved to an endpoint when dialling.
	url url.URL
}

// clientFor returns the client of cc, shared with the other webhooks of
// the same endpoint and CA bundle. Called with p.mu held.
func (p *plugin) clientFor(name string, cc admissionregistrationv1.WebhookClientConfig) (*client, error) {
	key := clientKey{caBundle: string(cc.CABundle)}
	if cc.Service != nil {
		key.namespace, key.name, key.port = cc.Service.Namespace, cc.Service.Name, 443
		if cc.Service.Port != nil {
			key.port = *cc.Service.Port
		}
		if cc.Service.Path != nil {
			key.path = *cc.Service.Path
		}
	} else if cc.URL != nil {
		key.url = *cc.URL
	} else {
		return nil, &callError{webhook: name, reason: errors.New("webhook configuration must have either service or URL")}
	}
	p.usedClients[key] = true
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	tlsConfig := &tls.Config{NextProtos: []string{"http/1.1"}}
	if len(cc.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cc.CABundle) {
			return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
		}
		tlsConfig.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
	c := &client{http: &http.Client{Transport: transport}}
	if cc.Service != nil {
		// As Kubernetes: the certificate must be valid for the service's
		// DNS name, whichever endpoint answers.
		serverName := key.name + "." + key.namespace + ".svc"
		tlsConfig.ServerName = serverName
		host := net.JoinHostPort(serverName, strconv.Itoa(int(key.port)))
		c.url = url.URL{Scheme: "https", Host: host, Path: path.Join("/", key.path)}
		namespace, svc, port := key.namespace, key.name, key.port
		transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == host {
				resolved, err := p.resolveEndpoint(ctx, namespace, svc, port)
				if err != nil {
					return nil, err
				}
				addr = resolved
			}
			return dialer.DialContext(ctx, network, addr)
		}
	} else {
		u, err := url.Parse(key.url)
		if err != nil {
			//lint:ignore ST1005 Kubernetes' wording
			return nil, &callError{webhook: name, reason: fmt.Errorf("Unparsable URL: %v", err)}
		}
		c.url = url.URL{Scheme: u.Scheme, Host: u.Host, Path: path.Join("/", u.Path)}
	}
	p.clients[key] = c
	return c, nil
}

// close drops the client's idle connections.
func (c *client) close() {
	c.http.CloseIdleConnections()
}

// post sends body to the webhook and returns its answer's body. The call
// is bounded by timeout and by ctx; the deadline is also sent as the
// timeout parameter, rounded up to a second, as Kubernetes does. Errors
// are *callError or *apierrors.StatusError (the webhook's own failure).
func (c *client) post(ctx context.Context, timeout time.Duration, body []byte) ([]byte, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	u := c.url
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left > 0 {
			if whole := left.Truncate(time.Second); whole != left {
				left = whole + time.Second
			}
			u.RawQuery = url.Values{"timeout": {left.String()}}.Encode()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	req.Header.Set("User-Agent", "kplane-admission")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("the webhook response is larger than %d bytes", maxResponseBytes)
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode > http.StatusPartialContent {
		return nil, responseError(resp, data)
	}
	return data, nil
}

// responseError is the error of an answer with a failure code, as
// Kubernetes' REST client makes it: the Status the body holds, or a
// generic error quoting a text body.
func responseError(resp *http.Response, body []byte) error {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		return &apierrors.StatusError{ErrStatus: st}
	}
	message := "unknown"
	if isText(resp) {
		if len(body) > maxErrorTextBytes {
			body = body[:maxErrorTextBytes]
		}
		message = strings.TrimSpace(string(body))
	}
	retryAfter, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodPost, schema.GroupResource{}, "", message, retryAfter, true)
}

func isText(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	media, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.HasPrefix(media, "text/")
}

// resolveEndpoint returns the address of a ready endpoint of the service
// namespace/name for its port port, as Kubernetes' endpoint resolver: the
// service port, its name, the endpoint port of that name (EndpointSlices
// of the service, else its Endpoints).
func (p *plugin) resolveEndpoint(ctx context.Context, namespace, name string, port int32) (string, error) {
	obj, err := p.src.Get(ctx, servicesResource, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "service"}, name)
	}
	if err != nil {
		return "", err
	}
	svc, err := typed[corev1.Service](obj)
	if err != nil {
		return "", err
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
			break
		}
	}
	if svcPort == nil {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, name))
	}
	switch svc.Spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	addrs, found, err := p.sliceAddresses(ctx, namespace, name, svcPort.Name)
	if err != nil {
		return "", err
	}
	if !found {
		if addrs, err = p.endpointsAddresses(ctx, namespace, name, svcPort.Name); err != nil {
			return "", err
		}
	}
	if len(addrs) == 0 {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	return addrs[rand.IntN(len(addrs))], nil
}

// sliceAddresses lists the ready addresses of the service's
// EndpointSlices; found is false when it has none.
func (p *plugin) sliceAddresses(ctx context.Context, namespace, service, portName string) (addrs []string, found bool, err error) {
	objs, _, err := p.src.List(ctx, endpointSlicesResource, namespace)
	if err != nil {
		return nil, false, err
	}
	for _, obj := range objs {
		s, err := typed[discoveryv1.EndpointSlice](obj)
		if err != nil {
			return nil, false, err
		}
		if s.Labels[discoveryv1.LabelServiceName] != service {
			continue
		}
		found = true
		for _, sp := range s.Ports {
			if sp.Port == nil || (sp.Name == nil && portName != "") || (sp.Name != nil && *sp.Name != portName) {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, ip := range ep.Addresses {
					addrs = append(addrs, net.JoinHostPort(ip, strconv.Itoa(int(*sp.Port))))
				}
			}
		}
	}
	return addrs, found, nil
}

// endpointsAddresses lists the ready addresses of the service's Endpoints.
func (p *plugin) endpointsAddresses(ctx context.Context, namespace, service, portName string) ([]string, error) {
	obj, err := p.src.Get(ctx, endpointsResource, namespace, service)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 services whose endpoints are still written as Endpoints, as Kubernetes' resolver reads them
	eps, err := typed[corev1.Endpoints](obj)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, ss := range eps.Subsets {
		for _, pt := range ss.Ports {
			if pt.Name != portName {
				continue
			}
			for _, a := range ss.Addresses {
				addrs = append(addrs, net.JoinHostPort(a.IP, strconv.Itoa(int(pt.Port))))
			}
		}
	}
	return addrs, nil
}

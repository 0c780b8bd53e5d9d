package apiextensions

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// conversionTimeout bounds a call of a conversion webhook, as in Kubernetes.
const conversionTimeout = 30 * time.Second

// maxConversionResponse bounds the body a conversion webhook may answer.
const maxConversionResponse = 64 << 20

// Converter converts custom resources of one CRD between its versions.
// It is safe for concurrent use.
type Converter interface {
	// Convert changes objs, in place, to version to of the CRD's group.
	// Objects already in that version are left as they are.
	Convert(ctx context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) error
	// Trivial reports whether conversion only rewrites apiVersion
	// (strategy None), so it can never fail.
	Trivial() bool
}

// NewConverter returns the converter of crd's conversion strategy: None
// rewrites apiVersion; Webhook sends a ConversionReview to the CRD's
// webhook. crd is not kept.
func NewConverter(crd *CRD) (Converter, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		return noneConverter{}, nil
	}
	if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, errors.New("conversion strategy Webhook without a webhook")
	}
	w := &webhookConverter{kind: crd.Spec.Names.Kind}
	cc := conv.Webhook.ClientConfig
	switch {
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, err
		}
		w.url = u
	case cc.Service != nil:
		w.service = cc.Service.DeepCopy()
	}
	w.reviewVersion = "v1"
	if !slices.Contains(conv.Webhook.ConversionReviewVersions, "v1") {
		w.reviewVersion = "v1beta1"
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cc.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cc.CABundle) {
			return nil, errors.New("conversion webhook caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	w.client = &http.Client{Timeout: conversionTimeout, Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}}
	return w, nil
}

type noneConverter struct{}

func (noneConverter) Trivial() bool { return true }

func (noneConverter) Convert(_ context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) error {
	for _, o := range objs {
		o.SetAPIVersion(to.String())
	}
	return nil
}

// webhookConverter calls a CRD's conversion webhook.
type webhookConverter struct {
	kind          string
	url           *url.URL
	service       *apiextensionsv1.ServiceReference
	reviewVersion string
	client        *http.Client
}

func (w *webhookConverter) Trivial() bool { return false }

func (w *webhookConverter) Convert(ctx context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) error {
	var todo []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAPIVersion() != to.String() {
			todo = append(todo, o)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	gvk := to.WithKind(w.kind)
	if err := w.call(ctx, todo, to); err != nil {
		return fmt.Errorf("conversion webhook for %s failed: %w", gvk, err)
	}
	return nil
}

func (w *webhookConverter) endpoint() (string, error) {
	if w.url != nil {
		return w.url.String(), nil
	}
	svc := w.service
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	path := ""
	if svc.Path != nil {
		path = *svc.Path
	}
	u := fmt.Sprintf("https://%s.%s.svc:%d%s", svc.Name, svc.Namespace, port, path)
	// kplane runs no cluster network to reach a Service's pods through.
	return "", fmt.Errorf("service %q cannot be reached at %s: kplane does not route to Services", svc.Namespace+"/"+svc.Name, u)
}

func (w *webhookConverter) call(ctx context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) error {
	endpoint, err := w.endpoint()
	if err != nil {
		return err
	}
	req := &apiextensionsv1.ConversionRequest{UID: uuid.NewUUID(), DesiredAPIVersion: to.String()}
	for _, o := range objs {
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		req.Objects = append(req.Objects, runtime.RawExtension{Raw: data})
	}
	review := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/" + w.reviewVersion, Kind: "ConversionReview"},
		Request:  req,
	}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, conversionTimeout)
	defer cancel()
	u := endpoint + "?timeout=" + conversionTimeout.String()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxConversionResponse+1))
	if err != nil {
		return err
	}
	if len(data) > maxConversionResponse {
		return fmt.Errorf("response larger than %d bytes", maxConversionResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the server responded with status %d", resp.StatusCode)
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("unmarshal ConversionReview: %w", err)
	}
	r := out.Response
	switch {
	case r == nil:
		return errors.New("no response provided")
	case r.UID != req.UID:
		return fmt.Errorf("expected response.uid=%q, got %q", req.UID, r.UID)
	case r.Result.Status != metav1.StatusSuccess:
		return fmt.Errorf("%s", r.Result.Message)
	case len(r.ConvertedObjects) != len(objs):
		return fmt.Errorf("expected %d converted objects, got %d", len(objs), len(r.ConvertedObjects))
	}
	converted := make([]*unstructured.Unstructured, len(objs))
	for i, raw := range r.ConvertedObjects {
		c := &unstructured.Unstructured{}
		if err := c.UnmarshalJSON(raw.Raw); err != nil {
			return fmt.Errorf("invalid converted object at index %d: %w", i, err)
		}
		if c.GetAPIVersion() != to.String() {
			return fmt.Errorf("invalid converted object at index %d: invalid apiVersion %q, expected %q", i, c.GetAPIVersion(), to)
		}
		if c.GetKind() != objs[i].GetKind() {
			return fmt.Errorf("invalid converted object at index %d: invalid kind %q, expected %q", i, c.GetKind(), objs[i].GetKind())
		}
		if err := restoreMetadata(c, objs[i]); err != nil {
			return fmt.Errorf("invalid converted object at index %d: %w", i, err)
		}
		converted[i] = c
	}
	for i, c := range converted {
		objs[i].Object = c.Object
	}
	return nil
}

// restoreMetadata keeps a converted object's metadata as it was but for
// labels and annotations, the only metadata a webhook may change, as
// Kubernetes does; a changed name, namespace or uid is an error.
func restoreMetadata(converted, original *unstructured.Unstructured) error {
	if converted.GetName() != original.GetName() || converted.GetNamespace() != original.GetNamespace() || converted.GetUID() != original.GetUID() {
		return errors.New("must not change metadata.name, metadata.namespace or metadata.uid")
	}
	labels, annotations := converted.GetLabels(), converted.GetAnnotations()
	if m, ok := original.Object["metadata"].(map[string]any); ok {
		converted.Object["metadata"] = runtime.DeepCopyJSONValue(m)
	} else {
		delete(converted.Object, "metadata")
	}
	converted.SetLabels(labels)
	converted.SetAnnotations(annotations)
	return nil
}

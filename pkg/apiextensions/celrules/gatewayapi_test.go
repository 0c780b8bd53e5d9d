package celrules

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The Gateway API tests check kplane against real CRDs, which this
// repository does not hold: set KPLANE_GATEWAY_API_CRDS to a directory
// with gateway-api-gateways.yaml, gateway-api-gatewayclasses.yaml and
// gateway-api-httproutes.yaml (the v1 versions of config/crd/standard of
// kubernetes-sigs/gateway-api) to run them.
func loadCRD(t testing.TB, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	dir := os.Getenv("KPLANE_GATEWAY_API_CRDS")
	if dir == "" {
		t.Skip("KPLANE_GATEWAY_API_CRDS not set")
	}
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &crd
}

// TestGatewayAPICRDsAccepted checks that the rules of real CRDs, which
// kube-apiserver accepts, compile and fit the cost budgets here too.
func TestGatewayAPICRDsAccepted(t *testing.T) {
	for _, name := range []string{"gateway-api-gateways.yaml", "gateway-api-gatewayclasses.yaml", "gateway-api-httproutes.yaml"} {
		t.Run(name, func(t *testing.T) {
			crd := loadCRD(t, name)
			for i, v := range crd.Spec.Versions {
				p := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
				if errs := ValidateRules(p, v.Schema.OpenAPIV3Schema); len(errs) > 0 {
					t.Errorf("%s: %v", v.Name, errs)
				}
			}
		})
	}
}

func gatewayAPIValidator(t testing.TB, name string) *Validator {
	t.Helper()
	v, err := NewValidator(loadCRD(t, name).Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGatewayAPIGateway evaluates the Gateway rules on the cases the Gateway
// API project checks against kube-apiserver (objects already defaulted).
func TestGatewayAPIGateway(t *testing.T) {
	v := gatewayAPIValidator(t, "gateway-api-gateways.yaml")
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{
			name: "valid",
			spec: `{gatewayClassName: foo, listeners: [{name: http, protocol: HTTP, port: 80}]}`,
		},
		{
			name: "tls with the HTTP protocol",
			spec: `{gatewayClassName: foo, listeners: [{name: http, protocol: HTTP, port: 8080, tls: {mode: Terminate, certificateRefs: [{name: foo}]}}]}`,
			want: []string{"spec.listeners: Invalid value: tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"},
		},
		{
			name: "HTTPS with Passthrough",
			spec: `{gatewayClassName: foo, listeners: [{name: https, protocol: HTTPS, port: 8080, tls: {mode: Passthrough}}]}`,
			want: []string{"spec.listeners: Invalid value: tls mode must be Terminate for protocol HTTPS"},
		},
		{
			name: "TLS without a mode",
			spec: `{gatewayClassName: foo, listeners: [{name: tls, protocol: TLS, port: 8443}]}`,
			want: []string{"spec.listeners: Invalid value: tls mode must be set for protocol TLS"},
		},
		{
			name: "hostname with the TCP protocol",
			spec: `{gatewayClassName: foo, listeners: [{name: tcp, protocol: TCP, port: 8080, hostname: foo}]}`,
			want: []string{"spec.listeners: Invalid value: hostname must not be specified for protocols ['TCP', 'UDP']"},
		},
		{
			name: "Terminate without certificates or options",
			spec: `{gatewayClassName: foo, listeners: [{name: https, protocol: HTTPS, port: 8443, tls: {mode: Terminate}}]}`,
			want: []string{`spec.listeners[0].tls: Invalid value: "object": no such key: certificateRefs evaluating rule: certificateRefs or options must be specified when mode is Terminate`},
		},
		{
			name: "Terminate with empty certificates",
			spec: `{gatewayClassName: foo, listeners: [{name: https, protocol: HTTPS, port: 8443, tls: {mode: Terminate, certificateRefs: [], options: {}}}]}`,
			want: []string{"spec.listeners[0].tls: Invalid value: certificateRefs or options must be specified when mode is Terminate"},
		},
		{
			name: "duplicate listener names",
			spec: `{gatewayClassName: foo, listeners: [{name: foo, protocol: HTTP, port: 80}, {name: foo, protocol: HTTP, port: 8080}]}`,
			want: []string{"spec.listeners: Invalid value: Listener name must be unique within the Gateway"},
		},
		{
			name: "duplicate port, protocol and hostname",
			spec: `{gatewayClassName: foo, listeners: [{name: a, protocol: HTTP, port: 80, hostname: foo.com}, {name: b, protocol: HTTP, port: 80, hostname: foo.com}]}`,
			want: []string{"spec.listeners: Invalid value: Combination of port, protocol and hostname must be unique for each listener"},
		},
		{
			name: "one omitted hostname is unique",
			spec: `{gatewayClassName: foo, listeners: [{name: a, protocol: HTTP, port: 80, hostname: foo.com}, {name: b, protocol: HTTP, port: 80}]}`,
		},
		{
			name: "duplicate addresses",
			spec: `{gatewayClassName: foo, listeners: [{name: http, protocol: HTTP, port: 80}],
addresses: [{type: IPAddress, value: 1.2.3.4}, {type: IPAddress, value: 1.2.3.4}, {type: Hostname, value: foo.bar}, {type: Hostname, value: foo.bar}]}`,
			want: []string{
				"spec.addresses: Invalid value: IPAddress values must be unique",
				"spec.addresses: Invalid value: Hostname values must be unique",
			},
		},
		{
			name: "invalid hostname address",
			spec: `{gatewayClassName: foo, listeners: [{name: http, protocol: HTTP, port: 80}], addresses: [{type: Hostname, value: Foo_Bar}]}`,
			want: []string{"spec.addresses[0]: Invalid value: Hostname value must be empty or contain only valid characters (matching ^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
				"metadata": map[string]any{"name": "foo", "namespace": "default"},
				"spec":     mustObject(t, tt.spec),
			}
			got := errorStrings(v.Validate(context.Background(), nil, obj, nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGatewayAPIGatewayClassImmutable(t *testing.T) {
	v := gatewayAPIValidator(t, "gateway-api-gatewayclasses.yaml")
	gc := func(controller string) map[string]any {
		return map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
			"metadata": map[string]any{"name": "foo"},
			"spec":     map[string]any{"controllerName": controller},
		}
	}
	if errs := v.Validate(context.Background(), nil, gc("example.com/a"), nil); len(errs) > 0 {
		t.Errorf("create: %v", errs)
	}
	if errs := v.Validate(context.Background(), nil, gc("example.com/a"), gc("example.com/a")); len(errs) > 0 {
		t.Errorf("unchanged update: %v", errs)
	}
	got := errorStrings(v.Validate(context.Background(), nil, gc("example.com/b"), gc("example.com/a")))
	want := []string{`spec.controllerName: Invalid value: "example.com/b": field is immutable`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
}

// TestGatewayAPIHTTPRoute evaluates HTTPRoute rules on cases the Gateway API
// project checks against kube-apiserver. As there, each wanted message must
// be in one of the errors; and no other errors may occur. The objects carry
// the values defaulting would add (matches, backendRef group and kind).
func TestGatewayAPIHTTPRoute(t *testing.T) {
	v := gatewayAPIValidator(t, "gateway-api-httproutes.yaml")
	tooManyMatches := func() string {
		rule := `{matches: [` + strings.Repeat(`{path: {type: PathPrefix, value: /}},`, 9) + `]}`
		return `{rules: [` + strings.Repeat(rule+",", 16) + `]}`
	}
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{
			name: "valid",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /foo}}], backendRefs: [{group: "", kind: Service, name: svc, port: 80}]}]}`,
		},
		{
			name: "path does not start with /",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: foo}}]}]}`,
			want: []string{"value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"},
		},
		{
			name: "path ends with /.",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /.}}]}]}`,
			want: []string{"must not end with '/.' when type one of ['Exact', 'PathPrefix']"},
		},
		{
			name: "path contains /./",
			spec: `{rules: [{matches: [{path: {type: Exact, value: /foo/./bar}}]}]}`,
			want: []string{"must not contain '/./' when type one of ['Exact', 'PathPrefix']"},
		},
		{
			name: "Service backendRef without port",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{group: "", kind: Service, name: svc}]}]}`,
			want: []string{"Must have port for Service reference"},
		},
		{
			name: "filter type without its configuration, and a configuration of another type",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /}}], filters: [{type: RequestHeaderModifier, requestMirror: {backendRef: {group: "", kind: Service, name: svc, port: 80}}}]}]}`,
			want: []string{
				"filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type",
				"filter.requestMirror must be nil if the filter.type is not RequestMirror",
			},
		},
		{
			name: "repeated URLRewrite filter",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /}}], filters: [{type: URLRewrite, urlRewrite: {hostname: a.com}}, {type: URLRewrite, urlRewrite: {hostname: b.com}}]}]}`,
			want: []string{"URLRewrite filter cannot be repeated"},
		},
		{
			name: "RequestRedirect together with backendRefs",
			spec: `{rules: [{matches: [{path: {type: PathPrefix, value: /}}], filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}], backendRefs: [{group: "", kind: Service, name: svc, port: 80}]}]}`,
			want: []string{"RequestRedirect filter must not be used together with backendRefs"},
		},
		{
			name: "more than 128 matches across rules",
			spec: tooManyMatches(),
			want: []string{"total number of matches across all rules in a route must be less than 128"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
				"metadata": map[string]any{"name": "foo", "namespace": "default"},
				"spec":     mustObject(t, tt.spec),
			}
			got := errorStrings(v.Validate(context.Background(), nil, obj, nil))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, w) }) {
					t.Errorf("no error contains %q:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

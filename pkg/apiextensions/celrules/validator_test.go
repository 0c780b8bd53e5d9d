package celrules

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// specSchema wraps the schema of spec in a resource root.
func specSchema(spec string) string {
	return "type: object\nproperties:\n  spec:\n" + indent(spec, "    ")
}

func indent(s, prefix string) string {
	out := ""
	line := ""
	for _, c := range s {
		if c == '\n' {
			if line != "" {
				out += prefix + line
			}
			out += "\n"
			line = ""
			continue
		}
		line += string(c)
	}
	if line != "" {
		out += prefix + line + "\n"
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		schema string // of spec
		obj    string // spec
		old    string // spec; empty on create
		// invalidCRD marks schemas ValidateRules rejects, evaluated anyway.
		invalidCRD bool
		want       []string
	}{
		{
			name: "self rule with message fails on an object",
			schema: `type: object
properties:
  replicas: {type: integer}
  maxReplicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas <= self.maxReplicas
  message: replicas must not exceed maxReplicas`,
			obj:  `{replicas: 5, maxReplicas: 3}`,
			want: []string{"spec: Invalid value: replicas must not exceed maxReplicas"},
		},
		{
			name: "self rule passes",
			schema: `type: object
properties:
  replicas: {type: integer}
  maxReplicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas <= self.maxReplicas`,
			obj: `{replicas: 2, maxReplicas: 3}`,
		},
		{
			name: "rule without message reports the rule",
			schema: `type: object
properties:
  minReplicas: {type: integer}
  replicas: {type: integer}
x-kubernetes-validations:
- rule: "self.minReplicas <= self.replicas"`,
			obj:  `{minReplicas: 4, replicas: 3}`,
			want: []string{"spec: Invalid value: failed rule: self.minReplicas <= self.replicas"},
		},
		{
			name: "rule on a scalar reports its value",
			schema: `type: object
properties:
  name:
    type: string
    x-kubernetes-validations:
    - rule: self == self.lowerAscii()
      message: must be lowercase`,
			obj:  `{name: Foo}`,
			want: []string{`spec.name: Invalid value: "Foo": must be lowercase`},
		},
		{
			name: "gateway-api: immutable controllerName is skipped on create",
			schema: `type: object
properties:
  controllerName:
    type: string
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: field is immutable`,
			obj: `{controllerName: example.com/b}`,
		},
		{
			name: "gateway-api: immutable controllerName on update",
			schema: `type: object
properties:
  controllerName:
    type: string
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: field is immutable`,
			obj:  `{controllerName: example.com/b}`,
			old:  `{controllerName: example.com/a}`,
			want: []string{`spec.controllerName: Invalid value: "example.com/b": field is immutable`},
		},
		{
			name: "transition rule is skipped when the old value is absent",
			schema: `type: object
properties:
  clusterName:
    type: string
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: clusterName is immutable`,
			obj: `{clusterName: b}`,
			old: `{}`,
		},
		{
			name: "cluster-api: immutable field checked from the parent with has()",
			schema: `type: object
properties:
  clusterName: {type: string}
x-kubernetes-validations:
- rule: "!has(oldSelf.clusterName) || self.clusterName == oldSelf.clusterName"
  message: clusterName is immutable`,
			obj:  `{clusterName: b}`,
			old:  `{clusterName: a}`,
			want: []string{"spec: Invalid value: clusterName is immutable"},
		},
		{
			name: "optionalOldSelf runs on create",
			schema: `type: object
properties:
  tier: {type: string}
x-kubernetes-validations:
- rule: "oldSelf.hasValue() ? oldSelf.value().tier == self.tier : self.tier == 'free'"
  optionalOldSelf: true
  message: new objects start in the free tier and never change tier`,
			obj:  `{tier: gold}`,
			want: []string{"spec: Invalid value: new objects start in the free tier and never change tier"},
		},
		{
			name: "optionalOldSelf on update",
			schema: `type: object
properties:
  tier: {type: string}
x-kubernetes-validations:
- rule: "oldSelf.hasValue() ? oldSelf.value().tier == self.tier : self.tier == 'free'"
  optionalOldSelf: true
  message: new objects start in the free tier and never change tier`,
			obj: `{tier: gold}`,
			old: `{tier: gold}`,
		},
		{
			name: "messageExpression",
			schema: `type: object
properties:
  mode: {type: string, maxLength: 32}
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.mode != 'Single' || self.replicas == 1
  messageExpression: "'mode ' + self.mode + ' allows one replica, not ' + (self.replicas > 9 ? 'many' : 'a few')"`,
			obj:  `{mode: Single, replicas: 5}`,
			want: []string{"spec: Invalid value: mode Single allows one replica, not a few"},
		},
		{
			name: "messageExpression that fails falls back to message",
			schema: `type: object
properties:
  replicas: {type: integer}
  name: {type: string}
x-kubernetes-validations:
- rule: self.replicas < 3
  message: too many replicas
  messageExpression: "'too many replicas for ' + self.name"`,
			obj:  `{replicas: 5}`,
			want: []string{"spec: Invalid value: too many replicas"},
		},
		{
			name: "messageExpression that is empty falls back to the rule",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas < 3
  messageExpression: "' '"`,
			obj:  `{replicas: 5}`,
			want: []string{"spec: Invalid value: failed rule: self.replicas < 3"},
		},
		{
			name: "reason Forbidden",
			schema: `type: object
properties:
  debug: {type: boolean}
x-kubernetes-validations:
- rule: "!has(self.debug)"
  message: debug may not be set
  reason: FieldValueForbidden`,
			obj:  `{debug: true}`,
			want: []string{"spec: Forbidden: debug may not be set"},
		},
		{
			name: "reason Required with fieldPath",
			schema: `type: object
properties:
  type: {type: string}
  requestHeaderModifier: {type: object}
x-kubernetes-validations:
- rule: "!(has(self.type) && self.type == 'RequestHeaderModifier') || has(self.requestHeaderModifier)"
  message: filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type
  reason: FieldValueRequired
  fieldPath: .requestHeaderModifier`,
			obj:  `{type: RequestHeaderModifier}`,
			want: []string{"spec.requestHeaderModifier: Required value: filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type"},
		},
		{
			name: "reason Duplicate reports the value only",
			schema: `type: object
properties:
  name:
    type: string
    x-kubernetes-validations:
    - rule: self != 'default'
      message: default is taken
      reason: FieldValueDuplicate`,
			obj:  `{name: default}`,
			want: []string{`spec.name: Duplicate value: "default"`},
		},
		{
			name: "fieldPath into a map by key",
			schema: `type: object
properties:
  labels:
    type: object
    additionalProperties: {type: string}
x-kubernetes-validations:
- rule: "!('app' in self.labels) || self.labels['app'] != ''"
  message: app label must not be empty
  fieldPath: ".labels['app']"`,
			obj:  `{labels: {app: ""}}`,
			want: []string{"spec.labels[app]: Invalid value: app label must not be empty"},
		},
		{
			name: "rule on map values, each at its key",
			schema: `type: object
properties:
  labels:
    type: object
    additionalProperties:
      type: string
      x-kubernetes-validations:
      - rule: self.size() <= 3
        message: too long`,
			obj:  `{labels: {a: ok, b: toolong}}`,
			want: []string{`spec.labels[b]: Invalid value: "toolong": too long`},
		},
		{
			name: "transition rule on map values correlates by key",
			schema: `type: object
properties:
  limits:
    type: object
    additionalProperties:
      type: integer
      x-kubernetes-validations:
      - rule: self >= oldSelf
        message: limits may only grow`,
			obj:  `{limits: {cpu: 1, mem: 5, disk: 1}}`,
			old:  `{limits: {cpu: 2, mem: 4}}`,
			want: []string{"spec.limits[cpu]: Invalid value: 1: limits may only grow"},
		},
		{
			name: "list-type=map items correlate by key regardless of order",
			schema: `type: object
properties:
  listeners:
    type: array
    maxItems: 64
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string}
        port: {type: integer}
      x-kubernetes-validations:
      - rule: self.port == oldSelf.port
        message: port is immutable`,
			obj:  `{listeners: [{name: new, port: 1}, {name: https, port: 8443}, {name: http, port: 80}]}`,
			old:  `{listeners: [{name: http, port: 80}, {name: https, port: 443}]}`,
			want: []string{"spec.listeners[1]: Invalid value: port is immutable"},
		},
		{
			name: "list-type=map equality ignores order",
			schema: `type: object
properties:
  listeners:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string}
        port: {type: integer}
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: listeners are immutable`,
			obj: `{listeners: [{name: https, port: 443}, {name: http, port: 80}]}`,
			old: `{listeners: [{name: http, port: 80}, {name: https, port: 443}]}`,
		},
		{
			name: "gateway-api: listener names unique",
			schema: `type: object
properties:
  listeners:
    type: array
    maxItems: 64
    items:
      type: object
      properties:
        name: {type: string, maxLength: 253}
        port: {type: integer}
    x-kubernetes-validations:
    - rule: self.all(l1, self.exists_one(l2, l1.name == l2.name))
      message: Listener name must be unique within the Gateway`,
			obj:  `{listeners: [{name: a, port: 80}, {name: a, port: 81}]}`,
			want: []string{"spec.listeners: Invalid value: Listener name must be unique within the Gateway"},
		},
		{
			name: "gateway-api: backendRef to a Service needs a port",
			schema: `type: object
properties:
  group: {type: string, default: ""}
  kind: {type: string, default: Service}
  name: {type: string}
  port: {type: integer}
x-kubernetes-validations:
- rule: "(size(self.group) == 0 && self.kind == 'Service') ? has(self.port) : true"
  message: Must have port for Service reference`,
			obj:  `{group: "", kind: Service, name: svc}`,
			want: []string{"spec: Invalid value: Must have port for Service reference"},
		},
		{
			name: "int-or-string port or percentage",
			schema: `type: object
properties:
  maxUnavailable:
    x-kubernetes-int-or-string: true
    x-kubernetes-validations:
    - rule: "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')"
      message: must be a non-negative integer or a percentage`,
			obj:  `{maxUnavailable: "50"}`,
			want: []string{`spec.maxUnavailable: Invalid value: "50": must be a non-negative integer or a percentage`},
		},
		{
			name: "int-or-string integer passes",
			schema: `type: object
properties:
  maxUnavailable:
    x-kubernetes-int-or-string: true
    x-kubernetes-validations:
    - rule: "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')"`,
			obj: `{maxUnavailable: 2}`,
		},
		{
			name: "quantity requests not above limits",
			schema: `type: object
properties:
  requests: {type: string, maxLength: 64}
  limits: {type: string, maxLength: 64}
x-kubernetes-validations:
- rule: "!quantity(self.requests).isGreaterThan(quantity(self.limits))"
  messageExpression: "'requests ' + self.requests + ' exceed limits ' + self.limits"`,
			obj:  `{requests: 1500m, limits: "1"}`,
			want: []string{"spec: Invalid value: requests 1500m exceed limits 1"},
		},
		{
			name: "quantity of a bad string is an evaluation error",
			schema: `type: object
properties:
  size:
    type: string
    maxLength: 64
    x-kubernetes-validations:
    - rule: quantity(self).isGreaterThan(quantity('1Gi'))`,
			obj:  `{size: lots}`,
			want: []string{`spec.size: Invalid value: "string": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: quantity(self).isGreaterThan(quantity('1Gi'))`},
		},
		{
			name: "regex find",
			schema: `type: object
properties:
  image:
    type: string
    x-kubernetes-validations:
    - rule: "self.find(':[^:/]+$') != ':latest'"
      message: the latest tag is not allowed`,
			obj:  `{image: "registry.example.com/app:latest"}`,
			want: []string{`spec.image: Invalid value: "registry.example.com/app:latest": the latest tag is not allowed`},
		},
		{
			name: "url scheme",
			schema: `type: object
properties:
  endpoint:
    type: string
    x-kubernetes-validations:
    - rule: "isURL(self) && url(self).getScheme() == 'https'"
      message: endpoint must be an https URL`,
			obj:  `{endpoint: "http://example.com/hook"}`,
			want: []string{`spec.endpoint: Invalid value: "http://example.com/hook": endpoint must be an https URL`},
		},
		{
			name: "cidr and ip",
			schema: `type: object
properties:
  podCIDR: {type: string, maxLength: 43}
  gateway: {type: string, maxLength: 39}
x-kubernetes-validations:
- rule: cidr(self.podCIDR).containsIP(self.gateway)
  message: gateway must be inside podCIDR`,
			obj:  `{podCIDR: 10.0.0.0/16, gateway: 10.1.0.1}`,
			want: []string{"spec: Invalid value: gateway must be inside podCIDR"},
		},
		{
			name: "format library",
			schema: `type: object
properties:
  hostname:
    type: string
    maxLength: 63
    x-kubernetes-validations:
    - rule: "!format.dns1123Label().validate(self).hasValue()"
      messageExpression: "format.dns1123Label().validate(self).value()[0]"`,
			obj:  `{hostname: Bad_Name}`,
			want: []string{`spec.hostname: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		},
		{
			name: "missing field is an evaluation error",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas > 0`,
			obj:  `{}`,
			want: []string{`spec: Invalid value: "object": no such key: replicas evaluating rule: self.replicas > 0`},
		},
		{
			name: "rule that does not compile is reported at every validation",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas
- rule: self.replicas > 1`,
			invalidCRD: true,
			obj:        `{replicas: 1}`,
			want: []string{
				`spec: Invalid value: "object": rule compile error: cel expression must evaluate to a bool`,
				"spec: Invalid value: failed rule: self.replicas > 1",
			},
		},
		{
			name: "call cost limit stops evaluation",
			schema: `type: object
properties:
  items:
    type: array
    items: {type: string}
x-kubernetes-validations:
- rule: self.items.all(x, self.items.all(y, x == y))
- rule: "false"
  message: never reached`,
			invalidCRD: true,
			// 200*200 comparisons of 1000-byte strings (cost 100 each)
			obj: "{items: [" + strings.Repeat(`"`+strings.Repeat("a", 1000)+`",`, 200) + "]}",
			want: []string{
				`spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(x, self.items.all(y, x == y))`,
			},
		},
		{
			name: "an immutable embedded resource changes in fields rules cannot see",
			schema: `type: object
properties:
  template:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: template is immutable`,
			obj:  `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {containers: [{name: c, image: "app:2"}]}}}`,
			old:  `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {containers: [{name: c, image: "app:1"}]}}}`,
			want: []string{"spec.template: Invalid value: template is immutable"},
		},
		{
			name: "an immutable embedded resource with changed labels",
			schema: `type: object
properties:
  template:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: template is immutable`,
			obj:  `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: c}}}}`,
			old:  `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}}}`,
			want: []string{"spec.template: Invalid value: template is immutable"},
		},
		{
			name: "an unchanged embedded resource",
			schema: `type: object
properties:
  template:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    x-kubernetes-validations:
    - rule: self == oldSelf
      message: template is immutable`,
			obj: `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {x: 1}}}`,
			old: `{template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {x: 1}}}`,
		},
		{
			name: "date-time strings are timestamps",
			schema: `type: object
properties:
  start: {type: string, format: date-time}
  end: {type: string, format: date-time}
x-kubernetes-validations:
- rule: self.start < self.end
  message: start must be before end`,
			obj:  `{start: "2024-05-01T00:00:00Z", end: "2024-04-01T00:00:00Z"}`,
			want: []string{"spec: Invalid value: start must be before end"},
		},
		{
			name: "escaped property names",
			schema: `type: object
properties:
  namespace: {type: string}
  x-ref: {type: string}
x-kubernetes-validations:
- rule: self.__namespace__ == self.x__dash__ref`,
			obj:  `{namespace: a, x-ref: b}`,
			want: []string{"spec: Invalid value: failed rule: self.__namespace__ == self.x__dash__ref"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, specSchema(tt.schema))
			if errs := ValidateRules(schemaPath, s); !tt.invalidCRD && len(errs) > 0 {
				t.Fatalf("schema rejected: %v", errs)
			}
			v, err := NewValidator(s)
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"spec": mustObject(t, tt.obj)}
			var old any
			if tt.old != "" {
				old = map[string]any{"spec": mustObject(t, tt.old)}
			}
			got := errorStrings(v.Validate(context.Background(), nil, obj, old))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateResourceRoot(t *testing.T) {
	s := mustSchema(t, `
type: object
x-kubernetes-validations:
- rule: self.metadata.name.startsWith('team-')
  messageExpression: "'name ' + self.metadata.name + ' must start with team-'"
- rule: self.kind == 'Widget' && self.apiVersion.startsWith('example.com/')
properties:
  spec:
    type: object
    properties:
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-validations:
        - rule: self.kind == 'Pod'
          message: template must be a Pod
`)
	if errs := ValidateRules(schemaPath, s); len(errs) > 0 {
		t.Fatalf("schema rejected: %v", errs)
	}
	v, err := NewValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	obj := mustObject(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: other, namespace: ns, labels: {a: b}},
spec: {template: {apiVersion: v1, kind: Service, metadata: {name: x}, spec: {}}}}`)
	got := errorStrings(v.Validate(context.Background(), nil, obj, nil))
	want := []string{
		"<nil>: Invalid value: name other must start with team-",
		"spec.template: Invalid value: template must be a Pod",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateTypedNilOld(t *testing.T) {
	v, err := NewValidator(mustSchema(t, specSchema(`type: object
properties:
  a: {type: string}
x-kubernetes-validations:
- rule: self.a == oldSelf.a
  message: a is immutable`)))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"spec": map[string]any{"a": "x"}}
	var noOld map[string]any
	if errs := v.Validate(context.Background(), nil, obj, noOld); len(errs) > 0 {
		t.Errorf("a nil old map is a create, got %v", errs)
	}
	if errs := v.Validate(context.Background(), nil, obj, map[string]any{"spec": map[string]any(nil)}); len(errs) > 0 {
		t.Errorf("a nil old spec has nothing to compare, got %v", errs)
	}
}

func TestNewValidatorWithoutRules(t *testing.T) {
	v, err := NewValidator(mustSchema(t, `{type: object, properties: {spec: {type: object}}}`))
	if err != nil || v != nil {
		t.Fatalf("NewValidator = %v, %v; want nil, nil", v, err)
	}
	if errs := v.Validate(context.Background(), nil, map[string]any{}, nil); errs != nil {
		t.Fatalf("nil validator returned %v", errs)
	}
}

func TestValidateRuntimeBudget(t *testing.T) {
	// find() costs about len(s)/10 * len(regex)/4: here about 100k a call,
	// so 150 items exceed the 10M budget of the whole object.
	s := mustSchema(t, specSchema(`type: object
properties:
  items:
    type: array
    items:
      type: object
      properties:
        s: {type: string}
      x-kubernetes-validations:
      - rule: self.s.find('`+strings.Repeat("a?", 200)+`') == ''`))
	v, err := NewValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("b", 10000)
	items := make([]any, 150)
	for i := range items {
		items[i] = map[string]any{"s": long}
	}
	errs := v.Validate(context.Background(), field.NewPath("root"), map[string]any{"spec": map[string]any{"items": items}}, nil)
	want := []string{"root.spec.items[99]: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"}
	if diff := cmp.Diff(want, errorStrings(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateConcurrently(t *testing.T) {
	s := mustSchema(t, specSchema(`type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas < 10
- rule: self.replicas >= oldSelf.replicas`))
	v, err := NewValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				replicas := int64(i%5 + j%5)
				obj := map[string]any{"spec": map[string]any{"replicas": replicas}}
				old := map[string]any{"spec": map[string]any{"replicas": int64(i % 5)}}
				if errs := v.Validate(context.Background(), nil, obj, old); len(errs) != 0 {
					t.Errorf("replicas %d: %v", replicas, errs)
				}
			}
		})
	}
	wg.Wait()
}

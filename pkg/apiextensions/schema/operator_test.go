package schema

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// operatorSchema is written in the style controller-gen emits for large
// operator CRDs: quantities as int-or-string with anyOf and a pattern,
// list-maps with defaulted keys, an embedded resource template with its
// own metadata, and a preserved status.
const operatorSchema = `
type: object
description: A Workload runs containers.
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [containers]
    properties:
      retention:
        type: string
        default: 24h
        pattern: ^(0|(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?)$
      resources:
        type: object
        properties:
          limits:
            type: object
            additionalProperties:
              anyOf: [{type: integer}, {type: string}]
              pattern: ^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE])?$
              x-kubernetes-int-or-string: true
      containers:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            image: {type: string}
            ports:
              type: array
              x-kubernetes-list-type: map
              x-kubernetes-list-map-keys: [containerPort, protocol]
              items:
                type: object
                required: [containerPort]
                properties:
                  containerPort: {type: integer, format: int32}
                  protocol: {type: string, default: TCP}
            probe:
              type: object
              properties:
                port:
                  anyOf: [{type: integer}, {type: string}]
                  x-kubernetes-int-or-string: true
      claimTemplate:
        type: object
        x-kubernetes-embedded-resource: true
        properties:
          metadata:
            type: object
            properties:
              labels: {type: object, additionalProperties: {type: string}}
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
`

func TestOperatorStyleCRD(t *testing.T) {
	s := props(t, operatorSchema)
	if errs := ValidateStructural(schemaPath, s); len(errs) != 0 {
		t.Fatalf("ValidateStructural: %v", errs)
	}
	if errs := ValidateSchema(schemaPath, s); len(errs) != 0 {
		t.Fatalf("ValidateSchema: %v", errs)
	}
	ss, err := NewStructural(s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValidator(s)
	if err != nil {
		t.Fatal(err)
	}

	obj := object(t, `{
	  "apiVersion": "example.com/v1", "kind": "Workload", "metadata": {"name": "w", "annotations": {"a": "b"}},
	  "spec": {
	    "resources": {"limits": {"cpu": "500m", "memory": 1024, "gpu": "lots", "bad": true}},
	    "containers": [
	      {"name": "app", "image": "img", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"}], "probe": {"port": "http"}, "extra": 1},
	      {"name": "app", "probe": {"port": 8080}}
	    ],
	    "claimTemplate": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "labels": {"x": "y"}, "finalizers": ["f"], "junk": 1}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
	    "unknownSpecField": {}
	  },
	  "status": {"anything": [1, "two"]},
	  "unknownRoot": true
	}`)

	gotPruned := Prune(obj, ss, true)
	wantPruned := []string{
		"spec.claimTemplate.metadata.junk",
		"spec.containers[0].extra",
		"spec.unknownSpecField",
		"unknownRoot",
	}
	if diff := cmp.Diff(wantPruned, gotPruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	Default(obj, ss)
	spec := obj["spec"].(map[string]any)
	if got := spec["retention"]; got != "24h" {
		t.Errorf("retention defaulted to %v, want 24h", got)
	}
	// As in Kubernetes, an embedded resource's metadata is pruned to
	// ObjectMeta, not to its schema.
	wantMeta := map[string]any{"name": "data", "labels": map[string]any{"x": "y"}, "finalizers": []any{"f"}}
	if diff := cmp.Diff(wantMeta, spec["claimTemplate"].(map[string]any)["metadata"]); diff != "" {
		t.Errorf("embedded metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"anything": []any{int64(1), "two"}}, obj["status"]); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	got := messages(v.Validate(nil, obj))
	sort.Strings(got)
	want := []string{
		`<nil>: Invalid value: "": "spec.resources.limits.bad" must validate at least one schema (anyOf)`,
		`spec.containers[0].ports[1]: Duplicate value: {"containerPort":80,"protocol":"TCP"}`,
		`spec.containers[1]: Duplicate value: {"name":"app"}`,
		`spec.resources.limits.bad: Invalid value: "boolean": spec.resources.limits.bad in body must be of type integer,string: "boolean"`,
		`spec.resources.limits.bad: Invalid value: "boolean": spec.resources.limits.bad in body must be of type integer: "boolean"`,
		`spec.resources.limits.gpu: Invalid value: "lots": spec.resources.limits.gpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE])?$'`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}

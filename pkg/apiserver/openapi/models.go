package openapi

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Models returns the OpenAPI 3 schemas of kinds, the form
// k8s.io/kube-openapi/pkg/schemaconv.ToSchemaFromOpenAPI turns into the
// structured-merge-diff schema server-side apply merges by, and the
// definition name of each kind's object.
//
// The schemas are those the /openapi/v3 documents publish: built by
// reflection for built-in kinds (with Kubernetes' list, map and struct
// types and defaults, see the package documentation) and from Kind.Schema
// for custom ones, referring to each other as "#/components/schemas/<name>".
// The map holds every definition the kinds reach, their lists' included,
// and autoscaling/v1 Scale when a kind has a scale subresource (named in
// the second map too, like the kinds).
// Models is safe for concurrent use; each call builds afresh and the
// caller owns the returned values. It returns an error for an invalid
// Kind, two kinds sharing a group, version and kind, or a type with no
// JSON schema.
func Models(kinds []Kind) (map[string]*spec.Schema, map[schema.GroupVersionKind]string, error) {
	defs := newDefinitions()
	names := make(map[schema.GroupVersionKind]string, len(kinds))
	for i, k := range kinds {
		if err := validateKind(k); err != nil {
			return nil, nil, fmt.Errorf("openapi: kind %d (%s): %w", i, k.GVK, err)
		}
		if _, dup := names[k.GVK]; dup {
			return nil, nil, fmt.Errorf("openapi: kind %s is declared twice", k.GVK)
		}
		objDef, _, err := defs.addKind(k)
		if err != nil {
			return nil, nil, fmt.Errorf("openapi: kind %s: %w", k.GVK, err)
		}
		names[k.GVK] = objDef
	}
	if slices.ContainsFunc(kinds, func(k Kind) bool { return slices.Contains(k.Subresources, "scale") }) {
		scaleDef, err := defs.add(scaleType)
		if err != nil {
			return nil, nil, fmt.Errorf("openapi: %w", err)
		}
		defs.addGVK(scaleDef, scaleGVK)
		if _, ok := names[scaleGVK]; !ok {
			names[scaleGVK] = scaleDef
		}
	}
	rendered := make(map[string]any, len(defs.schemas))
	for name, s := range defs.schemas {
		rendered[name] = s.render(openAPI3)
	}
	data, err := json.Marshal(rendered)
	if err != nil {
		return nil, nil, fmt.Errorf("openapi: encode models: %w", err)
	}
	models := make(map[string]*spec.Schema, len(rendered))
	if err := json.Unmarshal(data, &models); err != nil {
		return nil, nil, fmt.Errorf("openapi: decode models: %w", err)
	}
	return models, names, nil
}

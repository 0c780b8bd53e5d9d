package schema

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// metaFields are the fields of a Kubernetes object that its schema does not
// describe: they are kept by pruning and checked as TypeMeta and ObjectMeta.
var metaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

// asResourceRoot returns s marked as an embedded resource, the way the
// root of a custom resource is treated.
func asResourceRoot(s *Structural) *Structural {
	if s == nil {
		return &Structural{XEmbeddedResource: true}
	}
	if s.XEmbeddedResource {
		return s
	}
	c := *s
	c.XEmbeddedResource = true
	return &c
}

// validateEmbeddedResources checks apiVersion, kind and metadata of every
// embedded resource in x, and of x itself when isResourceRoot.
func validateEmbeddedResources(pth *field.Path, x any, s *Structural, isResourceRoot bool) field.ErrorList {
	if isResourceRoot {
		s = asResourceRoot(s)
	}
	return validateEmbedded(pth, x, s)
}

func validateEmbedded(pth *field.Path, x any, s *Structural) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	switch x := x.(type) {
	case map[string]any:
		if s.XEmbeddedResource {
			errs = append(errs, validateEmbeddedResource(pth, x)...)
		}
		for _, k := range sortedKeys(x) {
			if prop, ok := s.Properties[k]; ok {
				errs = append(errs, validateEmbedded(pth.Child(k), x[k], prop)...)
			} else if s.AdditionalProperties != nil {
				errs = append(errs, validateEmbedded(pth.Key(k), x[k], s.AdditionalProperties.Structural)...)
			}
		}
	case []any:
		for i, v := range x {
			errs = append(errs, validateEmbedded(pth.Index(i), v, s.Items)...)
		}
	}
	return errs
}

func validateEmbeddedResource(pth *field.Path, x map[string]any) field.ErrorList {
	var errs field.ErrorList
	if _, found := x["apiVersion"]; !found {
		errs = append(errs, field.Required(pth.Child("apiVersion"), ""))
	}
	if _, found := x["kind"]; !found {
		errs = append(errs, field.Required(pth.Child("kind"), ""))
	}
	if v, found := x["apiVersion"]; found {
		if apiVersion, ok := v.(string); !ok {
			errs = append(errs, field.Invalid(pth.Child("apiVersion"), v, "must be a string"))
		} else if apiVersion == "" {
			errs = append(errs, field.Invalid(pth.Child("apiVersion"), apiVersion, "must not be empty"))
		} else if _, err := runtimeschema.ParseGroupVersion(apiVersion); err != nil {
			errs = append(errs, field.Invalid(pth.Child("apiVersion"), apiVersion, err.Error()))
		}
	}
	if v, found := x["kind"]; found {
		if kind, ok := v.(string); !ok {
			errs = append(errs, field.Invalid(pth.Child("kind"), v, "must be a string"))
		} else if kind == "" {
			errs = append(errs, field.Invalid(pth.Child("kind"), kind, "must not be empty"))
		} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(kind)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(pth.Child("kind"), kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	if v, found := x["metadata"]; found {
		meta, _, _, err := objectMetaOf(x, false, false, nil)
		if err != nil {
			errs = append(errs, field.Invalid(pth.Child("metadata"), v, err.Error()))
		} else {
			if meta.Name == "" {
				meta.Name = "fakename" // a name is required by ObjectMeta validation, not here
			}
			errs = append(errs, metavalidation.ValidateObjectMeta(meta, meta.Namespace != "", pathSegmentName, pth.Child("metadata"))...)
		}
	}
	return errs
}

func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// objectMetaOf decodes x["metadata"] into an ObjectMeta. With
// dropMalformed, fields that do not decode are dropped one by one instead
// of failing; with unknownPaths, the paths of fields ObjectMeta does not
// have are returned (below pth.metadata).
func objectMetaOf(x map[string]any, dropMalformed, unknownPaths bool, pth *field.Path) (*metav1.ObjectMeta, bool, []string, error) {
	metadata, found := x["metadata"]
	if !found {
		return nil, false, nil, nil
	}
	b, err := utiljson.Marshal(metadata)
	if err != nil {
		return nil, false, nil, err
	}
	prefix := pth.Child("metadata").String()
	meta := &metav1.ObjectMeta{}
	var unknown []string
	strict, err := kjson.UnmarshalStrict(b, meta)
	if err == nil {
		if unknownPaths {
			unknown = appendStrictPaths(unknown, prefix, strict)
		}
		return meta, true, unknown, nil
	}
	if !dropMalformed {
		return nil, true, nil, err
	}
	m, ok := metadata.(map[string]any)
	if !ok {
		return nil, false, nil, fmt.Errorf("invalid metadata: expected object, got %T", metadata)
	}
	meta = &metav1.ObjectMeta{}
	for _, k := range sortedKeys(m) {
		one, err := utiljson.Marshal(map[string]any{k: m[k]})
		if err != nil {
			continue
		}
		if utiljson.Unmarshal(one, &metav1.ObjectMeta{}) != nil {
			continue
		}
		strict, _ := kjson.UnmarshalStrict(one, meta)
		if unknownPaths {
			unknown = appendStrictPaths(unknown, prefix, strict)
		}
	}
	return meta, true, unknown, nil
}

func appendStrictPaths(paths []string, prefix string, strict []error) []string {
	for _, err := range strict {
		if fe, ok := err.(kjson.FieldError); ok {
			paths = append(paths, prefix+"."+fe.FieldPath())
		}
	}
	return paths
}

// coerceEmbeddedMetadata normalises apiVersion, kind and metadata of the
// embedded resources in x (and x itself when isResourceRoot) as
// kube-apiserver's decoder does: metadata is round-tripped through
// ObjectMeta, so unknown and (with dropInvalid) malformed metadata fields
// disappear. It returns the paths of the unknown metadata fields.
func coerceEmbeddedMetadata(pth *field.Path, x any, s *Structural, isResourceRoot, dropInvalid bool) (*field.Error, []string) {
	if isResourceRoot {
		s = asResourceRoot(s)
	}
	var unknown []string
	err := coerce(pth, x, s, dropInvalid, &unknown)
	sort.Strings(unknown)
	return err, unknown
}

func coerce(pth *field.Path, x any, s *Structural, dropInvalid bool, unknown *[]string) *field.Error {
	if s == nil {
		return nil
	}
	switch x := x.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			v, ok := x[k]
			if !ok {
				continue
			}
			if s.XEmbeddedResource {
				switch k {
				case "apiVersion", "kind":
					if _, ok := v.(string); !ok {
						if !dropInvalid {
							return field.Invalid(pth.Child(k), v, "must be a string")
						}
						delete(x, k)
					}
				case "metadata":
					meta, found, paths, err := objectMetaOf(x, dropInvalid, true, pth)
					*unknown = append(*unknown, paths...)
					if err != nil {
						if !dropInvalid {
							return field.Invalid(pth.Child("metadata"), v, err.Error())
						}
					} else if found {
						u, err := objectMetaToUnstructured(meta)
						if err != nil {
							return field.Invalid(pth.Child("metadata"), v, err.Error())
						}
						x["metadata"] = u
						v = u
					}
				}
			}
			if prop, ok := s.Properties[k]; ok {
				if err := coerce(pth.Child(k), v, prop, dropInvalid, unknown); err != nil {
					return err
				}
			} else if s.AdditionalProperties != nil {
				if err := coerce(pth.Key(k), v, s.AdditionalProperties.Structural, dropInvalid, unknown); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, v := range x {
			if err := coerce(pth.Index(i), v, s.Items, dropInvalid, unknown); err != nil {
				return err
			}
		}
	}
	return nil
}

// coerceMetadata reduces x["metadata"] to the fields of ObjectMeta,
// dropping malformed ones, and returns the paths of the unknown ones. A
// metadata that does not decode at all is left as it is.
func coerceMetadata(pth *field.Path, x map[string]any) []string {
	meta, found, unknown, err := objectMetaOf(x, true, true, pth)
	if err != nil || !found {
		return nil
	}
	u, err := objectMetaToUnstructured(meta)
	if err != nil {
		return nil
	}
	x["metadata"] = u
	return unknown
}

// objectMetaToUnstructured encodes meta as JSON values, leaving out a zero
// creationTimestamp rather than writing null.
func objectMetaToUnstructured(meta *metav1.ObjectMeta) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta)
	if err != nil {
		return nil, err
	}
	if meta.CreationTimestamp.IsZero() {
		delete(u, "creationTimestamp")
	}
	return u, nil
}

// sortedKeys returns the keys of m in order, for deterministic traversals.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// deepCopyJSON copies a JSON value; values of other types are returned as
// they are.
func deepCopyJSON(x any) any {
	switch x := x.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, v := range x {
			c[k] = deepCopyJSON(v)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, v := range x {
			c[i] = deepCopyJSON(v)
		}
		return c
	}
	return x
}

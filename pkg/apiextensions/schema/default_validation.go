package schema

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// surroundingStep is one step from an embedded resource (or the root) down
// to a default inside its metadata: a field name, or an array element.
type surroundingStep struct {
	key   string
	index bool
}

// validateDefaults checks every default of the structural schema s (a
// resource root) as kube-apiserver does for new CRDs: it must be pruned,
// give valid metadata where it applies to metadata, and validate against
// its schema. Defaults under additionalProperties are not checked, as in
// Kubernetes.
func validateDefaults(pth *field.Path, s *Structural) field.ErrorList {
	return defaultsOf(pth, asResourceRoot(s), nil, nil, false)
}

func defaultsOf(pth *field.Path, s, root *Structural, steps []surroundingStep, insideMeta bool) field.ErrorList {
	if s == nil {
		return nil
	}
	if s.XEmbeddedResource {
		insideMeta = false
		steps = nil
		root = s
	}
	var errs field.ErrorList
	if s.Default != nil {
		errs = append(errs, checkDefault(pth, s, root, steps, insideMeta)...)
	}
	if s.Items != nil {
		errs = append(errs, defaultsOf(pth.Child("items"), s.Items, root, appendStep(steps, surroundingStep{index: true}), insideMeta)...)
	}
	for _, k := range sortedStructuralNames(s.Properties) {
		sub := insideMeta || (s.XEmbeddedResource && metaFields[k])
		errs = append(errs, defaultsOf(pth.Child("properties").Key(k), s.Properties[k], root, appendStep(steps, surroundingStep{key: k}), sub)...)
	}
	return errs
}

func checkDefault(pth *field.Path, s, root *Structural, steps []surroundingStep, insideMeta bool) field.ErrorList {
	dpth := pth.Child("default")
	sv, err := newValueValidator(s.source, forDefaults)
	if err != nil {
		return field.ErrorList{field.Invalid(pth, "", err.Error())}
	}
	if insideMeta {
		// A default in an embedded resource's TypeMeta or ObjectMeta is
		// checked in a whole object around it.
		obj, ok := surround(deepCopyJSON(s.Default), steps).(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(dpth, s.Default, "object root default value must be of object type")}
		}
		if _, found := obj["kind"]; !found {
			obj["kind"] = "Validation"
		}
		if _, found := obj["apiVersion"]; !found {
			obj["apiVersion"] = "validation/v1"
		}
		if ferr, _ := coerceEmbeddedMetadata(nil, obj, root, true, false); ferr != nil {
			return field.ErrorList{field.Invalid(dpth, s.Default, fmt.Sprintf("must result in valid metadata: %v", ferr))}
		}
		if merrs := validateEmbeddedResources(nil, obj, root, true); len(merrs) > 0 {
			return field.ErrorList{field.Invalid(dpth, s.Default, fmt.Sprintf("must result in valid metadata: %v", merrs.ToAggregate()))}
		}
		return validateValues(dpth, s.Default, sv)
	}

	var errs field.ErrorList
	pruned := deepCopyJSON(s.Default)
	prunedRoot := s
	if s.XEmbeddedResource {
		prunedRoot = asResourceRoot(s)
	}
	(&pruner{}).prune(pruned, prunedRoot)
	if !reflect.DeepEqual(pruned, s.Default) {
		errs = append(errs, field.Invalid(dpth, s.Default, "must not have unknown fields"))
	}
	value := deepCopyJSON(s.Default)
	if ferr, _ := coerceEmbeddedMetadata(dpth, value, s, s.XEmbeddedResource, false); ferr != nil {
		return append(errs, ferr)
	}
	if merrs := validateEmbeddedResources(dpth, value, s, s.XEmbeddedResource); len(merrs) > 0 {
		return append(errs, merrs...)
	}
	return append(errs, validateValues(dpth, value, sv)...)
}

// surround wraps x in the objects and arrays of steps, outermost first.
func surround(x any, steps []surroundingStep) any {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].index {
			x = []any{x}
		} else {
			x = map[string]any{steps[i].key: x}
		}
	}
	return x
}

func appendStep(steps []surroundingStep, s surroundingStep) []surroundingStep {
	return append(steps[:len(steps):len(steps)], s)
}

func sortedStructuralNames(m map[string]*Structural) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

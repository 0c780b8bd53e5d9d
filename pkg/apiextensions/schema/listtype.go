package schema

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateListSetsAndMaps checks that the arrays of obj with
// x-kubernetes-list-type set have unique elements and those with list-type
// map have unique keys, reporting the first repetition of each value.
func validateListSetsAndMaps(fldPath *field.Path, s *Structural, obj map[string]any) field.ErrorList {
	if s == nil || obj == nil {
		return nil
	}
	var errs field.ErrorList
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		for _, k := range sortedKeys(obj) {
			errs = append(errs, validateListSetsAndMapsValue(fldPath.Key(k), s.AdditionalProperties.Structural, obj[k])...)
		}
	}
	if s.Properties != nil {
		for _, k := range sortedKeys(obj) {
			if sub, ok := s.Properties[k]; ok {
				errs = append(errs, validateListSetsAndMapsValue(fldPath.Child(k), sub, obj[k])...)
			}
		}
	}
	return errs
}

func validateListSetsAndMapsValue(fldPath *field.Path, s *Structural, v any) field.ErrorList {
	if s == nil {
		return nil
	}
	switch v := v.(type) {
	case []any:
		return validateListSetsAndMapsArray(fldPath, s, v)
	case map[string]any:
		return validateListSetsAndMaps(fldPath, s, v)
	}
	return nil
}

func validateListSetsAndMapsArray(fldPath *field.Path, s *Structural, list []any) field.ErrorList {
	var errs field.ErrorList
	switch s.XListType {
	case "set":
		dups, err := repeatedElements(fldPath, list)
		if err != nil {
			errs = append(errs, err)
		} else {
			for _, i := range dups {
				errs = append(errs, field.Duplicate(fldPath.Index(i), list[i]))
			}
		}
	case "map":
		errs = append(errs, validateListMap(fldPath, s, list)...)
	}
	if s.Items != nil {
		for i := range list {
			errs = append(errs, validateListSetsAndMapsValue(fldPath.Index(i), s.Items, list[i])...)
		}
	}
	return errs
}

// missingKey stands for an absent key of a list-map element; it compares
// unequal to every JSON value, null included.
type missingKey struct{}

// repeatedElements returns the index of the second occurrence of every
// value that occurs more than once in list. Compound values compare by
// their JSON encoding.
func repeatedElements(fldPath *field.Path, list []any) ([]int, *field.Error) {
	if len(list) <= 1 {
		return nil, nil
	}
	seenScalars := make(map[any]int, len(list))
	seenCompounds := make(map[string]int, len(list))
	var dups []int
	for i, x := range list {
		var times int
		switch x.(type) {
		case map[string]any, []any:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, field.Invalid(fldPath.Index(i), x, "internal error")
			}
			times = seenCompounds[string(b)]
			seenCompounds[string(b)] = times + 1
		default:
			if !hashable(x) {
				return nil, field.Invalid(fldPath.Index(i), x, "internal error")
			}
			times = seenScalars[x]
			seenScalars[x] = times + 1
		}
		if times == 1 {
			dups = append(dups, i)
		}
	}
	return dups, nil
}

// hashable reports whether x can be a map key without a panic.
func hashable(x any) bool {
	switch x.(type) {
	case nil, string, bool, int64, float64, int, int32, float32, missingKey:
		return true
	}
	return false
}

func validateListMap(fldPath *field.Path, s *Structural, list []any) field.ErrorList {
	for i, x := range list {
		if _, ok := x.(map[string]any); x != nil && !ok {
			return field.ErrorList{field.Invalid(fldPath.Index(i), x, "must be an object for an array of list-type map")}
		}
	}
	if len(list) <= 1 {
		return nil
	}
	if len(s.XListMapKeys) == 1 {
		name := s.XListMapKeys[0]
		keys := make([]any, 0, len(list))
		for _, x := range list {
			m, _ := x.(map[string]any)
			k, ok := m[name]
			if !ok {
				keys = append(keys, missingKey{})
				continue
			}
			keys = append(keys, k)
		}
		dups, err := repeatedElements(fldPath, keys)
		if err != nil {
			return field.ErrorList{err}
		}
		var errs field.ErrorList
		for _, i := range dups {
			if _, missing := keys[i].(missingKey); missing {
				errs = append(errs, field.Duplicate(fldPath.Index(i), map[string]any{}))
			} else {
				errs = append(errs, field.Duplicate(fldPath.Index(i), map[string]any{name: keys[i]}))
			}
		}
		return errs
	}
	keys := make([]any, 0, len(list))
	for _, x := range list {
		key := map[string]any{}
		m, _ := x.(map[string]any)
		for _, name := range s.XListMapKeys {
			if k, ok := m[name]; ok {
				key[name] = k
			}
		}
		keys = append(keys, key)
	}
	dups, err := repeatedElements(fldPath, keys)
	if err != nil {
		return field.ErrorList{err}
	}
	var errs field.ErrorList
	for _, i := range dups {
		errs = append(errs, field.Duplicate(fldPath.Index(i), keys[i]))
	}
	return errs
}

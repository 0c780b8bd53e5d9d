package schema

// Default sets the default of every field of obj that is missing, as
// kube-apiserver does for custom resources: at every depth, in objects
// inside arrays and maps too, before descending into the value (so a
// defaulted object gets its own fields' defaults). A null in a field that
// is not nullable and has a default is replaced by the default; a null in
// a nullable field stays. Defaults are deep-copied into obj. A nil s does
// nothing.
//
// Prune should run first: it removes the non-nullable nulls that have no
// default, which Default leaves alone.
func Default(obj any, s *Structural) {
	if s == nil {
		return
	}
	switch x := obj.(type) {
	case map[string]any:
		for k, prop := range s.Properties {
			if prop.Default == nil {
				continue
			}
			if v, found := x[k]; !found || isNonNullableNull(v, prop) {
				x[k] = deepCopyJSON(prop.Default)
			}
		}
		for k, v := range x {
			if prop, found := s.Properties[k]; found {
				Default(v, prop)
			} else if s.AdditionalProperties != nil {
				ap := s.AdditionalProperties.Structural
				if isNonNullableNull(v, ap) && ap.Default != nil {
					x[k] = deepCopyJSON(ap.Default)
				}
				Default(x[k], ap)
			}
		}
	case []any:
		for i, v := range x {
			if isNonNullableNull(v, s.Items) && s.Items.Default != nil {
				x[i] = deepCopyJSON(s.Items.Default)
			}
			Default(x[i], s.Items)
		}
	}
}

// isNonNullableNull reports whether x is a null where s does not allow one.
func isNonNullableNull(x any, s *Structural) bool {
	return x == nil && s != nil && !s.Nullable
}

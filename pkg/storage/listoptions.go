package storage

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValidateListOptions checks what a GetList request says about itself,
// before any data is read, and returns its resourceVersion as a revision:
// the predicate (Predicate.Validate: no negative limit, no field selector
// the resource cannot evaluate), the resourceVersion (ParseResourceVersion)
// and, for a list that does not continue a token, resourceVersionMatch:
// Exact needs a resourceVersion other than "" and "0", NotOlderThan needs
// one, and no other value is known. Every failure is an
// ErrCodeInvalidRequest naming key; continue tokens are checked by
// DecodeContinue. All backends and the cacher call it, so a malformed
// request fails the same way whichever of them would serve it.
func ValidateListOptions(key string, opts ListOptions) (uint64, error) {
	invalid := func(detail string) error {
		return NewError(ErrCodeInvalidRequest, key, 0, detail)
	}
	if err := opts.Predicate.Validate(); err != nil {
		if se, ok := err.(*Error); ok {
			se.Key = key
		}
		return 0, err
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		if se, ok := err.(*Error); ok {
			se.Key = key
		}
		return 0, err
	}
	switch opts.ResourceVersionMatch {
	case "":
	case metav1.ResourceVersionMatchExact:
		if rv == 0 && opts.Predicate.Continue == "" {
			return 0, invalid("resourceVersionMatch=Exact needs a resourceVersion other than 0")
		}
	case metav1.ResourceVersionMatchNotOlderThan:
		if opts.ResourceVersion == "" && opts.Predicate.Continue == "" {
			return 0, invalid("resourceVersionMatch=NotOlderThan needs a resourceVersion")
		}
	default:
		return 0, invalid(fmt.Sprintf("unknown resourceVersionMatch %q", opts.ResourceVersionMatch))
	}
	return rv, nil
}

package featuregate

import "errors"

// Errors returned by Registry methods, for use with errors.Is. The returned
// errors carry a message naming the feature and value; these are only
// their kinds.
var (
	// ErrUnknownFeature: a setting names a feature the registry does not know.
	ErrUnknownFeature = errors.New("unrecognized feature gate")
	// ErrInvalidValue: a --feature-gates string is malformed.
	ErrInvalidValue = errors.New("invalid feature gate setting")
	// ErrLocked: a feature locked to its default was set to the other
	// value, or its default was overridden.
	ErrLocked = errors.New("feature gate is locked to its default")
	// ErrNotAvailable: a feature was set that does not exist yet at the
	// registry's version (it is PreAlpha there).
	ErrNotAvailable = errors.New("feature gate is not available at this version")
	// ErrInvalidSpec: Add or AddVersioned was given a spec that breaks a
	// rule, or conflicts with one already registered.
	ErrInvalidSpec = errors.New("invalid feature spec")
	// ErrClosed: features were added, or a default overridden, after the
	// registry was bound to a flag set or frozen.
	ErrClosed = errors.New("feature gate registry is closed to additions")
	// ErrFrozen: a feature was set after the registry was frozen.
	ErrFrozen = errors.New("feature gate registry is frozen")
)

// gateError keeps a readable message (worded as Kubernetes words it) while
// letting callers test its kind with errors.Is.
type gateError struct {
	msg  string
	kind error
}

func (e *gateError) Error() string { return e.msg }
func (e *gateError) Unwrap() error { return e.kind }

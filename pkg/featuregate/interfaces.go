package featuregate

// Gates answers whether features are on. It is what components take:
// a component never sets gates, it only reads them.
//
// Implementations are safe for concurrent use, and Enabled never blocks or
// allocates. Gates has no DeepCopy: the Gates a frozen Registry returns
// never change, so they can be shared as they are; to try settings out,
// DeepCopy the Registry instead.
type Gates interface {
	// Enabled reports whether f is on. A feature the gates do not know is
	// off: register every feature a component reads with the registry that
	// builds its Gates (the component's feature list is usually exported
	// for cmd/ to add).
	Enabled(f Feature) bool
	// KnownFeatures describes the features that can be set, one
	// "Name=true|false (STAGE - default=bool)" line each, sorted. GA,
	// Deprecated and not-yet-existing (PreAlpha) features are left out, as
	// Kubernetes does. The caller owns the returned slice.
	KnownFeatures() []string
}

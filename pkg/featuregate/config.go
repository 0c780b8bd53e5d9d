package featuregate

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/util/version"
)

// Config configures a Registry.
type Config struct {
	// Version is the component version that versioned specs are resolved
	// against (Kubernetes calls it the emulation version). Only its major
	// and minor numbers count: 1.31.4 resolves like 1.31. Nil means every
	// feature follows its newest spec, so no feature is PreAlpha. The
	// version is fixed for the registry's life.
	Version *version.Version
	// Logger receives the warnings logged when a deprecated or GA feature is
	// set or has its default overridden. Nil discards them.
	Logger *slog.Logger
}

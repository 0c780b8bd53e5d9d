package apiserver

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/registry"
)

// extraSubresources names the subresources res's strategy serves beyond
// status and scale (registry.Subresourcer).
func extraSubresources(res *resource) []string {
	if sr, ok := res.strategy.(registry.Subresourcer); ok {
		return sr.Subresources()
	}
	return nil
}

// hasSubresource reports whether res's strategy serves name as one of its
// own subresources (registry.Subresourcer).
func hasSubresource(res *resource, name string) bool {
	return name != "" && slices.Contains(extraSubresources(res), name)
}

// prepareSubresourceUpdate returns the state a write of obj through res's
// own subresource name stores, given the stored state current.
func prepareSubresourceUpdate(res *resource, name string, obj, current runtime.Object) runtime.Object {
	return res.strategy.(registry.Subresourcer).PrepareForSubresourceUpdate(name, obj, current)
}

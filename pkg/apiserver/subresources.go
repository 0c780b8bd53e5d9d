package apiserver

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// checkDelete returns the Forbidden error refusing a delete request of the
// object name, when res's strategy guards it (registry.DeleteGuard).
func checkDelete(res *resource, namespace, name string) error {
	g, ok := res.strategy.(registry.DeleteGuard)
	if !ok {
		return nil
	}
	if err := g.CheckDelete(namespace, name); err != nil {
		return apierrors.NewForbidden(res.gr(), name, err)
	}
	return nil
}

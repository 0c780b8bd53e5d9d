package apiserver

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// resourceSet is what the server serves at one moment: the built-in
// resources and the custom resources of the established
// CustomResourceDefinitions. A set is never changed once published;
// a change of CRDs publishes a new one, so requests read it without a lock.
type resourceSet struct {
	byGVR map[schema.GroupVersionResource]*resource
	// byGVK finds the resource of an object by its apiVersion and kind
	// (tables of custom resources); list kinds are included.
	byGVK map[schema.GroupVersionKind]*resource
	// order lists the served resources in discovery order.
	order []schema.GroupVersionResource
	// groups lists the served group versions in discovery order: within a
	// group, the preferred version first.
	groups []schema.GroupVersion
}

// lookup returns what serves gvr, or nil.
func (s *Server) lookup(gvr schema.GroupVersionResource) *resource {
	return s.served.Load().byGVR[gvr]
}

// newResource builds what serves one strategy over store.
func newResource(st registry.Strategy, store storage.Interface) *resource {
	labels := map[string]bool{}
	for _, f := range st.FieldLabels() {
		labels[f] = true
	}
	info := st.Info()
	return &resource{info: info, strategy: st, store: store, root: "/" + info.Resource, fieldLabels: labels, fms: &fieldManagers{}}
}

// newResourceSet orders builtin then custom resources into a set. Custom
// resources of one group are listed with the group's versions in
// Kubernetes' version priority (v1 before v1beta1 before v1alpha1).
func newResourceSet(builtin, custom []*resource) (*resourceSet, error) {
	set := &resourceSet{byGVR: map[schema.GroupVersionResource]*resource{}, byGVK: map[schema.GroupVersionKind]*resource{}}
	seen := map[schema.GroupVersion]bool{}
	add := func(res *resource) error {
		gvr := res.info.GroupVersionResource()
		if _, dup := set.byGVR[gvr]; dup {
			return fmt.Errorf("apiserver: resource %s registered twice", gvr)
		}
		set.byGVR[gvr] = res
		gvk := res.info.GVK
		set.byGVK[gvk] = res
		set.byGVK[res.info.ListGVK()] = res
		set.order = append(set.order, gvr)
		return nil
	}
	for _, res := range builtin {
		if err := add(res); err != nil {
			return nil, err
		}
		if gv := res.info.GVK.GroupVersion(); !seen[gv] {
			seen[gv] = true
			set.groups = append(set.groups, gv)
		}
	}
	for _, gv := range reviewGroupVersions() {
		if !seen[gv] {
			seen[gv] = true
			set.groups = append(set.groups, gv)
		}
	}
	var customGVs []schema.GroupVersion
	for _, res := range custom {
		if err := add(res); err != nil {
			return nil, err
		}
		if gv := res.info.GVK.GroupVersion(); !seen[gv] {
			seen[gv] = true
			customGVs = append(customGVs, gv)
		}
	}
	// Groups in the order their first CRD came; versions by priority.
	firstSeen := map[string]int{}
	for i, gv := range customGVs {
		if _, ok := firstSeen[gv.Group]; !ok {
			firstSeen[gv.Group] = i
		}
	}
	slices.SortStableFunc(customGVs, func(a, b schema.GroupVersion) int {
		if a.Group != b.Group {
			return firstSeen[a.Group] - firstSeen[b.Group]
		}
		return -version.CompareKubeAwareVersionStrings(a.Version, b.Version)
	})
	set.groups = append(set.groups, customGVs...)
	return set, nil
}

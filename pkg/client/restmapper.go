package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// DefaultMinRefreshInterval is the RESTMapperConfig.MinRefreshInterval of
// zero.
const DefaultMinRefreshInterval = 5 * time.Second

// RESTMapperConfig holds the settings of a RESTMapper.
type RESTMapperConfig struct {
	// Discovery reads the server's groups and resources. Required. The
	// mapper's discovery requests run without a context of the caller's (the
	// meta.RESTMapper methods take none): bound them with Config.Timeout on
	// the Client.
	Discovery *DiscoveryClient
	// MinRefreshInterval is the least time between two discovery reads
	// caused by lookups that found nothing; a miss within it is answered
	// from what the mapper already knows. Default DefaultMinRefreshInterval;
	// negative is an error.
	MinRefreshInterval time.Duration
	// Clock times the refreshes. Default the real clock.
	Clock clock.PassiveClock
}

// RESTMapper maps between kinds and resources of an API server, as
// meta.RESTMapper describes: kind to resource and scope, resource (plural,
// singular or short name, with or without group and version) to kind, and
// the preferred version of a group (the server's preferredVersion).
//
// It reads discovery on its first lookup, not in NewRESTMapper. When a
// lookup finds nothing it reads discovery once more and looks again, so that
// a resource added later (a CustomResourceDefinition created after the
// mapper was first used) is found; such refreshes are at least
// MinRefreshInterval apart, and concurrent misses share one refresh. Reset
// forgets everything, so that the next lookup reads discovery again.
//
// A discovery read that fails outright is returned by the lookup that caused
// it (as an error that is not a meta.NoMatchError); until one succeeds,
// every lookup tries again. A partial answer, where some group versions
// could not be read, is used for what it has.
//
// A RESTMapper is safe for concurrent use: lookups read an immutable
// snapshot and do not block one another, except while a refresh they
// wait for is running. It starts no goroutines.
type RESTMapper struct {
	disc        *DiscoveryClient
	minInterval time.Duration
	clock       clock.PassiveClock

	idx atomic.Pointer[restIndex] // nil: not read yet, or Reset

	// mu serializes discovery reads and guards lastRefresh.
	mu          sync.Mutex
	lastRefresh time.Time // when discovery was last read (successfully or not)
}

var _ meta.ResettableRESTMapper = (*RESTMapper)(nil)

// NewRESTMapper validates cfg and returns a mapper; it reads nothing yet.
func NewRESTMapper(cfg RESTMapperConfig) (*RESTMapper, error) {
	if cfg.Discovery == nil {
		return nil, errors.New("client: RESTMapperConfig.Discovery is required")
	}
	if cfg.MinRefreshInterval < 0 {
		return nil, fmt.Errorf("client: RESTMapperConfig.MinRefreshInterval (%v) must not be negative", cfg.MinRefreshInterval)
	}
	m := &RESTMapper{disc: cfg.Discovery, minInterval: cfg.MinRefreshInterval, clock: cfg.Clock}
	if m.minInterval == 0 {
		m.minInterval = DefaultMinRefreshInterval
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	return m, nil
}

// KindFor returns the kind of the best match of resource.
func (m *RESTMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.resourcesFor(resource) })
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return entries[0].gvk, nil
}

// KindsFor returns the kinds of every match of resource, best first.
func (m *RESTMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.resourcesFor(resource) })
	if err != nil {
		return nil, err
	}
	out := make([]schema.GroupVersionKind, len(entries))
	for i, e := range entries {
		out[i] = e.gvk
	}
	return out, nil
}

// ResourceFor returns the best match of input: a plural, singular or short
// name, with group and version optional. A plural or singular name wins over
// another resource's short name. Among several matches, preferred versions
// come before the others, and groups in discovery order (the core group
// first). No match is a *meta.NoResourceMatchError.
func (m *RESTMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.resourcesFor(input) })
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return entries[0].gvr, nil
}

// ResourcesFor returns every match of input, best first.
func (m *RESTMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.resourcesFor(input) })
	if err != nil {
		return nil, err
	}
	out := make([]schema.GroupVersionResource, len(entries))
	for i, e := range entries {
		out[i] = e.gvr
	}
	return out, nil
}

// RESTMapping returns the mapping of gk in the first of versions the server
// serves it in, or in the group's preferred version when versions is empty.
// It returns a *meta.NoKindMatchError when there is none.
func (m *RESTMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.kindFor(gk, versions) })
	if err != nil {
		return nil, err
	}
	return entries[0].mapping(), nil
}

// RESTMappings returns the mappings of gk in each of versions the server
// serves it in (in that order), or in every version, preferred first, when
// versions is empty.
func (m *RESTMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.kindFor(gk, versions) })
	if err != nil {
		return nil, err
	}
	out := make([]*meta.RESTMapping, len(entries))
	for i, e := range entries {
		out[i] = e.mapping()
	}
	return out, nil
}

// ResourceSingularizer returns the singular name of the resource called
// resource (plural, singular or short name).
func (m *RESTMapper) ResourceSingularizer(resource string) (string, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) {
		return x.resourcesFor(schema.GroupVersionResource{Resource: resource})
	})
	if err != nil {
		return "", err
	}
	return entries[0].singular, nil
}

// ResourcesForCategory returns the resources in category (such as "all"),
// each once, in discovery order. A category no resource is in gives an
// empty answer, after the refresh a miss may cause.
func (m *RESTMapper) ResourcesForCategory(category string) ([]schema.GroupResource, error) {
	entries, err := lookup(m, func(x *restIndex) ([]*restEntry, error) { return x.inCategory(category) })
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]schema.GroupResource, len(entries))
	for i, e := range entries {
		out[i] = e.gvr.GroupResource()
	}
	return out, nil
}

// Reset forgets what the mapper knows; the next lookup reads discovery.
func (m *RESTMapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.idx.Store(nil)
}

// lookup runs f on the current snapshot, reading discovery first when there
// is none, and once more (subject to the minimum interval) when f finds
// nothing.
func lookup[R any](m *RESTMapper, f func(*restIndex) (R, error)) (R, error) {
	var zero R
	idx, err := m.index()
	if err != nil {
		return zero, err
	}
	r, err := f(idx)
	if !meta.IsNoMatchError(err) {
		return r, err
	}
	fresh, ok := m.refreshAfterMiss(idx)
	if !ok {
		return r, err
	}
	return f(fresh)
}

// index returns the current snapshot, reading discovery if there is none.
func (m *RESTMapper) index() (*restIndex, error) {
	if idx := m.idx.Load(); idx != nil {
		return idx, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx := m.idx.Load(); idx != nil {
		return idx, nil
	}
	return m.refreshLocked()
}

// refreshAfterMiss reads discovery again after a lookup in seen found
// nothing, unless another refresh has replaced seen meanwhile (then that
// one's snapshot is used) or the last read is more recent than the minimum
// interval. It reports whether the returned snapshot is newer than seen. A
// failed read keeps the old snapshot and counts as a miss.
func (m *RESTMapper) refreshAfterMiss(seen *restIndex) (*restIndex, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.idx.Load(); cur != seen {
		if cur == nil { // Reset meanwhile
			idx, err := m.refreshLocked()
			return idx, err == nil
		}
		return cur, true
	}
	if m.clock.Since(m.lastRefresh) < m.minInterval {
		return seen, false
	}
	idx, err := m.refreshLocked()
	if err != nil {
		return seen, false
	}
	return idx, true
}

// refreshLocked reads discovery and stores the new snapshot. A partial
// answer (some group versions failed) is used for what it has. m.mu is held.
func (m *RESTMapper) refreshLocked() (*restIndex, error) {
	m.lastRefresh = m.clock.Now()
	groups, lists, err := m.disc.ServerGroupsAndResources(context.Background())
	var partial *GroupDiscoveryFailedError
	if err != nil && !errors.As(err, &partial) {
		return nil, fmt.Errorf("client: rest mapper: %w", err)
	}
	idx := newRESTIndex(groups, lists)
	m.idx.Store(idx)
	return idx, nil
}

// restIndex is one immutable reading of discovery.
type restIndex struct {
	entries []*restEntry // best first: preferred versions (groups in discovery order), then the other versions
}

// restEntry is one resource in one group version.
type restEntry struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	singular   string
	shortNames []string
	categories []string
	namespaced bool
	preferred  bool // the version is its group's preferred version
}

func (e *restEntry) mapping() *meta.RESTMapping {
	scope := meta.RESTScopeRoot
	if e.namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{Resource: e.gvr, GroupVersionKind: e.gvk, Scope: scope}
}

func newRESTIndex(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) *restIndex {
	byGV := make(map[string]*metav1.APIResourceList, len(lists))
	for _, l := range lists {
		byGV[l.GroupVersion] = l
	}
	type ranked struct {
		e                     *restEntry
		tier, group, position int
	}
	var all []ranked
	for gi, g := range groups {
		for vi, v := range g.Versions {
			list := byGV[v.GroupVersion]
			if list == nil {
				continue
			}
			preferred := v.Version == g.PreferredVersion.Version
			if g.PreferredVersion.Version == "" {
				preferred = vi == 0
			}
			tier := 1
			if preferred {
				tier = 0
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") {
					continue // subresources are not mapped
				}
				singular := r.SingularName
				if singular == "" {
					singular = strings.ToLower(r.Kind)
				}
				e := &restEntry{
					gvr:        schema.GroupVersionResource{Group: g.Name, Version: v.Version, Resource: r.Name},
					gvk:        schema.GroupVersionKind{Group: g.Name, Version: v.Version, Kind: r.Kind},
					singular:   singular,
					shortNames: r.ShortNames,
					categories: r.Categories,
					namespaced: r.Namespaced,
					preferred:  preferred,
				}
				all = append(all, ranked{e, tier, gi, vi})
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.group != b.group {
			return a.group < b.group
		}
		return a.position < b.position
	})
	idx := &restIndex{entries: make([]*restEntry, len(all))}
	for i, r := range all {
		idx.entries[i] = r.e
	}
	return idx
}

// resourcesFor returns the entries input names, best first: by plural or
// singular name, else by short name.
func (x *restIndex) resourcesFor(input schema.GroupVersionResource) ([]*restEntry, error) {
	name := strings.ToLower(input.Resource)
	inScope := func(e *restEntry) bool {
		return (input.Group == "" || input.Group == e.gvr.Group) && (input.Version == "" || input.Version == e.gvr.Version)
	}
	var out []*restEntry
	for _, e := range x.entries {
		if inScope(e) && (e.gvr.Resource == name || e.singular == name) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		for _, e := range x.entries {
			if inScope(e) && slices.Contains(e.shortNames, name) {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 || name == "" {
		return nil, &meta.NoResourceMatchError{PartialResource: input}
	}
	return out, nil
}

// kindFor returns the entries of gk in versions (in that order), or in all
// versions, best first, when versions is empty.
func (x *restIndex) kindFor(gk schema.GroupKind, versions []string) ([]*restEntry, error) {
	var candidates []*restEntry
	for _, e := range x.entries {
		if e.gvk.GroupKind() == gk {
			candidates = append(candidates, e)
		}
	}
	var wanted []string
	for _, v := range versions {
		if v != "" {
			wanted = append(wanted, v)
		}
	}
	out := candidates
	if len(wanted) > 0 {
		out = nil
		for _, v := range wanted {
			for _, e := range candidates {
				if e.gvk.Version == v {
					out = append(out, e)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return out, nil
}

// inCategory returns the preferred-version entries in category, or a
// NoResourceMatchError (so that a miss refreshes) when there are none.
func (x *restIndex) inCategory(category string) ([]*restEntry, error) {
	var out []*restEntry
	seen := map[schema.GroupResource]bool{}
	for _, e := range x.entries {
		if gr := e.gvr.GroupResource(); e.preferred && !seen[gr] && slices.Contains(e.categories, category) {
			seen[gr] = true
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, &meta.NoResourceMatchError{PartialResource: schema.GroupVersionResource{Resource: category}}
	}
	return out, nil
}

package client

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// DiscoveryClient reads what an API server serves from its legacy
// (unaggregated) discovery documents: /api, /apis and /apis/{group}/{version}
// (/api/{version} for the core group), asked for as plain JSON. It caches
// nothing: every call reads the server again. It is safe for concurrent use.
type DiscoveryClient struct {
	c *Client
}

// NewDiscovery returns a discovery client that sends its requests through c.
func NewDiscovery(c *Client) *DiscoveryClient { return &DiscoveryClient{c: c} }

// ServerGroups returns the API groups the server serves, the core group
// (name "", from /api) first and then those of /apis in the server's order.
// A server that answers 404 or 403 for /api or /apis serves no groups
// there, as client-go treats it.
func (d *DiscoveryClient) ServerGroups(ctx context.Context) (*metav1.APIGroupList, error) {
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	var core metav1.APIVersions
	switch err := d.get(ctx, "/api", &core); {
	case err == nil:
		if g := coreGroup(core); g != nil {
			groups.Groups = append(groups.Groups, *g)
		}
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return nil, err
	}
	var named metav1.APIGroupList
	switch err := d.get(ctx, "/apis", &named); {
	case err == nil:
		groups.Groups = append(groups.Groups, named.Groups...)
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return nil, err
	}
	return groups, nil
}

// coreGroup is the core group as /api describes it, or nil when it lists
// no versions. Its preferred version is the first listed.
func coreGroup(v metav1.APIVersions) *metav1.APIGroup {
	if len(v.Versions) == 0 {
		return nil
	}
	g := &metav1.APIGroup{Name: ""}
	for _, ver := range v.Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: ver, Version: ver})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// ServerResourcesForGroupVersion returns the resources of one group
// version, such as "v1" or "apps/v1". A group version the server does not
// serve is an *apierrors.StatusError for which apierrors.IsNotFound holds.
func (d *DiscoveryClient) ServerResourcesForGroupVersion(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error) {
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil || gv.Version == "" {
		return nil, fmt.Errorf("client: discovery: invalid group version %q", groupVersion)
	}
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if err := validSegment("group version", seg); err != nil {
			return nil, err
		}
	}
	list := &metav1.APIResourceList{}
	if err := d.get(ctx, path, list); err != nil {
		return nil, err
	}
	if list.GroupVersion == "" {
		list.GroupVersion = gv.String()
	}
	return list, nil
}

// ServerGroupsAndResources returns the server's groups and the resources of
// every version of each, read concurrently (one request per group version).
// When some group versions cannot be read, it returns what it could read
// together with a *GroupDiscoveryFailedError naming the others; callers that
// can live with a partial answer check for it with errors.As.
func (d *DiscoveryClient) ServerGroupsAndResources(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groupList, err := d.ServerGroups(ctx)
	if err != nil {
		return nil, nil, err
	}
	groups := make([]*metav1.APIGroup, len(groupList.Groups))
	var gvs []schema.GroupVersion
	for i := range groupList.Groups {
		groups[i] = &groupList.Groups[i]
		for _, v := range groupList.Groups[i].Versions {
			gvs = append(gvs, schema.GroupVersion{Group: groupList.Groups[i].Name, Version: v.Version})
		}
	}
	lists := make([]*metav1.APIResourceList, len(gvs))
	errs := make([]error, len(gvs))
	var wg sync.WaitGroup
	for i, gv := range gvs {
		wg.Go(func() { lists[i], errs[i] = d.ServerResourcesForGroupVersion(ctx, gv.String()) })
	}
	wg.Wait()
	var out []*metav1.APIResourceList
	failed := map[schema.GroupVersion]error{}
	for i, gv := range gvs {
		if errs[i] != nil {
			failed[gv] = errs[i]
			continue
		}
		out = append(out, lists[i])
	}
	if len(failed) > 0 {
		return groups, out, &GroupDiscoveryFailedError{Groups: failed}
	}
	return groups, out, nil
}

// GroupDiscoveryFailedError is returned by ServerGroupsAndResources when
// the resources of some group versions could not be read.
type GroupDiscoveryFailedError struct {
	// Groups holds the error of each group version that failed.
	Groups map[schema.GroupVersion]error
}

func (e *GroupDiscoveryFailedError) Error() string {
	parts := make([]string, 0, len(e.Groups))
	for gv, err := range e.Groups {
		parts = append(parts, fmt.Sprintf("%s: %v", gv, err))
	}
	sort.Strings(parts)
	return "client: discovery: unable to retrieve the resources of " + strings.Join(parts, "; ")
}

// Unwrap returns the errors of the failed group versions.
func (e *GroupDiscoveryFailedError) Unwrap() []error {
	out := make([]error, 0, len(e.Groups))
	for _, err := range e.Groups {
		out = append(out, err)
	}
	return out
}

// get reads the discovery document at path into out.
func (d *DiscoveryClient) get(ctx context.Context, path string, out any) error {
	resp, err := d.c.do(ctx, Request{Path: path}, errorContext{})
	if err != nil {
		return err
	}
	if err := utiljson.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("client: discovery: decode %s: %w", path, err)
	}
	return nil
}

// ServerPreferredResources returns, for each group, the resources of its
// preferred version, and those of its other versions that the preferred
// one lacks, each in the first version (in the server's order) serving it:
// one list per group version, every resource named once per group, as
// client-go's ServerPreferredResources does. This is the set controllers
// that act on every resource (the garbage collector, the namespace
// controller) watch. When some group versions cannot be read it returns the
// rest with a *GroupDiscoveryFailedError, as ServerGroupsAndResources does.
func (d *DiscoveryClient) ServerPreferredResources(ctx context.Context) ([]*metav1.APIResourceList, error) {
	groups, lists, err := d.ServerGroupsAndResources(ctx)
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	byGV := make(map[string]*metav1.APIResourceList, len(lists))
	for _, l := range lists {
		byGV[l.GroupVersion] = l
	}
	var out []*metav1.APIResourceList
	for _, g := range groups {
		order := make([]string, 0, len(g.Versions))
		order = append(order, g.PreferredVersion.GroupVersion)
		for _, v := range g.Versions {
			if v.GroupVersion != g.PreferredVersion.GroupVersion {
				order = append(order, v.GroupVersion)
			}
		}
		// Each resource is taken from the first version listing it; its
		// subresources come from that version too.
		from := map[string]string{}
		for _, gv := range order {
			if l := byGV[gv]; l != nil {
				for _, r := range l.APIResources {
					if _, taken := from[r.Name]; !taken && !strings.Contains(r.Name, "/") {
						from[r.Name] = gv
					}
				}
			}
		}
		for _, gv := range order {
			l := byGV[gv]
			if l == nil {
				continue
			}
			picked := &metav1.APIResourceList{TypeMeta: l.TypeMeta, GroupVersion: l.GroupVersion}
			for _, r := range l.APIResources {
				base, _, _ := strings.Cut(r.Name, "/")
				if from[base] == gv {
					picked.APIResources = append(picked.APIResources, r)
				}
			}
			if len(picked.APIResources) > 0 {
				out = append(out, picked)
			}
		}
	}
	return out, err
}

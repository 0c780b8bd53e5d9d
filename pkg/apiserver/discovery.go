package apiserver

import (
	"cmp"
	"net"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Discovery is served in both of kube-apiserver's forms, rendered from one
// description of the served resources (describeAPIs), so that they always
// agree:
//   - the legacy documents: /api (APIVersions), /apis (APIGroupList),
//     /apis/{group} (APIGroup) and /api/v1, /apis/{group}/{version}
//     (APIResourceList);
//   - the aggregated apidiscovery.k8s.io/v2 APIGroupDiscoveryList on /api
//     and /apis, for clients whose Accept header asks for it
//     (discovery_aggregated.go), cached with an ETag until the served
//     resources change.
//
// Which one a request gets is decided by its Accept header as
// kube-apiserver decides it (discovery_negotiation.go). apidiscovery.k8s.io
// v2beta1 is not served: kube-apiserver stopped in 1.35
// (AggregatedDiscoveryRemoveBetaType is locked on), so a client asking for
// it gets the legacy document it lists after it, or 406.

var resourceVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
var subresourceVerbs = metav1.Verbs{"get", "patch", "update"}

// terminatingVerbs are the verbs of a custom resource whose CRD is being
// deleted: apiextensions-apiserver no longer lists create, update or patch.
var terminatingVerbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}

// apiDescription is what discovery says about the served resources, in
// discovery order; built once per resourceSet and read only after.
type apiDescription struct {
	// core is the core group (/api); nil when no core resource is served.
	core *groupDescription
	// groups are the named groups (/apis), by priority as kube-apiserver
	// orders them.
	groups []*groupDescription
}

// groupDescription is one API group and its served versions, the
// preferred version first.
type groupDescription struct {
	name     string
	versions []*versionDescription
}

// versionDescription is one served group version.
type versionDescription struct {
	gv        schema.GroupVersion
	resources []resourceDescription // by name
}

// resourceDescription is one resource and its subresources.
type resourceDescription struct {
	// api is the legacy entry of the resource itself.
	api metav1.APIResource
	// subresources are the legacy entries of its subresources, by name
	// ("pods/binding" before "pods/status").
	subresources []metav1.APIResource
	// qualifiedKind is set for custom resources: as apiextensions-apiserver
	// does, their aggregated entries name the kind with its group and
	// version, where built-ins leave both empty.
	qualifiedKind bool
}

// group returns the described group name ("" for core), nil if not served.
func (d *apiDescription) group(name string) *groupDescription {
	if name == "" {
		return d.core
	}
	for _, g := range d.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

// version returns the described group version, nil if not served.
func (d *apiDescription) version(gv schema.GroupVersion) *versionDescription {
	if g := d.group(gv.Group); g != nil {
		for _, v := range g.versions {
			if v.gv == gv {
				return v
			}
		}
	}
	return nil
}

// Priorities kube-apiserver gives its built-in group versions (the
// APIServices it registers): groups by descending group priority then
// name, versions in a group by descending version priority then Kubernetes'
// version order. Custom resources' group versions get
// customGroupPriority/customVersionPriority, others
// defaultGroupPriority/defaultVersionPriority, as kube-apiserver does.
const (
	customGroupPriority    = 1000
	customVersionPriority  = 100
	defaultGroupPriority   = 1000
	defaultVersionPriority = 15
)

type discoveryPriority struct{ group, version int }

var builtinPriorities = map[schema.GroupVersion]discoveryPriority{
	{Group: "", Version: "v1"}:                                   {18000, 1},
	{Group: "apps", Version: "v1"}:                               {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                      {17750, 15},
	{Group: "events.k8s.io", Version: "v1beta1"}:                 {17750, 5},
	{Group: "authentication.k8s.io", Version: "v1"}:              {17700, 15},
	{Group: "authentication.k8s.io", Version: "v1beta1"}:         {17700, 9},
	{Group: "authentication.k8s.io", Version: "v1alpha1"}:        {17700, 1},
	{Group: "authorization.k8s.io", Version: "v1"}:               {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                        {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                        {17500, 30},
	{Group: "autoscaling", Version: "v2beta1"}:                   {17500, 9},
	{Group: "autoscaling", Version: "v2beta2"}:                   {17500, 1},
	{Group: "batch", Version: "v1"}:                              {17400, 15},
	{Group: "batch", Version: "v1beta1"}:                         {17400, 9},
	{Group: "certificates.k8s.io", Version: "v1"}:                {17300, 15},
	{Group: "certificates.k8s.io", Version: "v1beta1"}:           {17300, 9},
	{Group: "certificates.k8s.io", Version: "v1alpha1"}:          {17300, 1},
	{Group: "networking.k8s.io", Version: "v1"}:                  {17200, 15},
	{Group: "networking.k8s.io", Version: "v1beta1"}:             {17200, 9},
	{Group: "policy", Version: "v1"}:                             {17100, 15},
	{Group: "policy", Version: "v1beta1"}:                        {17100, 9},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:          {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:                     {16800, 15},
	{Group: "storage.k8s.io", Version: "v1beta1"}:                {16800, 9},
	{Group: "storage.k8s.io", Version: "v1alpha1"}:               {16800, 1},
	{Group: "apiextensions.k8s.io", Version: "v1"}:               {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:       {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}:  {16700, 12},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}: {16700, 9},
	{Group: "scheduling.k8s.io", Version: "v1"}:                  {16600, 15},
	{Group: "scheduling.k8s.io", Version: "v1beta1"}:             {16600, 9},
	{Group: "coordination.k8s.io", Version: "v1"}:                {16500, 15},
	{Group: "coordination.k8s.io", Version: "v1beta1"}:           {16500, 13},
	{Group: "coordination.k8s.io", Version: "v1alpha2"}:          {16500, 12},
	{Group: "node.k8s.io", Version: "v1"}:                        {16300, 15},
	{Group: "node.k8s.io", Version: "v1beta1"}:                   {16300, 9},
	{Group: "node.k8s.io", Version: "v1alpha1"}:                  {16300, 1},
	{Group: "discovery.k8s.io", Version: "v1"}:                   {16200, 15},
	{Group: "discovery.k8s.io", Version: "v1beta1"}:              {16200, 12},
	{Group: "resource.k8s.io", Version: "v1"}:                    {16200, 21},
	{Group: "resource.k8s.io", Version: "v1beta2"}:               {16200, 15},
	{Group: "resource.k8s.io", Version: "v1beta1"}:               {16200, 9},
	{Group: "resource.k8s.io", Version: "v1alpha3"}:              {16200, 1},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:       {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:            {15800, 15},
	{Group: "storagemigration.k8s.io", Version: "v1beta1"}:       {15800, 9},
}

// describeAPIs describes what set serves. The legacy and the aggregated
// documents are both rendered from it.
func (s *Server) describeAPIs(set *resourceSet) *apiDescription {
	versions := map[schema.GroupVersion]*versionDescription{}
	priority := map[schema.GroupVersion]discoveryPriority{}
	var order []schema.GroupVersion
	versionOf := func(gv schema.GroupVersion, custom bool) *versionDescription {
		v := versions[gv]
		if v == nil {
			v = &versionDescription{gv: gv}
			versions[gv] = v
			order = append(order, gv)
			p, ok := builtinPriorities[gv]
			switch {
			case custom:
				p = discoveryPriority{customGroupPriority, customVersionPriority}
			case !ok:
				p = discoveryPriority{defaultGroupPriority, defaultVersionPriority}
			}
			priority[gv] = p
		}
		return v
	}
	for _, gv := range set.groups {
		versionOf(gv, false)
	}
	for _, gvr := range set.order {
		res := set.byGVR[gvr]
		v := versionOf(gvr.GroupVersion(), res.custom != nil)
		if res.custom != nil {
			priority[v.gv] = discoveryPriority{customGroupPriority, customVersionPriority}
		}
		v.resources = append(v.resources, s.describeResource(res))
	}
	for _, gv := range order {
		for _, r := range reviewDiscovery(gv) {
			versions[gv].resources = append(versions[gv].resources, resourceDescription{api: r})
		}
	}

	groups := map[string]*groupDescription{}
	groupPriority := map[string]int{}
	d := &apiDescription{}
	for _, gv := range order {
		v := versions[gv]
		if len(v.resources) == 0 {
			continue
		}
		slices.SortFunc(v.resources, func(a, b resourceDescription) int { return cmp.Compare(a.api.Name, b.api.Name) })
		g := groups[gv.Group]
		if g == nil {
			g = &groupDescription{name: gv.Group}
			groups[gv.Group] = g
			if gv.Group == "" {
				d.core = g
			} else {
				d.groups = append(d.groups, g)
			}
		}
		g.versions = append(g.versions, v)
		groupPriority[gv.Group] = max(groupPriority[gv.Group], priority[gv].group)
	}
	for _, g := range groups {
		slices.SortStableFunc(g.versions, func(a, b *versionDescription) int {
			if c := cmp.Compare(priority[b.gv].version, priority[a.gv].version); c != 0 {
				return c
			}
			return -version.CompareKubeAwareVersionStrings(a.gv.Version, b.gv.Version)
		})
	}
	slices.SortStableFunc(d.groups, func(a, b *groupDescription) int {
		if c := cmp.Compare(groupPriority[b.name], groupPriority[a.name]); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	return d
}

// describeResource lists res and the subresources the server serves for it.
func (s *Server) describeResource(res *resource) resourceDescription {
	info := res.info
	verbs := resourceVerbs
	switch {
	case res.terminating:
		verbs = terminatingVerbs
	case info.NoDeleteCollection:
		verbs = slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == "deletecollection" })
	}
	d := resourceDescription{
		api: metav1.APIResource{
			Name:         info.Resource,
			SingularName: info.Singular,
			Namespaced:   info.Namespaced,
			Kind:         info.GVK.Kind,
			Verbs:        verbs,
			ShortNames:   info.ShortNames,
			Categories:   info.Categories,
		},
		qualifiedKind: res.custom != nil,
	}
	sub := func(name string, r metav1.APIResource) {
		r.Name, r.Namespaced = info.Resource+"/"+name, info.Namespaced
		d.subresources = append(d.subresources, r)
	}
	if isNamespaces(res) {
		sub("finalize", metav1.APIResource{Kind: info.GVK.Kind, Verbs: metav1.Verbs{"update"}})
	}
	if info.Status {
		sub("status", metav1.APIResource{Kind: info.GVK.Kind, Verbs: subresourceVerbs})
	}
	for _, name := range extraSubresources(res) {
		sub(name, metav1.APIResource{Kind: info.GVK.Kind, Verbs: subresourceVerbs})
	}
	if servesBinding(res) {
		sub("binding", metav1.APIResource{Kind: "Binding", Verbs: metav1.Verbs{"create"}})
	}
	if servesEviction(res) {
		sub("eviction", metav1.APIResource{Group: "policy", Version: "v1", Kind: "Eviction", Verbs: metav1.Verbs{"create"}})
	}
	if s.servesTokenRequest(res) {
		sub("token", metav1.APIResource{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: metav1.Verbs{"create"}})
	}
	if info.Scale {
		sub("scale", metav1.APIResource{Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs})
	}
	slices.SortFunc(d.subresources, func(a, b metav1.APIResource) int { return cmp.Compare(a.Name, b.Name) })
	return d
}

// legacyGroup returns the legacy APIGroup entry of g.
func legacyGroup(g *groupDescription) metav1.APIGroup {
	out := metav1.APIGroup{Name: g.name}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{GroupVersion: v.gv.String(), Version: v.gv.Version})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}

// legacyResources returns the legacy APIResourceList entries of v, sorted
// by name.
func legacyResources(v *versionDescription) []metav1.APIResource {
	var out []metav1.APIResource
	for _, r := range v.resources {
		out = append(out, r.api)
		out = append(out, r.subresources...)
	}
	slices.SortStableFunc(out, func(a, b metav1.APIResource) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	if s.serveAggregated(w, r, true) {
		return
	}
	f, ok := s.negotiateLegacyDiscovery(w, r)
	if !ok {
		return
	}
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil && host != "" {
		host = net.JoinHostPort(host, "443")
	}
	versions := []string{}
	if s.discovery().desc.core != nil {
		versions = append(versions, "v1")
	}
	s.writeLegacyDiscovery(w, r, f, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   versions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: host}},
	})
}

func (s *Server) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	if s.serveAggregated(w, r, false) {
		return
	}
	f, ok := s.negotiateLegacyDiscovery(w, r)
	if !ok {
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range s.discovery().desc.groups {
		list.Groups = append(list.Groups, legacyGroup(g))
	}
	s.writeLegacyDiscovery(w, r, f, list)
}

func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request, group string) {
	g := s.discovery().desc.group(group)
	if g == nil || group == "" {
		s.writeError(w, r, notFound())
		return
	}
	f, ok := s.negotiateLegacyDiscovery(w, r)
	if !ok {
		return
	}
	out := legacyGroup(g)
	out.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	s.writeLegacyDiscovery(w, r, f, &out)
}

func (s *Server) serveAPIResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	v := s.discovery().desc.version(gv)
	if v == nil {
		s.writeError(w, r, notFound())
		return
	}
	f, ok := s.negotiateLegacyDiscovery(w, r)
	if !ok {
		return
	}
	s.writeLegacyDiscovery(w, r, f, &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
		APIResources: legacyResources(v),
	})
}

// negotiateLegacyDiscovery picks the encoding of a legacy document, or
// answers 405 or 406 and reports false.
func (s *Server) negotiateLegacyDiscovery(w http.ResponseWriter, r *http.Request) (discoveryMediaType, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r))
		return discoveryMediaType{}, false
	}
	f, ok := negotiateDiscovery(r.Header.Get("Accept"), false)
	if !ok {
		s.writeError(w, r, discoveryNotAcceptable())
		return discoveryMediaType{}, false
	}
	return f, true
}

// writeLegacyDiscovery writes a legacy document in the negotiated type.
func (s *Server) writeLegacyDiscovery(w http.ResponseWriter, r *http.Request, f discoveryMediaType, obj runtime.Object) {
	data, err := f.encode(obj, obj.GetObjectKind().GroupVersionKind())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", f.name)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

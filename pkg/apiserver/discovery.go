package apiserver

import (
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Discovery serves the legacy (unaggregated) documents. Clients that ask
// for the aggregated apidiscovery.k8s.io/v2 documents first and list plain
// JSON after them (kubectl, client-go) get these, answered with a plain
// application/json Content-Type, which tells them to fall back.

var resourceVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
var subresourceVerbs = metav1.Verbs{"get", "patch", "update"}

// checkDiscoveryAccept answers 406 when the client accepts nothing but
// the aggregated discovery documents (or other types we do not serve).
func (s *Server) checkDiscoveryAccept(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r))
		return false
	}
	accept := strings.TrimSpace(r.Header.Get("Accept"))
	if accept == "" {
		return true
	}
	for _, m := range parseAccept(accept) {
		if m.params["as"] != "" {
			continue
		}
		switch m.typ {
		case "application/json", "*/*", "application/*", "application/yaml":
			return true
		}
	}
	s.writeError(w, r, notAcceptable())
	return false
}

func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	if !s.checkDiscoveryAccept(w, r) {
		return
	}
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil && host != "" {
		host = net.JoinHostPort(host, "443")
	}
	writeJSON(w, http.StatusOK, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: host}},
	})
}

// apiGroup returns the discovery entry of a non-core group, nil if not served.
func (s *Server) apiGroup(group string) *metav1.APIGroup {
	var g *metav1.APIGroup
	for _, gv := range s.served.Load().groups {
		if gv.Group != group || group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if g == nil {
			g = &metav1.APIGroup{Name: group, PreferredVersion: v}
		}
		g.Versions = append(g.Versions, v)
	}
	return g
}

func (s *Server) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	if !s.checkDiscoveryAccept(w, r) {
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	seen := map[string]bool{}
	for _, gv := range s.served.Load().groups {
		if gv.Group == "" || seen[gv.Group] {
			continue
		}
		seen[gv.Group] = true
		list.Groups = append(list.Groups, *s.apiGroup(gv.Group))
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request, group string) {
	g := s.apiGroup(group)
	if g == nil {
		s.writeError(w, r, notFound())
		return
	}
	if !s.checkDiscoveryAccept(w, r) {
		return
	}
	g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	writeJSON(w, http.StatusOK, g)
}

func (s *Server) serveAPIResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for gvr, res := range s.served.Load().byGVR {
		if gvr.GroupVersion() != gv {
			continue
		}
		info := res.info
		verbs := resourceVerbs
		if info.NoDeleteCollection {
			verbs = slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == "deletecollection" })
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         info.Resource,
			SingularName: info.Singular,
			Namespaced:   info.Namespaced,
			Kind:         info.GVK.Kind,
			Verbs:        verbs,
			ShortNames:   info.ShortNames,
			Categories:   info.Categories,
		})
		if isNamespaces(res) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/finalize", Kind: info.GVK.Kind, Verbs: metav1.Verbs{"update"},
			})
		}
		if info.Status {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/status", Namespaced: info.Namespaced, Kind: info.GVK.Kind, Verbs: subresourceVerbs,
			})
		}
		for _, sub := range extraSubresources(res) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/" + sub, Namespaced: info.Namespaced, Kind: info.GVK.Kind, Verbs: subresourceVerbs,
			})
		}
		if servesBinding(res) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/binding", Namespaced: info.Namespaced, Kind: "Binding", Verbs: metav1.Verbs{"create"},
			})
		}
		if s.servesTokenRequest(res) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/token", Namespaced: info.Namespaced, Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: metav1.Verbs{"create"},
			})
		}
		if info.Scale {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: info.Resource + "/scale", Namespaced: info.Namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs,
			})
		}
	}
	list.APIResources = append(list.APIResources, reviewDiscovery(gv)...)
	if len(list.APIResources) == 0 {
		s.writeError(w, r, notFound())
		return
	}
	if !s.checkDiscoveryAccept(w, r) {
		return
	}
	sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	writeJSON(w, http.StatusOK, list)
}

package apiserver

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// impersonationExtraPrefix is the canonical form of the header prefix
// naming an extra attribute of the impersonated user.
var impersonationExtraPrefix = textproto.CanonicalMIMEHeaderKey(authenticationv1.ImpersonateUserExtraHeaderPrefix)

// impersonate serves a request carrying Impersonate-User, -Group, -Uid or
// -Extra-<key> headers (kubectl --as, --as-group, --as-uid) as the user
// they name, as kube-apiserver does: the requester must be allowed the
// verb impersonate on each value (users, groups, uids and
// userextras/<key> in authentication.k8s.io; serviceaccounts in the
// core group, in their namespace, for a ServiceAccount user name), or the
// request is answered 403; groups, uid or extras without a user are a 400.
// Impersonating a ServiceAccount without naming groups gives it its
// groups; any other user but the anonymous one is in system:authenticated
// unless the groups named say otherwise. The headers are removed from the
// request it returns.
func (s *Server) impersonate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	h := r.Header
	username := h.Get(authenticationv1.ImpersonateUserHeader)
	groups := h.Values(authenticationv1.ImpersonateGroupHeader)
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	var extraKeys []string
	for k := range h {
		if strings.HasPrefix(k, impersonationExtraPrefix) {
			extraKeys = append(extraKeys, k)
		}
	}
	hasUID := uid != ""
	if username == "" {
		if len(groups) > 0 || len(extraKeys) > 0 || hasUID {
			s.writeError(w, r, apierrors.NewBadRequest("requested impersonation of groups, a uid or user extras without impersonating a user"))
			return r, false
		}
		return r, true
	}
	slices.Sort(extraKeys)
	requester := requestUser(r)
	check := func(a authorization.Attributes) bool {
		a.User, a.Verb, a.ResourceRequest = requester, "impersonate", true
		if s.authz == nil {
			return true
		}
		d, reason, err := s.authz.Authorize(r.Context(), a)
		if d == authorization.DecisionAllow {
			return true
		}
		if err != nil {
			s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("authorizing impersonation: %w", err)))
			return false
		}
		s.writeError(w, r, forbidden(a, reason))
		return false
	}
	const authnGroup = authenticationv1.GroupName
	u := &authentication.User{Name: username, UID: uid}
	if ns, name, ok := authentication.SplitServiceAccountUsername(username); ok {
		if !check(authorization.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: name}) {
			return r, false
		}
		if len(groups) == 0 {
			u.Groups = authentication.ServiceAccountGroups(ns)
		}
	} else if !check(authorization.Attributes{APIGroup: authnGroup, Resource: "users", Name: username}) {
		return r, false
	}
	for _, g := range groups {
		if !check(authorization.Attributes{APIGroup: authnGroup, Resource: "groups", Name: g}) {
			return r, false
		}
		u.Groups = append(u.Groups, g)
	}
	for _, k := range extraKeys {
		key := strings.ToLower(k[len(impersonationExtraPrefix):])
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range h.Values(k) {
			if !check(authorization.Attributes{APIGroup: authnGroup, Resource: "userextras", Subresource: key, Name: v}) {
				return r, false
			}
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[key] = append(u.Extra[key], v)
		}
	}
	if hasUID && !check(authorization.Attributes{APIGroup: authnGroup, Resource: "uids", Name: uid}) {
		return r, false
	}
	// As kube-apiserver: an impersonated user other than the anonymous one
	// is in system:authenticated unless the groups asked for name it or
	// system:unauthenticated.
	u = authentication.WithAuthenticatedGroup(u)
	if u.Name == authentication.Anonymous && !slices.Contains(u.Groups, authentication.AllUnauthenticated) {
		u.Groups = append(u.Groups, authentication.AllUnauthenticated)
	}
	audit.LogImpersonatedUser(r.Context(), audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	s.log.Debug("impersonating", "requester", requester.Name, "user", u.Name, "groups", u.Groups)
	r = r.WithContext(authentication.WithUser(r.Context(), u))
	r.Header = r.Header.Clone()
	r.Header.Del(authenticationv1.ImpersonateUserHeader)
	r.Header.Del(authenticationv1.ImpersonateGroupHeader)
	r.Header.Del(authenticationv1.ImpersonateUIDHeader)
	for _, k := range extraKeys {
		r.Header.Del(k)
	}
	return r, true
}

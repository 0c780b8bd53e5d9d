package policy

import (
	"context"
	"strings"
	"sync"

	"github.com/kplane/kplane/pkg/authorization"
)

// cachingAuthorizer remembers the decisions of one request's authorizer
// checks, so that policies asking the same question ask once (as
// Kubernetes does). It is safe for concurrent use.
type cachingAuthorizer struct {
	authz authorization.Authorizer

	mu    sync.Mutex
	cache map[authzKey]authzAnswer
}

type authzKey struct {
	user, groups string
	attrs        authorization.Attributes
}

type authzAnswer struct {
	decision authorization.Decision
	reason   string
	err      error
}

func newCachingAuthorizer(a authorization.Authorizer) *cachingAuthorizer {
	return &cachingAuthorizer{authz: a}
}

// Authorize answers from the cache, or asks the authorizer.
func (c *cachingAuthorizer) Authorize(ctx context.Context, attrs authorization.Attributes) (authorization.Decision, string, error) {
	key := authzKey{attrs: attrs}
	key.attrs.User = nil
	if u := attrs.User; u != nil {
		key.user, key.groups = u.Name+"\x00"+u.UID, strings.Join(u.Groups, "\x00")
		if len(u.Extra) > 0 {
			// extra is rarely set; do not cache rather than key on it
			return c.authz.Authorize(ctx, attrs)
		}
	}
	c.mu.Lock()
	ans, ok := c.cache[key]
	c.mu.Unlock()
	if ok {
		return ans.decision, ans.reason, ans.err
	}
	d, reason, err := c.authz.Authorize(ctx, attrs)
	c.mu.Lock()
	if c.cache == nil {
		c.cache = map[authzKey]authzAnswer{}
	}
	c.cache[key] = authzAnswer{d, reason, err}
	c.mu.Unlock()
	return d, reason, err
}

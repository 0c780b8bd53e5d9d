package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// TokenSource supplies the bearer token of a Client's requests
// (Config.TokenSource). The Client calls Token before sending every
// request, watches included, so an implementation caches its token and
// renews it before it expires: Token is on the path of every request and
// should answer from its cache almost always. It must be safe for
// concurrent use. An error fails the request it was called for.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// TokenSourceFunc adapts a function to a TokenSource.
type TokenSourceFunc func(ctx context.Context) (string, error)

// Token calls f.
func (f TokenSourceFunc) Token(ctx context.Context) (string, error) { return f(ctx) }

// TokenInvalidator is implemented by a TokenSource whose tokens the server
// may refuse before they expire: revoked, signed with a retired key, or
// naming a ServiceAccount that was deleted and created again. When the
// server answers 401 Unauthorized to a request that carried token, the
// Client calls InvalidateToken(token) and, if Token then returns another
// token, sends the request once more with it. token is passed so that an
// implementation drops it only if it is still the one it hands out: many
// requests may fail with the same token at once, and the first one's
// renewal must not be thrown away by the others.
type TokenInvalidator interface {
	InvalidateToken(token string)
}

// WithoutCredentials returns a copy of cfg that reaches the same server
// the same way (Host, CA, TLS server name, user agent, rate limits,
// retries) but carries none of cfg's credentials: no client certificate
// and key (nor GetClientCertificate), no BearerToken, no TokenSource. It is the base of a client for
// another identity, such as a controller's ServiceAccount: set its
// TokenSource (or BearerToken) and build it with New. Dropping the client
// certificate matters: an API server (kplane's, like Kubernetes') tries
// X.509 authentication before bearer tokens, so a request presenting the
// parent's certificate would authenticate as the parent whatever token it
// carried. An HTTPClient is kept as it is: credentials built into its
// transport are the caller's to leave out.
func (cfg Config) WithoutCredentials() Config {
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.GetClientCertificate = nil
	cfg.BearerToken = ""
	cfg.TokenSource = nil
	return cfg
}

// bearerToken returns the token to send on the next request: the
// TokenSource's when there is one, else the static BearerToken.
func (c *Client) bearerToken(ctx context.Context) (string, error) {
	if c.tokens == nil {
		return c.token, nil
	}
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("client: bearer token: %w", err)
	}
	return tok, nil
}

// renewToken handles a 401 answer to a request sent with token: when the
// TokenSource can invalidate tokens, it drops token and returns the one
// to retry with, which differs from token. ok is false when the request
// is not worth retrying; resp is then still the caller's to read.
func (c *Client) renewToken(ctx context.Context, resp *http.Response, token string) (string, bool, error) {
	inv, can := c.tokens.(TokenInvalidator)
	if !can || resp.StatusCode != http.StatusUnauthorized {
		return "", false, nil
	}
	inv.InvalidateToken(token)
	fresh, err := c.bearerToken(ctx)
	if err != nil {
		return "", false, err
	}
	if fresh == token || fresh == "" {
		return "", false, nil
	}
	// The 401's body is small; reading it lets the connection be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return fresh, true, nil
}

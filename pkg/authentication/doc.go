// Package authentication identifies the senders of API requests, as
// kube-apiserver's authenticators do: identities relayed by a front proxy
// in request headers, believed only under its client certificate
// (RequestHeader), X.509 client certificates (X509),
// static bearer tokens from a --token-auth-file (TokenFile, through
// Bearer), ServiceAccount tokens (TokenSigner issues them,
// ServiceAccountTokens verifies them), and the anonymous user. Union tries
// authenticators in order and adds system:authenticated.
//
// Guarantees:
//   - Credentials that are present but invalid are an error, never "no
//     credentials": a certificate of another CA, expired, without the
//     clientAuth usage or without a common name; a front proxy's
//     certificate that does not verify or whose common name is not
//     allowed (its headers are never believed); an Authorization header
//     that holds no bearer token; a token no authenticator knows; a
//     ServiceAccount token that is forged, expired (60 s of leeway), for
//     another audience, or whose ServiceAccount, pod, secret or node is
//     gone or was recreated. The API server answers all of them 401.
//   - Verified certificate chains and token signatures are remembered
//     (bounded, successes only) so that repeated credentials cost little;
//     expiry and the live objects are checked again on every request, so
//     remembering never extends what a credential is worth.
//   - Every type is safe for concurrent use and starts no goroutines; the
//     Users returned are the caller's.
package authentication

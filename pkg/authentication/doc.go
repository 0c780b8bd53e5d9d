// Package authentication identifies the senders of API requests, as
// kube-apiserver's authenticators do: X.509 client certificates, static
// bearer tokens, ServiceAccount tokens, and the anonymous user.
package authentication

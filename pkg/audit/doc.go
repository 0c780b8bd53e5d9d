// Package audit records what an API server was asked and what it answered,
// in Kubernetes' audit.k8s.io/v1 format.
//
// A Policy (the audit.k8s.io/v1 Policy kind, read with ParsePolicy or
// LoadPolicy) decides per request, by its first matching rule, the Level
// of detail: None, Metadata (who, what, when, the answer's status),
// Request (plus the request body) or RequestResponse (plus the response
// body), and which Stages are left out. Whatever the policy says, the
// bodies of requests that carry credentials (Secrets, TokenReviews and
// ServiceAccount TokenRequests) are never recorded: their level is capped
// at Metadata.
//
// An Auditor writes each Event as one JSON line to a Sink, such as the
// size-rotated file NewFileSink returns. Auditor and Policy are safe for
// concurrent use; a Policy must not be changed once given to an Auditor.
// Writing is synchronous: a slow sink slows the requests it audits rather
// than buffering without bound.
package audit

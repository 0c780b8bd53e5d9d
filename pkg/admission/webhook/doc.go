// Package webhook is the MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook admission plugins, as kube-apiserver's: they
// call the webhooks of the admissionregistration.k8s.io/v1 webhook
// configurations with an admission.k8s.io AdmissionReview over HTTPS.
//
// Guarantees, all as Kubernetes:
//   - Webhooks run in order (configurations sorted by name, their webhooks
//     in order): mutating ones one after another, each seeing the patches
//     of those before it; validating ones in parallel, the request waiting
//     for all of them.
//   - A webhook is called when its rules match (matchPolicy Equivalent
//     also matching the resource at the versions it registered for, the
//     object then converted to that version), and its object selector,
//     namespace selector and matchConditions hold. Requests for webhook
//     configurations and admission policies never reach a webhook.
//   - A denial reaches the client as `admission webhook "<name>" denied the
//     request: <message>` with the webhook's code (at least 400). A
//     webhook that cannot be reached, times out (timeoutSeconds, 10 by
//     default) or answers something invalid fails the request with a 500
//     `failed calling webhook "<name>": ...` under failurePolicy Fail, and
//     is skipped (metric and audit annotation) under Ignore.
//   - A patch that does not apply or yields an object its type cannot
//     decode fails the request with a 500 whatever the failurePolicy: the
//     object is left as the previous webhook left it.
//   - A dry-run request fails with a 400 when it matches a webhook whose
//     sideEffects are not None or NoneOnDryRun.
//
// Configurations are compiled (selectors, conditions, HTTP clients) when
// the Source's revision of them changes, not per request; a request that
// matches no webhook costs the matching only.
package webhook

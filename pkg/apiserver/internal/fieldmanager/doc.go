// Package fieldmanager tracks which client owns which field of an object
// (metadata.managedFields) and merges server-side apply configurations, with
// kube-apiserver's semantics, on sigs.k8s.io/structured-merge-diff.
//
// A FieldManager serves one endpoint: a kind at one version, optionally
// through a subresource. Update records the fields a create, update or
// patch changed as owned by its manager (operation Update) and never fails:
// when field tracking cannot be done, the object keeps the managedFields it
// had. Apply merges an applied configuration into the live object by the
// schema's list types and map keys, removes the fields the same manager
// applied before and no longer applies, takes ownership of what it applied
// (operation Apply), and reports changes to fields other managers own as a
// 409 Conflict with one cause per field, unless forced.
//
// The rules kube-apiserver follows, and so this package:
//   - an Update manager is its name, its apiVersion and its subresource; an
//     Apply manager is its name and subresource (its apiVersion is not part
//     of its identity);
//   - entries are sorted Apply before Update, then by time, manager,
//     apiVersion and subresource; times are whole seconds;
//   - apiVersion, kind, metadata.name, namespace, uid, resourceVersion,
//     generation, creationTimestamp, selfLink and managedFields are never
//     owned;
//   - an update may set managedFields itself; a list that is empty (or one
//     empty entry) resets them; a list that does not decode is ignored and
//     the live object's are kept; a subresource write never sets them;
//   - an object that exists without managedFields starts being tracked at
//     its first apply, where everything it holds is first given to the
//     manager "before-first-apply";
//   - past ten Update managers, the oldest are merged into one
//     "ancient-changes" entry per apiVersion;
//   - fields a endpoint resets (the status through the main resource, the
//     spec through the status subresource) are never owned through it;
//   - an apply by "kubectl" to an object applied client-side before
//     (kubectl.kubernetes.io/last-applied-configuration) may take the fields
//     that annotation holds unchanged without a conflict, and the annotation
//     is rewritten to the applied configuration, so that clients moving from
//     client-side to server-side apply keep working;
//   - an apply that changes nothing returns the live object unchanged, so
//     storing it writes nothing.
package fieldmanager

// Package patch applies JSON Patch (RFC 6902) and JSON Merge Patch
// (RFC 7386) documents to JSON documents.
//
// Both functions are pure: they never modify their arguments, and they
// either return the whole patched document or an error, never a partly
// patched one. Errors wrap ErrBadPatch when the patch document itself is
// malformed and ErrCannotApply when a well-formed patch does not apply
// (a missing path, a failed test).
package patch

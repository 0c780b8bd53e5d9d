package storage

import (
	"errors"
	"fmt"
)

// ErrorCode classifies a storage failure.
type ErrorCode int

// The storage failures. The API server turns each into the matching
// Kubernetes status: NotFound 404, KeyExists 409 AlreadyExists,
// ResourceVersionConflicts 409 Conflict, InvalidObj 409 Conflict (a UID
// precondition that does not hold, an object the codec cannot handle),
// Expired 410 Gone, InvalidContinue 400/410, TooLargeResourceVersion 504
// (kube-apiserver's "Too large resource version" timeout), InvalidRequest
// 400 BadRequest (a malformed request: a bad key, resourceVersion, limit or
// option combination; retrying it unchanged cannot succeed).
const (
	ErrCodeKeyNotFound ErrorCode = iota + 1
	ErrCodeKeyExists
	ErrCodeResourceVersionConflicts
	ErrCodeInvalidObj
	ErrCodeExpired
	ErrCodeInvalidContinue
	ErrCodeTooLargeResourceVersion
	ErrCodeInvalidRequest
)

var codeNames = map[ErrorCode]string{
	ErrCodeKeyNotFound:              "key not found",
	ErrCodeKeyExists:                "key exists",
	ErrCodeResourceVersionConflicts: "resource version conflicts",
	ErrCodeInvalidObj:               "invalid object",
	ErrCodeExpired:                  "resource version expired",
	ErrCodeInvalidContinue:          "invalid continue token",
	ErrCodeTooLargeResourceVersion:  "resource version too large",
	ErrCodeInvalidRequest:           "invalid request",
}

// Error is the error type of every storage failure.
type Error struct {
	Code ErrorCode
	Key  string
	// ResourceVersion is the revision the failure concerns, when there is one.
	ResourceVersion uint64
	// Detail adds what the code alone does not say.
	Detail string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s, key: %q", codeNames[e.Code], e.Key)
	if e.ResourceVersion != 0 {
		msg += fmt.Sprintf(", resourceVersion: %d", e.ResourceVersion)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// NewError returns an *Error.
func NewError(code ErrorCode, key string, rv uint64, detail string) *Error {
	return &Error{Code: code, Key: key, ResourceVersion: rv, Detail: detail}
}

// HasCode reports whether err is, or wraps, an *Error with the code.
func HasCode(err error, code ErrorCode) bool {
	var se *Error
	return errors.As(err, &se) && se.Code == code
}

// IsNotFound reports whether err says the key does not exist.
func IsNotFound(err error) bool { return HasCode(err, ErrCodeKeyNotFound) }

// IsExists reports whether err says the key already exists.
func IsExists(err error) bool { return HasCode(err, ErrCodeKeyExists) }

// IsConflict reports whether err says a precondition or a concurrent write got in the way.
func IsConflict(err error) bool { return HasCode(err, ErrCodeResourceVersionConflicts) }

// IsExpired reports whether err says the resource version was compacted away.
func IsExpired(err error) bool { return HasCode(err, ErrCodeExpired) }

// IsInvalidRequest reports whether err says the request itself is malformed.
func IsInvalidRequest(err error) bool { return HasCode(err, ErrCodeInvalidRequest) }

package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// continueTokenVersion marks the token format, as kube-apiserver's does.
const continueTokenVersion = "meta.k8s.io/v1"

// continueToken is what a continue token carries: the revision of the
// snapshot the first page read, and the key to resume at, relative to the
// listed prefix so that a token cannot name keys outside it.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   uint64 `json:"rv"`
	Start      string `json:"start"`
}

// EncodeContinue returns the continue token that resumes a list of keyPrefix
// at key (inclusive) in the snapshot at rev. key must start with keyPrefix
// and be longer than it; rev must not be 0.
//
// The token is base64 (URL alphabet, unpadded) JSON, {"v":"meta.k8s.io/v1",
// "rv":rev,"start":key without keyPrefix}, the same shape kube-apiserver uses.
// Callers that return the last key k of a page pass k+"\x00".
func EncodeContinue(key, keyPrefix string, rev uint64) (string, error) {
	if rev == 0 {
		return "", fmt.Errorf("encode continue token: revision must not be 0")
	}
	if !strings.HasPrefix(key, keyPrefix) || len(key) == len(keyPrefix) {
		return "", fmt.Errorf("encode continue token: key %q is not below prefix %q", key, keyPrefix)
	}
	data, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, Revision: rev, Start: key[len(keyPrefix):]})
	if err != nil {
		return "", fmt.Errorf("encode continue token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

// DecodeContinue reads a token made by EncodeContinue for a list of
// keyPrefix and returns the key to resume at and the snapshot revision.
// A malformed token fails with ErrCodeInvalidContinue and a message that
// says what is wrong with it.
func DecodeContinue(token, keyPrefix string) (fromKey string, rev uint64, err error) {
	bad := func(format string, args ...any) error {
		return NewError(ErrCodeInvalidContinue, keyPrefix, 0, "continue key is not valid: "+fmt.Sprintf(format, args...))
	}
	if token == "" {
		return "", 0, bad("empty token")
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		// Tokens from other encoders may carry padding or the standard alphabet.
		if data, err = base64.URLEncoding.DecodeString(token); err != nil {
			return "", 0, bad("not base64: %v", err)
		}
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return "", 0, bad("not a JSON continue token: %v", err)
	}
	switch {
	case t.APIVersion != continueTokenVersion:
		return "", 0, bad("version %q is not %q", t.APIVersion, continueTokenVersion)
	case t.Revision == 0:
		return "", 0, bad("no resource version")
	case t.Start == "":
		return "", 0, bad("empty start key")
	case strings.HasPrefix(t.Start, "/"):
		return "", 0, bad("start key %q is not relative", t.Start)
	}
	for seg := range strings.SplitSeq(t.Start, "/") {
		if seg == "." || seg == ".." {
			return "", 0, bad("start key %q has a %q segment", t.Start, seg)
		}
	}
	return keyPrefix + t.Start, t.Revision, nil
}

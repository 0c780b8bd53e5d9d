package storage

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidateKey checks that key names one object: a path such as
// "/pods/default/nginx" that starts with "/", has no empty, "." or ".."
// segment, no trailing "/", and no NUL byte, and is valid UTF-8. It fails
// with ErrCodeInvalidRequest saying what is wrong.
func ValidateKey(key string) error {
	return validateKey(key, false)
}

// ValidatePrefix checks a key given to a Recursive list or watch: a key
// as ValidateKey accepts, or one of those followed by "/", or "/" alone.
func ValidatePrefix(key string) error {
	return validateKey(key, true)
}

func validateKey(key string, prefix bool) error {
	bad := func(why string) error {
		return NewError(ErrCodeInvalidRequest, key, 0, "invalid key: "+why)
	}
	switch {
	case key == "":
		return bad("empty")
	case key[0] != '/':
		return bad(`must start with "/", as in /pods/default/nginx`)
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.IndexByte(key, 0) >= 0:
		return bad("contains a NUL byte")
	}
	rest := key[1:]
	if prefix {
		if rest == "" {
			return nil
		}
		rest = strings.TrimSuffix(rest, "/")
	}
	if rest == "" {
		return bad("no segments after /")
	}
	for seg := range strings.SplitSeq(rest, "/") {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad(fmt.Sprintf("%q path segment", seg))
		}
	}
	return nil
}

// KeyPrefix returns the prefix that a list or watch of key covers: key+"/"
// when recursive (so "/pods/default" never covers "/pods/default2/x"),
// and key itself otherwise. key must have passed ValidatePrefix or ValidateKey.
func KeyPrefix(key string, recursive bool) string {
	if recursive && !strings.HasSuffix(key, "/") {
		return key + "/"
	}
	return key
}

// PrefixEnd returns the smallest string greater than every string that
// starts with prefix, or "" when there is none (prefix is all 0xff bytes).
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

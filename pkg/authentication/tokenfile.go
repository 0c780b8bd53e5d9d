package authentication

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// TokenFile authenticates static bearer tokens listed in a file in
// kube-apiserver's --token-auth-file format: CSV records
//
//	token,user,uid[,"group1,group2"]
//
// with at least three columns; a fourth holds the user's groups, separated
// by commas (quoted, as CSV requires). Lines starting with # are comments.
// Tokens are looked up by their SHA-256, so the time a lookup takes
// tells nothing about how much of a guessed token is right.
//
// A TokenFile is read once and never changes; it is safe for concurrent use.
type TokenFile struct {
	// users is keyed by the SHA-256 of the token.
	users map[[sha256.Size]byte]*User
}

var _ TokenAuthenticator = (*TokenFile)(nil)

// LoadTokenFile reads the token file at path.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("authentication: token file: %w", err)
	}
	defer f.Close()
	tf, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("authentication: token file %s: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile parses a token file. It refuses, naming the line, a
// record with fewer than three columns, an empty token or user name, and
// a token listed twice.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	tf := &TokenFile{users: map[[sha256.Size]byte]*User{}}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want at least 3 columns (token, user name, user uid), found %d", line, len(rec))
		}
		tok, name, uid := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1]), strings.TrimSpace(rec[2])
		switch {
		case tok == "":
			return nil, fmt.Errorf("line %d: empty token", line)
		case name == "":
			return nil, fmt.Errorf("line %d: empty user name", line)
		}
		u := &User{Name: name, UID: uid}
		if len(rec) >= 4 {
			for g := range strings.SplitSeq(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		key := sha256.Sum256([]byte(tok))
		if _, dup := tf.users[key]; dup {
			return nil, fmt.Errorf("line %d: token listed twice", line)
		}
		tf.users[key] = u
	}
	return tf, nil
}

// AuthenticateToken implements TokenAuthenticator. An unknown token is
// not handled (another authenticator may know it).
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	key := sha256.Sum256([]byte(token))
	u, ok := tf.users[key]
	if !ok {
		return nil, false, nil
	}
	return cloneUser(u), true, nil
}

// cloneUser returns a copy of u that callers may change.
func cloneUser(u *User) *User {
	c := &User{Name: u.Name, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if u.Extra != nil {
		c.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			c.Extra[k] = append([]string(nil), v...)
		}
	}
	return c
}

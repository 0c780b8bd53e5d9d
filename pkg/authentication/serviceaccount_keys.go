package authentication

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
)

// The JWS algorithms ServiceAccount tokens are signed with.
const (
	AlgES256 = "ES256" // ECDSA P-256 with SHA-256
	AlgRS256 = "RS256" // RSASSA-PKCS1-v1_5 with SHA-256
)

// TokenSigner signs ServiceAccount tokens with one private key: ES256 for
// an ECDSA P-256 key, RS256 for an RSA key (at least 2048 bits), the key
// id being kube-apiserver's (the unpadded base64url SHA-256 of the public
// key's PKIX encoding), so that verifiers and JWKS readers find the key.
//
// A TokenSigner never changes; it is safe for concurrent use.
type TokenSigner struct {
	key crypto.Signer
	alg string
	kid string
}

// NewTokenSigner returns a TokenSigner for key, an *ecdsa.PrivateKey on
// P-256 or an *rsa.PrivateKey.
func NewTokenSigner(key crypto.Signer) (*TokenSigner, error) {
	alg, err := algorithmFor(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &TokenSigner{key: key, alg: alg, kid: kid}, nil
}

// GenerateTokenSigner returns a TokenSigner with a new ECDSA P-256 key, for
// tests and for servers given no --service-account-signing-key-file.
func GenerateTokenSigner() (*TokenSigner, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("authentication: generate signing key: %w", err)
	}
	return NewTokenSigner(key)
}

// LoadTokenSigner reads a PEM private key (PKCS #8, PKCS #1 RSA or SEC 1
// EC) from path, as --service-account-signing-key-file names it.
func LoadTokenSigner(path string) (*TokenSigner, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authentication: signing key: %w", err)
	}
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		var key any
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("authentication: signing key %s: %w", path, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("authentication: signing key %s: %T is not a signing key", path, key)
		}
		s, err := NewTokenSigner(signer)
		if err != nil {
			return nil, fmt.Errorf("authentication: signing key %s: %w", path, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("authentication: signing key %s: no PEM private key found", path)
}

// PublicKey returns the public key of the signer.
func (s *TokenSigner) PublicKey() crypto.PublicKey { return s.key.Public() }

// Algorithm returns the JWS algorithm the signer signs with.
func (s *TokenSigner) Algorithm() string { return s.alg }

// KeyID returns the key id the signer writes in its tokens' headers.
func (s *TokenSigner) KeyID() string { return s.kid }

// LoadPublicKeys reads every public key of the PEM file at path, as
// --service-account-key-file names it: public keys (PKIX or PKCS #1 RSA),
// the public halves of private keys, and certificates' keys. A file with
// no key is an error.
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authentication: public keys: %w", err)
	}
	keys, err := ParsePublicKeysPEM(data)
	if err != nil {
		return nil, fmt.Errorf("authentication: public keys %s: %w", path, err)
	}
	return keys, nil
}

// ParsePublicKeysPEM returns the public keys of PEM data (see LoadPublicKeys).
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		var (
			pub any
			err error
		)
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = c.PublicKey
			}
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			var priv any
			switch block.Type {
			case "PRIVATE KEY":
				priv, err = x509.ParsePKCS8PrivateKey(block.Bytes)
			case "RSA PRIVATE KEY":
				priv, err = x509.ParsePKCS1PrivateKey(block.Bytes)
			default:
				priv, err = x509.ParseECPrivateKey(block.Bytes)
			}
			if s, ok := priv.(crypto.Signer); ok {
				pub = s.Public()
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s block: %w", block.Type, err)
		}
		if _, err := algorithmFor(pub); err != nil {
			return nil, err
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return keys, nil
}

// algorithmFor returns the JWS algorithm tokens signed by key's private
// half use.
func algorithmFor(key crypto.PublicKey) (string, error) {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("authentication: ECDSA key on %s: only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		return AlgES256, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("authentication: RSA key of %d bits: at least 2048 are required", k.N.BitLen())
		}
		return AlgRS256, nil
	}
	return "", fmt.Errorf("authentication: unsupported key type %T: want ECDSA P-256 or RSA", key)
}

// KeyID returns kube-apiserver's key id of a public key: the unpadded
// base64url SHA-256 of its PKIX encoding.
func KeyID(key crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return "", fmt.Errorf("authentication: key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// JWK is a JSON Web Key as the issuer's JWKS document lists it.
type JWK struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// PublicJWK returns the JSON Web Key of a public key.
func PublicJWK(key crypto.PublicKey) (JWK, error) {
	alg, err := algorithmFor(key)
	if err != nil {
		return JWK{}, err
	}
	kid, err := KeyID(key)
	if err != nil {
		return JWK{}, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		pt, err := k.Bytes() // 0x04 || X || Y, each 32 bytes on P-256
		if err != nil {
			return JWK{}, fmt.Errorf("authentication: jwk: %w", err)
		}
		return JWK{Use: "sig", Kty: "EC", Kid: kid, Crv: "P-256", Alg: alg, X: b64(pt[1:33]), Y: b64(pt[33:])}, nil
	case *rsa.PublicKey:
		return JWK{Use: "sig", Kty: "RSA", Kid: kid, Alg: alg, N: b64(k.N.Bytes()), E: b64(big.NewInt(int64(k.E)).Bytes())}, nil
	}
	return JWK{}, fmt.Errorf("authentication: unsupported key type %T", key)
}

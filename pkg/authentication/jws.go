package authentication

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// A ServiceAccount token is a JWS in compact serialization: three
// unpadded base64url parts, header.payload.signature, signed with ES256
// (the signature is r || s, 32 bytes each) or RS256.

// jwsHeader is the protected header of a token.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

// maxTokenBytes bounds the tokens parsed: kube-apiserver's are a little
// over 1 KiB; anything far larger is not one of them.
const maxTokenBytes = 16 << 10

// Sign returns the compact JWS of claims, signed with the signer's key.
func (s *TokenSigner) Sign(claims *ServiceAccountClaims) (string, error) {
	hdr, err := json.Marshal(jwsHeader{Alg: s.alg, Kid: s.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("authentication: sign token: %w", err)
	}
	b64 := base64.RawURLEncoding
	input := b64.EncodeToString(hdr) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := s.key.(type) {
	case *ecdsa.PrivateKey:
		r, ss, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return "", fmt.Errorf("authentication: sign token: %w", err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
	default:
		sig, err = s.key.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			return "", fmt.Errorf("authentication: sign token: %w", err)
		}
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// splitJWS returns the decoded header, the payload and the signature of
// a compact JWS, and the signing input.
func splitJWS(token string) (hdr jwsHeader, payload, sig []byte, input string, err error) {
	if len(token) > maxTokenBytes {
		return hdr, nil, nil, "", errors.New("token too large")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return hdr, nil, nil, "", errors.New("not a compact JWS: want three parts")
	}
	b64 := base64.RawURLEncoding
	rawHdr, err := b64.DecodeString(parts[0])
	if err != nil {
		return hdr, nil, nil, "", fmt.Errorf("header: %w", err)
	}
	if err := json.Unmarshal(rawHdr, &hdr); err != nil {
		return hdr, nil, nil, "", fmt.Errorf("header: %w", err)
	}
	if payload, err = b64.DecodeString(parts[1]); err != nil {
		return hdr, nil, nil, "", fmt.Errorf("payload: %w", err)
	}
	if sig, err = b64.DecodeString(parts[2]); err != nil {
		return hdr, nil, nil, "", fmt.Errorf("signature: %w", err)
	}
	return hdr, payload, sig, parts[0] + "." + parts[1], nil
}

// verifyJWS reports whether sig is a signature of input by key with alg.
// The algorithm must be the key's own: an RSA key never verifies an ES256
// token, nor the other way round.
func verifyJWS(alg string, key crypto.PublicKey, input string, sig []byte) bool {
	digest := sha256.Sum256([]byte(input))
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if alg != AlgES256 || len(sig) != 64 {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k, digest[:], r, s)
	case *rsa.PublicKey:
		return alg == AlgRS256 && rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil
	}
	return false
}

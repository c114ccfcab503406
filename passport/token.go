package passport

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// TokenPrefix starts every API key token.
const TokenPrefix = "bpc_"

const (
	prefixBytes = 10 // 16 base32 characters
	secretBytes = 32 // 52 base32 characters
	prefixLen   = 16
	secretLen   = 52
	tokenLen    = len(TokenPrefix) + prefixLen + 1 + secretLen
)

// b32 is lower-case RFC 4648 base32 without padding: tokens survive being
// typed, pasted into a shell or put in a URL without quoting.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewToken returns a new random token and its prefix.
func NewToken() (token, prefix string) {
	p := make([]byte, prefixBytes)
	s := make([]byte, secretBytes)
	// crypto/rand.Read never fails (it panics rather than return short).
	_, _ = rand.Read(p)
	_, _ = rand.Read(s)
	prefix = b32.EncodeToString(p)
	return TokenPrefix + prefix + "_" + b32.EncodeToString(s), prefix
}

// ParseToken returns the prefix of a well-formed token; ok is false for
// anything else, which is then refused without a database lookup.
func ParseToken(token string) (prefix string, ok bool) {
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) || token[len(TokenPrefix)+prefixLen] != '_' {
		return "", false
	}
	prefix = token[len(TokenPrefix) : len(TokenPrefix)+prefixLen]
	secret := token[len(TokenPrefix)+prefixLen+1:]
	if !isB32(prefix) || !isB32(secret) {
		return "", false
	}
	return prefix, true
}

// IsKeyToken reports whether s looks like an API key token rather than the
// platform token (which may be any string of 16 characters or more).
func IsKeyToken(s string) bool {
	_, ok := ParseToken(s)
	return ok
}

func isB32(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// HashToken is the stored form of a token: its SHA-256.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

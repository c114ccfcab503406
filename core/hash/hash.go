// Package hash provides the digest and encoding helpers used to address
// canonical BPC documents: SHA-256 in lowercase hex or raw form, and RFC 4648
// base32 without padding.
package hash

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrInvalidDigest reports a hex digest that is not 64 lowercase hex characters.
var ErrInvalidDigest = errors.New("invalid SHA-256 hex digest")

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// SHA256Hex returns the lowercase hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SHA256HexString returns the lowercase hex SHA-256 of the bytes of s,
// without copying s into a new byte slice (sources run to hundreds of KB).
func SHA256HexString(s string) string {
	h := sha256.New()
	var buf [4096]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SHA256 returns the raw 32-byte digest.
func SHA256(b []byte) [32]byte {
	return sha256.Sum256(b)
}

// Base32NoPad encodes b with RFC 4648 standard base32 alphabet without padding.
func Base32NoPad(b []byte) string {
	return b32.EncodeToString(b)
}

// HexToBase32NoPad converts a lowercase hex SHA-256 string to base32 without padding; error on bad hex or wrong length.
//
// Uppercase hex is rejected so that each digest has exactly one accepted spelling.
func HexToBase32NoPad(hexDigest string) (string, error) {
	if len(hexDigest) != 2*sha256.Size {
		return "", fmt.Errorf("hash: %w: length %d, want %d", ErrInvalidDigest, len(hexDigest), 2*sha256.Size)
	}
	raw, err := hex.DecodeString(hexDigest)
	if err != nil {
		return "", fmt.Errorf("hash: %w: %w", ErrInvalidDigest, err)
	}
	if hex.EncodeToString(raw) != hexDigest {
		return "", fmt.Errorf("hash: %w: %q is not lowercase hex", ErrInvalidDigest, hexDigest)
	}
	return Base32NoPad(raw), nil
}

// IsDigestHex reports whether s is a SHA-256 digest in lowercase hex, the
// one spelling BPC formats accept.
func IsDigestHex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if !isLowerHexDigit(s[i]) {
			return false
		}
	}
	return true
}

// IsUUID reports whether s is a UUID in the canonical lowercase 8-4-4-4-12
// form, the one spelling BPC formats accept (so each id hashes one way).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isLowerHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

func isLowerHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
}

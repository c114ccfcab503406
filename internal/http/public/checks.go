package public

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
	"sync"

	"github.com/bpc-platform/bpc/store"
)

// Checks remembers verifications. Verifying a version is a pure function
// of its stored bytes, but not a cheap one — the proof's every node is
// hashed and the QR image rendered again, ~20 ms of CPU — and the public
// routes answer anyone: without it, a few clients could keep the service's
// cores busy re-verifying the same passport.
//
// An entry is keyed by the SHA-256 of every input of the verification
// (bytes, hashes, signature, keys, the QR string), so a byte changed at
// rest is a new key and is verified afresh: remembering never hides
// tampering. Hashing the inputs costs well under a millisecond. At most
// Max entries are kept; when full, the oldest half is forgotten.
//
// Only the checks of the bytes are remembered. The trust checks (who owns
// the key, whether it is revoked, whether the issuer is verified) read
// rows that change without a byte of the version changing; they are cheap
// and run on every lookup (withTrust). Answers, which keeps whole answers,
// drops them when those rows change, and a refill after that finds its
// bytes' checks here.
//
// A nil *Checks remembers nothing. Checks is safe for concurrent use.
type Checks struct {
	max   int
	mu    sync.Mutex
	m     map[[32]byte]Verification
	order [][32]byte // insertion order, for forgetting the oldest
	runs  int        // verifications run (misses), for tests
}

// NewChecks returns Checks remembering at most max verifications.
func NewChecks(max int) *Checks {
	return &Checks{max: max, m: make(map[[32]byte]Verification, max)}
}

// check is the package's check, remembered.
func (c *Checks) check(v store.PublicPassportVersion, qrPayload string, withPNG bool) Verification {
	if c == nil || c.max <= 0 {
		return check(v, qrPayload, withPNG)
	}
	key := checkKey(v, qrPayload, withPNG)
	c.mu.Lock()
	ver, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return ver.clone()
	}
	ver = check(v, qrPayload, withPNG)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	if _, ok := c.m[key]; !ok {
		if len(c.order) >= c.max {
			half := len(c.order) / 2
			for _, k := range c.order[:half] {
				delete(c.m, k)
			}
			c.order = slices.Delete(c.order, 0, half)
		}
		c.m[key] = ver
		c.order = append(c.order, key)
	}
	return ver.clone()
}

// clone copies ver's checks, so that no caller shares the remembered slice.
func (ver Verification) clone() Verification {
	ver.Checks = slices.Clone(ver.Checks)
	return ver
}

// checkKey hashes every input of check, each length-prefixed so that no
// two different inputs run together into the same bytes.
func checkKey(v store.PublicPassportVersion, qrPayload string, withPNG bool) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	optional := func(s *string) {
		if s == nil {
			h.Write([]byte{0})
			return
		}
		h.Write([]byte{1})
		field([]byte(*s))
	}
	field(v.PassportVersionID[:])
	field([]byte(v.PayloadHash))
	field([]byte(v.ProofRootHash))
	field([]byte(v.ReceiptHash))
	field([]byte(v.SigningKeyID))
	optional(v.Signature)
	optional(v.RegisteredPublicKey)
	optional(v.SigningPublicKey)
	field(v.Payload)
	field(v.Proof)
	field(v.ReceiptSigned)
	field([]byte(qrPayload))
	if withPNG {
		h.Write([]byte{1})
		field(v.QRPNG)
	} else {
		h.Write([]byte{0})
	}
	return sum(h)
}

func sum(h hash.Hash) [32]byte {
	var out [32]byte
	h.Sum(out[:0])
	return out
}

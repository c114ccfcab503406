package verify

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"

	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
)

// The names of the checks, in the order a Report lists them.
const (
	CheckQRPayload   = "qr payload"
	CheckReceipt     = "receipt"
	CheckProof       = "proof"
	CheckVersion     = "pv = version"
	CheckPayloadHash = "ph = sha256(payload)"
	CheckProofRoot   = "pr = proof root"
	CheckReceiptHash = "rh = receipt hash"
	CheckSigningKey  = "signing key"
	CheckSignature   = "signature"
	CheckQRPNG       = "qr.png"
)

// Artifacts are the bytes of one passport version as a verifier holds them.
// A nil QRPNG, PublicKeyPEM, ReceiptHash or Signature is absent and its part
// of the checks is left out; every other member is required.
type Artifacts struct {
	// Payload is the BPC-PASSPORT-1 payload, the exact bytes that were hashed.
	Payload []byte
	// Proof is the BPC-PROOF-1 proof, canonical.
	Proof []byte
	// Receipt is the signed BPC-RECEIPT-1 receipt, canonical.
	Receipt []byte
	// QRPayload is the QR code's text: a BPC-QR-1 string or a BPC-QR-2
	// link.
	QRPayload string
	// QRPNG is the QR code image, when there is one.
	QRPNG []byte
	// SigningKey is the key document (see KeyDocument) of the key the
	// receipt is verified with.
	SigningKey []byte

	// PublicKeyPEM is the signing key as a PEM "PUBLIC KEY" block (PKIX).
	PublicKeyPEM []byte
	// ReceiptHash is the 32 raw bytes of receipt_hash, the signed message.
	ReceiptHash []byte
	// Signature is the raw 64-byte Ed25519 signature.
	Signature []byte
}

// Expect is what another source says about the passport version, such as the
// admin API's view of it or a key the verifier trusts. Each non-zero member
// must agree with the artifacts.
type Expect struct {
	PassportVersionID string
	PayloadHash       string
	ProofRootHash     string
	ReceiptHash       string
	// Signature is the signature in standard base64, as the receipt spells it.
	Signature    string
	SigningKeyID string
	PublicKey    ed25519.PublicKey
	// From names the source in failure details ("the API"); empty means
	// "the expectation".
	From string
}

// Check is the outcome of one named check; Detail says what was found, or
// what is wrong.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report lists the checks Verify ran, in a fixed order.
type Report struct {
	Checks []Check
}

// OK reports whether checks ran and every one passed.
func (r Report) OK() bool {
	return len(r.Checks) > 0 && len(r.Failed()) == 0
}

// Passed reports whether the named check ran and passed.
func (r Report) Passed(name string) bool {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.OK
		}
	}
	return false
}

// Failed returns the checks that failed.
func (r Report) Failed() []Check {
	var failed []Check
	for _, c := range r.Checks {
		if !c.OK {
			failed = append(failed, c)
		}
	}
	return failed
}

// FailedNames names the checks that failed, in order.
func (r Report) FailedNames() []string {
	var names []string
	for _, c := range r.Failed() {
		names = append(names, c.Name)
	}
	return names
}

// String is the check as one line: "ok  " or "FAIL", its name, its detail.
func (c Check) String() string {
	mark := "ok  "
	if !c.OK {
		mark = "FAIL"
	}
	return fmt.Sprintf("%s %-22s %s", mark, c.Name, c.Detail)
}

// Err is nil when the report is OK, else an error naming each failed check.
func (r Report) Err() error {
	if len(r.Checks) == 0 {
		return errors.New("verification failed: nothing was checked")
	}
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, c := range failed {
		parts[i] = c.Name + ": " + c.Detail
	}
	return fmt.Errorf("verification failed: %s", strings.Join(parts, "; "))
}

func (r *Report) pass(name, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

func (r *Report) fail(name, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Detail: fmt.Sprintf(format, args...)})
}

// claim is a value a source states, for agree.
type claim struct{ source, value string }

// agree passes the check when got equals every non-empty claimed value, and
// fails it naming the first source that disagrees.
func (r *Report) agree(name, got string, claims ...claim) {
	for _, c := range claims {
		if c.value != "" && c.value != got {
			r.fail(name, "%s, but %s says %s", got, c.source, c.value)
			return
		}
	}
	r.pass(name, "%s", got)
}

// Verify checks the artifacts against each other and against want, and
// returns every check it ran; the error, nil when all passed, names the
// checks that failed. The package comment lists the checks.
func Verify(a Artifacts, want Expect) (Report, error) {
	var rep Report
	from := want.From
	if from == "" {
		from = "the expectation"
	}

	f, qrErr := qr.Parse(a.QRPayload)
	if qrErr != nil {
		rep.fail(CheckQRPayload, "%v", qrErr)
	} else {
		rep.pass(CheckQRPayload, "%s", describeQR(f, len(a.QRPayload)))
	}
	// A QR payload that does not parse vouches for nothing: its fields stay
	// empty, and agree skips empty claims.
	fromQR := func(v string) claim { return claim{"the QR payload", v} }

	r, rErr := receipt.Parse(a.Receipt)
	if rErr == nil && r.Signature == "" {
		rErr = errors.New("the receipt is not signed")
	}
	var rh string
	var rhRaw [32]byte
	if rErr == nil {
		rh, rhRaw, rErr = receipt.Hash(r)
	}
	if rErr != nil {
		rep.fail(CheckReceipt, "%s: %v", FileReceipt, rErr)
	} else {
		rep.pass(CheckReceipt, "%s, signed, key %s", receipt.Version, r.SigningKeyID)
	}

	p, pErr := proof.Verify(a.Proof)
	if pErr != nil {
		rep.fail(CheckProof, "%s: %v", FileProof, pErr)
	} else {
		rep.pass(CheckProof, "%s, %d nodes, every node hash recomputed", p.ProofVersion, len(p.Nodes))
	}

	// The receipt binds the version, the payload and the proof: without it
	// there is nothing signed to compare them with.
	if rErr == nil {
		rep.agree(CheckVersion, r.PassportVersionID, fromQR(f.PassportVersionID), claim{from, want.PassportVersionID})
		rep.agree(CheckPayloadHash, hash.SHA256Hex(a.Payload),
			fromQR(f.PayloadHash), claim{"the receipt", r.PayloadHash}, claim{from, want.PayloadHash})
		if pErr == nil {
			rep.agree(CheckProofRoot, p.RootHash,
				fromQR(f.ProofRootHash), claim{"the receipt", r.ProofRootHash}, claim{from, want.ProofRootHash})
		}
		if a.ReceiptHash != nil && !bytes.Equal(a.ReceiptHash, rhRaw[:]) {
			rep.fail(CheckReceiptHash, "%s does not hold the 32 bytes of the recomputed receipt hash %s", FileReceiptHash, rh)
		} else {
			rep.agree(CheckReceiptHash, rh, fromQR(f.ReceiptHash), claim{from, want.ReceiptHash})
		}
	}

	key, keyErr := checkKey(a, want, from)
	if keyErr == nil && rErr == nil && r.SigningKeyID != key.KeyID {
		keyErr = fmt.Errorf("the receipt names key %q, %s holds %q", r.SigningKeyID, FileSigningKey, key.KeyID)
	}
	if keyErr != nil {
		rep.fail(CheckSigningKey, "%v", keyErr)
	} else if a.PublicKeyPEM != nil {
		rep.pass(CheckSigningKey, "%s, Ed25519, %s = %s", key.KeyID, FilePublicKeyPEM, FileSigningKey)
	} else {
		rep.pass(CheckSigningKey, "%s, Ed25519", key.KeyID)
	}

	if rErr == nil && keyErr == nil {
		sig, err := sign.ParseSignature(r.Signature)
		switch {
		case err != nil:
			rep.fail(CheckSignature, "the receipt's signature is not base64 of %d bytes", ed25519.SignatureSize)
		case a.Signature != nil && !bytes.Equal(sig, a.Signature):
			rep.fail(CheckSignature, "%s differs from the receipt's signature", FileSignature)
		case want.Signature != "" && want.Signature != r.Signature:
			rep.fail(CheckSignature, "%s's signature differs from the receipt's", from)
		case sign.Verify(key.PublicKey, rhRaw, sig) != nil:
			rep.fail(CheckSignature, "Ed25519 signature does NOT verify over the receipt hash")
		default:
			rep.pass(CheckSignature, "Ed25519 over the 32 raw bytes of rh verifies")
		}
	}

	// The rendering is deterministic, so the image must be the payload's
	// (as rendered now, or before the PNG encoding changed).
	if a.QRPNG != nil && qrErr == nil {
		ok, err := qr.IsRendering(a.QRPayload, a.QRPNG)
		switch {
		case err != nil:
			rep.fail(CheckQRPNG, "%v", err)
		case !ok:
			rep.fail(CheckQRPNG, "%s is not the %s rendering of the payload (%d bytes)", FileQRPNG, f.Format, len(a.QRPNG))
		default:
			rep.pass(CheckQRPNG, "byte-identical to the local rendering of the payload")
		}
	}
	return rep, rep.Err()
}

// describeQR is the detail of a passing "qr payload" check: the format,
// the length and, for a link, where it leads.
func describeQR(f qr.Fields, n int) string {
	if f.Format == qr.FormatQR2 {
		return fmt.Sprintf("%s link, %d bytes, to %s%s…", f.Format, n, f.BaseURL, qr.LinkPath)
	}
	return fmt.Sprintf("%s, %d bytes", f.Format, n)
}

// checkKey parses the key document and checks that the PEM copy, when given,
// holds the same key, and that want's key id and public key agree with it.
func checkKey(a Artifacts, want Expect, from string) (Key, error) {
	key, err := ParseKeyDocument(a.SigningKey)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", FileSigningKey, err)
	}
	if a.PublicKeyPEM != nil {
		pemKey, err := parsePublicKeyPEM(a.PublicKeyPEM)
		if err != nil {
			return Key{}, fmt.Errorf("%s: %w", FilePublicKeyPEM, err)
		}
		if !key.PublicKey.Equal(pemKey) {
			return Key{}, fmt.Errorf("%s and %s hold different keys", FilePublicKeyPEM, FileSigningKey)
		}
	}
	if want.SigningKeyID != "" && want.SigningKeyID != key.KeyID {
		return Key{}, fmt.Errorf("%s names key %q, %s holds %q", from, want.SigningKeyID, FileSigningKey, key.KeyID)
	}
	if want.PublicKey != nil && !key.PublicKey.Equal(want.PublicKey) {
		return Key{}, fmt.Errorf("%s differs from %s's public key", FileSigningKey, from)
	}
	return key, nil
}

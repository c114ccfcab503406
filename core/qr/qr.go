// Package qr builds, parses and renders the QR payloads of passport
// versions, in two formats.
//
// A BPC-QR-1 payload is
//
//	BPC1|pv=<passport_version_id>|ph=<payload hash>|pr=<proof root>|rh=<receipt hash>
//
// where the passport version id is a lowercase UUID and each hash is the 32
// raw SHA-256 bytes in RFC 4648 base32 (standard alphabet, upper case) without
// padding: 52 characters. Every payload is therefore exactly 212 bytes, and
// each set of inputs has exactly one spelling.
//
// A BPC-QR-2 payload is a link a phone camera opens:
//
//	<base>/p/<passport_version_id>?ph=<payload hash>&pr=<proof root>&rh=<receipt hash>
//
// with the same lowercase UUID and the same base32 hashes, the parameters in
// this order and nothing else. The base is the service's public base URL
// (BPC_PUBLIC_BASE_URL): http or https in lower case, a lowercase host name
// or IP address, an optional port, an optional path of non-empty segments,
// no trailing slash, no user info, query or fragment, and at most
// MaxBaseURLLen bytes (CheckBaseURL), so that a link is at most MaxLinkLen
// bytes and its code stays small enough to scan. A link too has exactly one
// spelling per input.
//
// Parse reads either format strictly and says which it read (and a link's
// base); anything else is a VALIDATION_ERROR on qr_payload.
//
// PNG renders a payload as a QR code with error correction level M, a
// 4-module quiet zone and 8 pixels per module, byte-identical for the same
// payload. A BPC-QR-1 payload is always QR version 10 (57×57 modules, the
// smallest version a 212-byte payload is guaranteed to fit: a 520×520 PNG);
// a BPC-QR-2 link is the smallest version it fits (version 10 for a base of
// up to about 30 characters; at most version 13, which holds MaxLinkLen
// bytes at level M even in byte mode). IsRendering
// recognises a payload's rendering, and the earlier rendering of a BPC-QR-1
// image (see IsRendering).
//
// The package is pure: no I/O, no clock, no randomness.
package qr

import (
	"bytes"
	"compress/zlib"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strconv"
	"strings"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// The formats Parse reads, as Fields.Format names them.
const (
	FormatQR1 = "BPC-QR-1"
	FormatQR2 = "BPC-QR-2"
)

// Prefix is the first segment of every BPC-QR-1 payload.
const Prefix = "BPC1"

// PayloadLen is the length in bytes of every BPC-QR-1 payload.
const PayloadLen = len(Prefix) + len("|pv=") + uuidLen + 3*(len("|ph=")+b32HashLen)

// LinkPath is what a BPC-QR-2 link's base is followed by, before the
// passport version id: the service serves the page at /p/{id}.
const LinkPath = "/p/"

// linkSuffixLen is the length of what follows the base in every BPC-QR-2
// link: /p/<uuid>?ph=…&pr=…&rh=….
const linkSuffixLen = len(LinkPath) + uuidLen + 3*(len("?ph=")+b32HashLen)

// MaxBaseURLLen bounds a BPC-QR-2 base URL, so that every link fits a QR
// code a phone reads from a printed label (version 13 at level M at most).
const MaxBaseURLLen = 100

// MaxLinkLen is the length in bytes of the longest BPC-QR-2 link.
const MaxLinkLen = MaxBaseURLLen + linkSuffixLen

// Version is the QR code version PNG always renders a BPC-QR-1 payload as
// (57×57 modules).
const Version = 10

// ModulePixels is the width and height in pixels of one QR module in PNG output.
const ModulePixels = 8

// ImageSize is the width and height in pixels of every BPC-QR-1 PNG:
// version 10 has 57 modules, plus a 4-module quiet zone on each side.
const ImageSize = (17 + 4*Version + 2*4) * ModulePixels

const (
	uuidLen    = 36
	b32HashLen = 52 // ceil(32*8/5)
	// fieldPayload names a whole payload in VALIDATION_ERRORs from Parse and PNG.
	fieldPayload = "qr_payload"
	// fieldBaseURL names the base URL in VALIDATION_ERRORs from Link and
	// CheckBaseURL.
	fieldBaseURL = "base_url"
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Fields are the values a QR payload carries, hashes as lowercase hex.
type Fields struct {
	// Format is FormatQR1 or FormatQR2: what Parse read, what Encode writes.
	Format string
	// BaseURL is a BPC-QR-2 link's base; empty for BPC-QR-1.
	BaseURL           string
	PassportVersionID string
	PayloadHash       string
	ProofRootHash     string
	ReceiptHash       string
}

// Payload returns the BPC-QR-1 string for a passport version (lowercase UUID)
// and its payload hash, proof root and receipt hash (lowercase SHA-256 hex).
// Invalid inputs are VALIDATION_ERRORs naming the argument.
func Payload(passportVersionID, payloadHashHex, proofRootHex, receiptHashHex string) (string, error) {
	return build(Prefix, qr1Keys, passportVersionID, payloadHashHex, proofRootHex, receiptHashHex)
}

// Link returns the BPC-QR-2 link for a passport version under baseURL (see
// CheckBaseURL; a base that breaks its rules is a VALIDATION_ERROR naming
// base_url, not corrected), with the same arguments as Payload.
func Link(baseURL, passportVersionID, payloadHashHex, proofRootHex, receiptHashHex string) (string, error) {
	if err := CheckBaseURL(baseURL); err != nil {
		return "", err
	}
	return build(baseURL, qr2Keys, passportVersionID, payloadHashHex, proofRootHex, receiptHashHex)
}

// Encode writes f in its Format: Payload for FormatQR1, Link for
// FormatQR2. Encode(Parse(s)) == s for every s Parse accepts.
func Encode(f Fields) (string, error) {
	switch f.Format {
	case FormatQR1:
		return Payload(f.PassportVersionID, f.PayloadHash, f.ProofRootHash, f.ReceiptHash)
	case FormatQR2:
		return Link(f.BaseURL, f.PassportVersionID, f.PayloadHash, f.ProofRootHash, f.ReceiptHash)
	}
	return "", errcode.Invalid("format", "must be %s or %s, got %q", FormatQR1, FormatQR2, f.Format)
}

// build writes head, then the four segments with keys.
func build(head string, keys [4]string, passportVersionID, payloadHashHex, proofRootHex, receiptHashHex string) (string, error) {
	if !hash.IsUUID(passportVersionID) {
		return "", errcode.Invalid("passport_version_id", "must be a lowercase UUID, got %q", passportVersionID)
	}
	hashes := []struct{ field, hex string }{
		{"payload_hash", payloadHashHex},
		{"proof_root_hash", proofRootHex},
		{"receipt_hash", receiptHashHex},
	}
	var b strings.Builder
	b.Grow(len(head) + linkSuffixLen)
	b.WriteString(head)
	b.WriteString(keys[0])
	b.WriteString(passportVersionID)
	for i, h := range hashes {
		enc, err := hash.HexToBase32NoPad(h.hex)
		if err != nil {
			return "", errcode.InvalidWrap(h.field, err, "must be 64 lowercase hex characters: %s", err)
		}
		b.WriteString(keys[i+1])
		b.WriteString(enc)
	}
	return b.String(), nil
}

// qr1Keys are the keys of a BPC-QR-1 payload's four segments after the
// prefix, in order; qr2Keys what precedes the same four values in a link.
var (
	qr1Keys = [4]string{"|pv=", "|ph=", "|pr=", "|rh="}
	qr2Keys = [4]string{LinkPath, "?ph=", "&pr=", "&rh="}
)

// hashKeys name the three hashes in errors, in order.
var hashKeys = [3]string{"ph", "pr", "rh"}

// Parse decodes a BPC-QR-1 payload or a BPC-QR-2 link. It is strict: the
// prefix (or the base URL's rules), the segment order, the lowercase UUID
// and the unpadded upper-case base32 of exactly 32 bytes must all be as
// Payload and Link write them, so Encode(Parse(s)) == s for every s Parse
// accepts. A string that starts with http:// or https:// is read as a link,
// anything else as BPC-QR-1. Errors are VALIDATION_ERRORs on field
// qr_payload.
func Parse(s string) (Fields, error) {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		return parseLink(s)
	}
	if len(s) != PayloadLen {
		return Fields{}, errcode.Invalid(fieldPayload, "must be %d bytes, got %d", PayloadLen, len(s))
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Fields{}, errcode.Invalid(fieldPayload, "must start with %q (BPC-QR-1) or be a BPC-QR-2 link (https://…%s…)", Prefix, LinkPath)
	}
	f, err := parseSegments(rest, qr1Keys, "segment")
	if err != nil {
		return Fields{}, err
	}
	f.Format = FormatQR1
	return f, nil
}

// parseLink reads a BPC-QR-2 link: its last linkSuffixLen bytes are the
// segments, whatever comes before them the base.
func parseLink(s string) (Fields, error) {
	if len(s) > MaxLinkLen {
		return Fields{}, errcode.Invalid(fieldPayload, "a BPC-QR-2 link must be at most %d bytes, got %d", MaxLinkLen, len(s))
	}
	if len(s) <= linkSuffixLen {
		return Fields{}, errcode.Invalid(fieldPayload, "a BPC-QR-2 link must end with %s<passport_version_id>?ph=…&pr=…&rh=… (%d bytes), got %d bytes in all",
			LinkPath, linkSuffixLen, len(s))
	}
	base, rest := s[:len(s)-linkSuffixLen], s[len(s)-linkSuffixLen:]
	if err := checkBaseURL(base); err != nil {
		return Fields{}, errcode.Invalid(fieldPayload, "the BPC-QR-2 link's base %s", err)
	}
	f, err := parseSegments(rest, qr2Keys, "link part")
	if err != nil {
		return Fields{}, err
	}
	f.Format, f.BaseURL = FormatQR2, base
	return f, nil
}

// parseSegments reads the four keyed values of rest, whose length the
// caller checked: each value is complete once its key matched.
func parseSegments(rest string, keys [4]string, noun string) (Fields, error) {
	var values [4]string
	for i, key := range keys {
		var ok bool
		rest, ok = strings.CutPrefix(rest, key)
		if !ok {
			return Fields{}, errcode.Invalid(fieldPayload, "%s %d must start with %q", noun, i+1, key)
		}
		n := b32HashLen
		if i == 0 {
			n = uuidLen
		}
		values[i], rest = rest[:n], rest[n:]
	}
	if !hash.IsUUID(values[0]) {
		return Fields{}, errcode.Invalid(fieldPayload, "pv must be a lowercase UUID")
	}
	f := Fields{PassportVersionID: values[0]}
	targets := []*string{&f.PayloadHash, &f.ProofRootHash, &f.ReceiptHash}
	for i, v := range values[1:] {
		h, err := DecodeHash(v)
		if err != nil {
			return Fields{}, errcode.Invalid(fieldPayload, "%s %s", hashKeys[i], err)
		}
		*targets[i] = h
	}
	return f, nil
}

// DecodeHash returns the lowercase hex of a hash as both formats write it:
// the unpadded upper-case base32 of exactly 32 bytes, in its one spelling.
// The error is a phrase saying what is wrong, to follow the value's name
// ("ph is not …").
func DecodeHash(b32Hash string) (string, error) {
	if len(b32Hash) != b32HashLen {
		return "", problem(fmt.Sprintf("is not the canonical base32 of a 32-byte hash (%d characters, not %d)", len(b32Hash), b32HashLen))
	}
	raw, err := b32.DecodeString(b32Hash)
	if err != nil {
		return "", problem("is not unpadded upper-case base32: " + err.Error())
	}
	// The decoder ignores the 4 unused bits of the last character; insist
	// they are zero so each hash has one spelling.
	if len(raw) != 32 || b32.EncodeToString(raw) != b32Hash {
		return "", problem("is not the canonical base32 of a 32-byte hash")
	}
	return hex.EncodeToString(raw), nil
}

// CheckBaseURL reports whether s may be the base of BPC-QR-2 links, as a
// VALIDATION_ERROR naming base_url: http:// or https://, a host (a
// lowercase DNS name, an IPv4 address or a bracketed IPv6 address in its
// canonical form), an optional port (1–65535, no leading zero), an optional
// path of non-empty segments of letters, digits and -._~ (no . or ..
// segment), no trailing slash, user info, query or fragment, and at most
// MaxBaseURLLen bytes. A base breaking a rule is refused, not corrected:
// each base has one spelling, so each link does. The error's cause
// (errors.Unwrap) states the rule without the value.
func CheckBaseURL(s string) error {
	if err := checkBaseURL(s); err != nil {
		// The cause is the rule alone, for a caller that must not echo
		// the value (a configuration error).
		return errcode.InvalidWrap(fieldBaseURL, err, "%s, got %q", err, s)
	}
	return nil
}

// problem is what is wrong with a value, as a phrase that follows its name.
type problem string

func (e problem) Error() string { return string(e) }

func checkBaseURL(s string) error {
	if len(s) > MaxBaseURLLen {
		return problem("must be at most " + strconv.Itoa(MaxBaseURLLen) + " bytes, got " + strconv.Itoa(len(s)))
	}
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return problem("must start with https:// or http://")
		}
	}
	if strings.ContainsAny(rest, "?#") {
		return problem("must have no query or fragment (no ? or #)")
	}
	if strings.Contains(rest, "@") {
		return problem("must have no user info (no @)")
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		if path == "" || strings.HasSuffix(path, "/") {
			return problem("must not end with a slash")
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool { return !pathChar(r) }) {
				return problem("path segments must be letters, digits and -._~ (not empty, . or ..)")
			}
		}
	}
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.HasSuffix(authority, "]") {
		host, port = authority[:i], authority[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' || strings.ContainsAny(port, "+-") {
			return problem("port must be a number from 1 to 65535")
		}
	}
	if !validHost(host) {
		return problem("must name a host (a lowercase name such as passports.example.com, an IPv4 address or [IPv6])")
	}
	return nil
}

func pathChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)
}

// validHost accepts a lowercase DNS name (labels of a-z, 0-9 and inner
// hyphens), which includes IPv4 addresses, or an IPv6 address in brackets
// spelt as netip writes it.
func validHost(h string) bool {
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		addr, err := netip.ParseAddr(inner)
		return ok && err == nil && addr.Is6() && addr.Zone() == "" && addr.String() == inner
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// PNG renders a payload as a PNG QR code (error correction level M, quiet
// zone kept, ModulePixels per module): a BPC-QR-1 payload as version 10
// (ImageSize pixels square), a BPC-QR-2 link as the smallest version it
// fits. The same payload always yields the same bytes. A string that is
// not a valid payload of either format is a VALIDATION_ERROR.
func PNG(payload string) ([]byte, error) {
	return render(payload, zlib.DefaultCompression)
}

// IsRendering reports whether b is PNG's rendering of payload, or, for a
// BPC-QR-1 payload, the rendering of the same image that PNG produced
// before its deflate level changed (level 9, as go-qrcode encodes; level 6
// is three times faster to encode and a few bytes smaller): images stored
// and exported before still verify. A payload that is not valid is a
// VALIDATION_ERROR.
func IsRendering(payload string, b []byte) (bool, error) {
	current, err := PNG(payload)
	if err != nil || bytes.Equal(current, b) {
		return err == nil, err
	}
	if !strings.HasPrefix(payload, Prefix) {
		// BPC-QR-2 images were only ever rendered one way.
		return false, nil
	}
	earlier, err := render(payload, zlib.BestCompression)
	return err == nil && bytes.Equal(earlier, b), err
}

func render(payload string, level int) ([]byte, error) {
	f, err := Parse(payload)
	if err != nil {
		return nil, err
	}
	var code *qrcode.QRCode
	if f.Format == FormatQR1 {
		// A fixed version gives every BPC-QR-1 code the same module grid;
		// 212 bytes always fit version 10 at level M even in byte mode
		// (capacity 213).
		code, err = qrcode.NewWithForcedVersion(payload, Version, qrcode.Medium)
	} else {
		// A link's length depends on its base: the smallest version keeps
		// the modules as large as the printed size allows.
		code, err = qrcode.New(payload, qrcode.Medium)
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding QR code: %s", err)
	}
	return encodePNG(code.Bitmap(), level), nil
}

// encodePNG writes bitmap (its quiet zone included, true for a dark module)
// with ModulePixels pixels per module as a two-colour paletted PNG of one
// bit per pixel: the bytes image/png writes for go-qrcode's Image at the
// same deflate level (a test holds them equal), without going through
// 270 400 pixels one by one.
func encodePNG(bitmap [][]bool, level int) []byte {
	size := len(bitmap) * ModulePixels
	rowBytes := (size + 7) / 8
	var raw bytes.Buffer
	raw.Grow(size * (1 + rowBytes))
	row := make([]byte, 1+rowBytes) // filter type 0 (none), then the pixels
	for _, modules := range bitmap {
		clear(row)
		for x := range size {
			if modules[x/ModulePixels] {
				row[1+x/8] |= 0x80 >> (x % 8)
			}
		}
		for range ModulePixels {
			raw.Write(row)
		}
	}
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, level) // the level is one of zlib's constants
	_, _ = zw.Write(raw.Bytes())               // writes to a bytes.Buffer do not fail
	_ = zw.Close()

	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, colour type 3 (palette)
	writeChunk(&out, "IHDR", ihdr)
	writeChunk(&out, "PLTE", []byte{0xff, 0xff, 0xff, 0, 0, 0}) // index 0 white, 1 black
	// image/png cuts IDAT chunks at 32 KiB; a code's stream is about 1 KB.
	for data := idat.Bytes(); len(data) > 0; {
		n := min(len(data), 1<<15)
		writeChunk(&out, "IDAT", data[:n])
		data = data[n:]
	}
	writeChunk(&out, "IEND", nil)
	return out.Bytes()
}

func writeChunk(out *bytes.Buffer, name string, data []byte) {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], name)
	out.Write(head[:])
	out.Write(data)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	_ = binary.Write(out, binary.BigEndian, crc.Sum32())
}

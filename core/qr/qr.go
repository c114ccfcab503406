// Package qr builds, parses and renders BPC-QR-1 passport QR payloads.
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
// PNG renders a payload as a QR code with error correction level M, always QR
// version 10 (57×57 modules, the smallest version a 212-byte payload is
// guaranteed to fit), a 4-module quiet zone and 8 pixels per module: a
// 520×520 two-colour PNG, byte-identical for the same payload. IsRendering
// recognises it, and the earlier rendering of the same image (see
// IsRendering).
//
// The package is pure: no I/O, no clock, no randomness.
package qr

import (
	"bytes"
	"compress/zlib"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strings"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Prefix is the first segment of every BPC-QR-1 payload.
const Prefix = "BPC1"

// PayloadLen is the length in bytes of every BPC-QR-1 payload.
const PayloadLen = len(Prefix) + len("|pv=") + uuidLen + 3*(len("|ph=")+b32HashLen)

// Version is the QR code version PNG always renders (57×57 modules).
const Version = 10

// ModulePixels is the width and height in pixels of one QR module in PNG output.
const ModulePixels = 8

// ImageSize is the width and height in pixels of every PNG: version 10 has 57
// modules, plus a 4-module quiet zone on each side.
const ImageSize = (17 + 4*Version + 2*4) * ModulePixels

const (
	uuidLen    = 36
	b32HashLen = 52 // ceil(32*8/5)
	// fieldPayload names a whole payload in VALIDATION_ERRORs from Parse and PNG.
	fieldPayload = "qr_payload"
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Fields are the values a BPC-QR-1 payload carries, hashes as lowercase hex.
type Fields struct {
	PassportVersionID string
	PayloadHash       string
	ProofRootHash     string
	ReceiptHash       string
}

// Payload returns the BPC-QR-1 string for a passport version (lowercase UUID)
// and its payload hash, proof root and receipt hash (lowercase SHA-256 hex).
// Invalid inputs are VALIDATION_ERRORs naming the argument.
func Payload(passportVersionID, payloadHashHex, proofRootHex, receiptHashHex string) (string, error) {
	if !hash.IsUUID(passportVersionID) {
		return "", errcode.Invalid("passport_version_id", "must be a lowercase UUID, got %q", passportVersionID)
	}
	hashes := []struct{ field, hex string }{
		{"payload_hash", payloadHashHex},
		{"proof_root_hash", proofRootHex},
		{"receipt_hash", receiptHashHex},
	}
	var b strings.Builder
	b.Grow(PayloadLen)
	b.WriteString(Prefix)
	b.WriteString("|pv=")
	b.WriteString(passportVersionID)
	for i, h := range hashes {
		enc, err := hash.HexToBase32NoPad(h.hex)
		if err != nil {
			return "", errcode.InvalidWrap(h.field, err, "must be 64 lowercase hex characters: %s", err)
		}
		b.WriteString(segmentKeys[i+1])
		b.WriteString(enc)
	}
	return b.String(), nil
}

// segmentKeys are the keys of the four segments after the prefix, in order.
var segmentKeys = [4]string{"|pv=", "|ph=", "|pr=", "|rh="}

// Parse decodes a BPC-QR-1 payload. It is strict: the prefix, the segment
// order, the lowercase UUID and the unpadded upper-case base32 of exactly 32
// bytes must all be as Payload writes them, so Payload(Parse(s)) == s for
// every s Parse accepts. Errors are VALIDATION_ERRORs on field qr_payload.
func Parse(s string) (Fields, error) {
	if len(s) != PayloadLen {
		return Fields{}, errcode.Invalid(fieldPayload, "must be %d bytes, got %d", PayloadLen, len(s))
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Fields{}, errcode.Invalid(fieldPayload, "must start with %q", Prefix)
	}
	// The length check above guarantees that each segment is complete once
	// its key matched.
	var values [4]string
	for i, key := range segmentKeys {
		rest, ok = strings.CutPrefix(rest, key)
		if !ok {
			return Fields{}, errcode.Invalid(fieldPayload, "segment %d must start with %q", i+1, key)
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
		key := segmentKeys[i+1][1:3]
		raw, err := b32.DecodeString(v)
		if err != nil {
			return Fields{}, errcode.InvalidWrap(fieldPayload, err, "%s is not unpadded upper-case base32: %s", key, err)
		}
		// The decoder ignores the 4 unused bits of the last character; insist
		// they are zero so each hash has one spelling.
		if len(raw) != 32 || b32.EncodeToString(raw) != v {
			return Fields{}, errcode.Invalid(fieldPayload, "%s is not the canonical base32 of a 32-byte hash", key)
		}
		*targets[i] = hex.EncodeToString(raw)
	}
	return f, nil
}

// PNG renders a BPC-QR-1 payload as a 520×520 PNG QR code (version 10, error
// correction level M, quiet zone kept). The same payload always yields the
// same bytes. A string that is not a valid BPC-QR-1 payload is a
// VALIDATION_ERROR.
func PNG(payload string) ([]byte, error) {
	return render(payload, zlib.DefaultCompression)
}

// IsRendering reports whether b is PNG's rendering of payload, or the
// rendering of the same image that PNG produced before its deflate level
// changed (level 9, as go-qrcode encodes; level 6 is three times faster to
// encode and a few bytes smaller): images stored and exported before still
// verify. A payload that is not valid is a VALIDATION_ERROR.
func IsRendering(payload string, b []byte) (bool, error) {
	current, err := PNG(payload)
	if err != nil || bytes.Equal(current, b) {
		return err == nil, err
	}
	earlier, err := render(payload, zlib.BestCompression)
	return err == nil && bytes.Equal(earlier, b), err
}

func render(payload string, level int) ([]byte, error) {
	if _, err := Parse(payload); err != nil {
		return nil, err
	}
	// A fixed version gives every passport the same module grid, so pixels map
	// onto whole modules and all codes look alike; 212 bytes always fit
	// version 10 at level M even in byte mode (capacity 213).
	code, err := qrcode.NewWithForcedVersion(payload, Version, qrcode.Medium)
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

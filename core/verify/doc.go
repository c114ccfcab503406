// Package verify checks the artifacts of a passport version using nothing but
// their bytes: the BPC-PASSPORT-1 payload, the BPC-PROOF-1 proof, the signed
// BPC-RECEIPT-1 receipt, the QR payload — a BPC-QR-1 string or a BPC-QR-2
// link — (and, when there is one, its PNG rendering) and the Ed25519 key the
// receipt is verified with. It is what a
// third party runs on the files `bpc demo` writes, what the public
// verification page runs on the stored bytes, and what `bpc verify` runs on a
// directory or an export.
//
// # What is checked
//
// Verify runs every check it can and reports each one by name, so that a
// reader sees all that is wrong at once, not only the first thing:
//
//   - "qr payload": the QR string is a strict BPC-QR-1 payload or BPC-QR-2
//     link (core/qr.Parse); the detail names the format, and a link's base.
//   - "receipt": the receipt is canonical BPC-RECEIPT-1 and signed.
//   - "proof": the proof is canonical BPC-PROOF-1 with every node hash
//     recomputed from its content and its children, up to root_hash.
//   - "pv = version": the passport version the receipt names is the one the
//     QR payload names and the one expected.
//   - "ph = sha256(payload)": the SHA-256 of the payload bytes is the
//     payload_hash of the receipt and the ph of the QR payload.
//   - "pr = proof root": the verified root_hash is the receipt's
//     proof_root_hash and the QR's pr.
//   - "rh = receipt hash": receipt_hash, recomputed over the canonical receipt
//     without its signature, is the QR's rh (and the detached copy's bytes).
//   - "signing key": the key document names the key the receipt names and
//     holds an Ed25519 public key (the PEM copy, when given, holds the same).
//   - "signature": the receipt's Ed25519 signature verifies over the 32 raw
//     bytes of receipt_hash with that key.
//   - "qr.png": the PNG is byte for byte the rendering of the QR payload
//     (only when a PNG is given: an export carries no image).
//
// The receipt is the anchor: it is the one signed document, and it binds the
// payload (by hash), the proof (by root) and the version. A check that needs a
// part that failed to parse is left out rather than reported as passing; the
// part's own check has failed already, so the report fails either way.
//
// # Trust
//
// The artifacts say which key signed them; that alone proves only that they
// are consistent. A verifier that trusts a key (one listed by the service's
// /v1/signing-keys, or pinned out of band) passes it in Expect, and so for
// every other value another source vouches for: each non-zero member of
// Expect must agree with the artifacts, and a disagreement fails the check it
// belongs to.
//
// # The artifact directory
//
// An artifact directory holds one version's artifacts as files (the File*
// constants): the four documents, the key document, and detached copies of
// the public key (PEM), the receipt hash and the signature in the raw forms
// openssl reads, so that a reader can check the signature without this
// package:
//
//	openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin -in receipt-hash.bin -sigfile signature.bin
//
// Artifacts.Files lays Artifacts out as such files and ReadDir reads them
// back; both are free of I/O of their own, as is the rest of the package.
package verify

// Package compiler turns a sealed snapshot of facts and a rule package into
// the three byte-exact artifacts of a passport version: the BPC-PASSPORT-1
// payload, the BPC-PROOF-1 derivation proof and the unsigned BPC-RECEIPT-1
// receipt, each with its hash.
//
// CompilePassport is pure: no I/O, no clock (issued_at is an input), no
// randomness and no dependence on map iteration order or on the order of the
// input facts, so the same input always yields the same bytes and a stored
// passport version can be replayed to reproduce its hashes. (Checked rule
// programs are memoised by source digest, see programs.go; a memo of an
// immutable value does not change any output.) The payload format
// and the trace-to-proof mapping are documented in FORMAT.md beside this file.
package compiler

import (
	"errors"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
)

// Output is the result of a successful compile: canonical bytes and hashes
// of payload, proof and unsigned receipt, the snapshot hash the compile was
// bound to, and the receipt's fields (for signing).
type Output struct {
	// Payload is the BPC-PASSPORT-1 canonical JSON.
	Payload []byte
	// PayloadHash is the lowercase hex SHA-256 of Payload.
	PayloadHash string
	// Proof is the BPC-PROOF-1 canonical JSON.
	Proof []byte
	// ProofRootHash is the proof's root_hash.
	ProofRootHash string
	// Receipt is the canonical BPC-RECEIPT-1 receipt without the signature key.
	Receipt []byte
	// ReceiptHash is the lowercase hex SHA-256 of Receipt (receipt_hash).
	ReceiptHash string
	// ReceiptHashRaw is the 32 raw bytes of ReceiptHash, the message the
	// Ed25519 signature is computed over.
	ReceiptHashRaw [32]byte
	// ReceiptFields is the receipt as a struct, Signature empty.
	ReceiptFields receipt.Receipt
	// SnapshotHash is the BPC-SNAPSHOT-1 hash of the input facts.
	SnapshotHash string
	// Compliance lists the emitCompliance results in evaluation order, as in the payload.
	Compliance []rules.ComplianceResult
}

// CompilePassport validates in, seals its facts into the snapshot hash,
// checks and evaluates the rules, and builds, hashes and size-checks the
// payload, the proof and the unsigned receipt, in that order.
//
// Errors are *errcode.Error values: VALIDATION_ERROR for bad input (naming
// the field, e.g. "facts[2].payload"); the rules' own errors unchanged
// (RULE_PARSE_ERROR, RULE_TYPE_ERROR, RULE_CYCLE_DETECTED, UNIT_MISMATCH,
// DIVISION_BY_ZERO, an assert's or requireSome's code, …, with field and
// position in Details); RULE_TYPE_ERROR for two field paths that collide in
// the payload; PAYLOAD_TOO_LARGE, PROOF_TOO_LARGE and RECEIPT_TOO_LARGE with
// Details {"size", "limit"}.
func CompilePassport(in Input) (Output, error) {
	limits, err := in.validate()
	if err != nil {
		return Output{}, err
	}
	snapshotHash, err := sealFacts(in.SnapshotID, in.Facts)
	if err != nil {
		return Output{}, err
	}
	dslSHA256 := hash.SHA256HexString(in.DSLSource)
	prog, err := programs.checked(dslSHA256, in.DSLSource, limits.Rules)
	if err != nil {
		return Output{}, err
	}
	res, err := prog.Evaluate(in.Facts)
	if err != nil {
		return Output{}, err
	}

	payload, err := buildPayload(in, snapshotHash, res)
	if err != nil {
		return Output{}, tooLarge(errcode.PayloadTooLarge, "payload", err, limits.PayloadMaxBytes)
	}
	if err := checkSize(errcode.PayloadTooLarge, "payload", payload, limits.PayloadMaxBytes); err != nil {
		return Output{}, err
	}

	proofRoot, proofBytes, err := buildProof(res)
	if err != nil {
		return Output{}, tooLarge(errcode.ProofTooLarge, "proof", err, limits.ProofMaxBytes)
	}
	if err := checkSize(errcode.ProofTooLarge, "proof", proofBytes, limits.ProofMaxBytes); err != nil {
		return Output{}, err
	}

	payloadHash := hash.SHA256Hex(payload)
	rcpt := receipt.Receipt{
		ReceiptVersion:       receipt.Version,
		IssuedAt:             receipt.FormatIssuedAt(in.IssuedAt),
		TenantID:             in.TenantID,
		PassportVersionID:    in.PassportVersionID,
		PassportID:           in.PassportID,
		BatteryProductID:     in.BatteryProductID,
		SnapshotID:           in.SnapshotID,
		SnapshotHash:         snapshotHash,
		RulePackageVersionID: in.RulePackageVersionID,
		DSLSHA256:            dslSHA256,
		TestsSHA256:          in.testsSHA256(),
		CompilerBuildID:      in.CompilerBuildID,
		PayloadHash:          payloadHash,
		ProofRootHash:        proofRoot,
		SignatureAlg:         receipt.SignatureAlg,
		SigningKeyID:         in.SigningKeyID,
	}
	receiptBytes, err := receipt.UnsignedCanonical(rcpt)
	if err != nil {
		return Output{}, err
	}
	if err := receipt.CheckSize(receiptBytes, limits.ReceiptMaxBytes); err != nil {
		return Output{}, err
	}
	receiptHash, receiptRaw, err := receipt.Hash(rcpt)
	if err != nil {
		return Output{}, err
	}

	return Output{
		Payload:        payload,
		PayloadHash:    payloadHash,
		Proof:          proofBytes,
		ProofRootHash:  proofRoot,
		Receipt:        receiptBytes,
		ReceiptHash:    receiptHash,
		ReceiptHashRaw: receiptRaw,
		ReceiptFields:  rcpt,
		SnapshotHash:   snapshotHash,
		Compliance:     res.Compliance,
	}, nil
}

// tooLarge turns an encoding that stopped at rules.MaxEncodedBytes (values
// that repeat a large part many times write far more than they hold) into
// code with Details {"size", "limit"}, size being a lower bound; any other
// error is returned as it is.
func tooLarge(code errcode.Code, what string, err error, limit int) error {
	if !errors.Is(err, rules.ErrEncodingTooLarge) {
		return err
	}
	e := errcode.Wrap(code, err, "%s is more than %d bytes, limit is %d", what, rules.MaxEncodedBytes, limit)
	e.Details = map[string]any{"size": rules.MaxEncodedBytes, "limit": limit}
	return e
}

// checkSize returns code with Details {"size", "limit"} when b is longer than limit.
func checkSize(code errcode.Code, what string, b []byte, limit int) error {
	if len(b) <= limit {
		return nil
	}
	e := errcode.New(code, "%s is %d bytes, limit is %d", what, len(b), limit)
	e.Details = map[string]any{"size": len(b), "limit": limit}
	return e
}

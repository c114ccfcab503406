package verify_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/core/verify"
)

// Verify a passport version made the way the pipeline makes it (compiled,
// signed, its QR payload written), then the same version with one byte of
// its payload changed.
func Example() {
	const versionID = "0b7e4c2a-9d1f-4a3b-8c5d-6e7f8a9b0c1d"
	out, err := compiler.CompilePassport(compiler.Input{
		TenantID:             "00000000-0000-0000-0000-00000000de00",
		PassportVersionID:    versionID,
		PassportID:           "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
		BatteryProductID:     "a1b2c3d4-e5f6-4789-8abc-def012345678",
		SnapshotID:           "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		Facts:                []rules.Fact{{FactType: "battery", FactKey: "general", Payload: []byte(`{"chemistry":"NMC811"}`)}},
		RulePackageVersionID: "d4c3b2a1-0f9e-4d8c-b7a6-958473625140",
		DSLSource: `field general.chemistry : Text =
			toText(requireSome(recordGet(requireSome(getFact("battery", "general"), "NO_BATTERY", "no battery fact"),
				"chemistry"), "NO_CHEMISTRY", "no chemistry"));`,
		CompilerBuildID: "example",
		SigningKeyID:    "key-1",
		IssuedAt:        time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	r := out.ReceiptFields
	r.Signature = sign.SignatureBase64(sign.SignHash(priv, out.ReceiptHashRaw))
	signed, _ := receipt.SignedCanonical(r)
	qrPayload, _ := qr.Payload(versionID, out.PayloadHash, out.ProofRootHash, out.ReceiptHash)

	a := verify.Artifacts{
		Payload:    out.Payload,
		Proof:      out.Proof,
		Receipt:    signed,
		QRPayload:  qrPayload,
		SigningKey: verify.KeyDocument("key-1", pub),
	}
	// The verifier trusts this key (say, from the service's key list).
	trusted := verify.Expect{PublicKey: pub}
	rep, err := verify.Verify(a, trusted)
	for _, c := range rep.Checks {
		fmt.Println(c.OK, c.Name)
	}
	fmt.Println("verified:", err == nil)

	a.Payload = bytes.Replace(a.Payload, []byte("NMC811"), []byte("NMC812"), 1)
	rep, _ = verify.Verify(a, trusted)
	for _, c := range rep.Failed() {
		fmt.Println("failed:", c.Name)
	}
	// Output:
	// true qr payload
	// true receipt
	// true proof
	// true pv = version
	// true ph = sha256(payload)
	// true pr = proof root
	// true rh = receipt hash
	// true signing key
	// true signature
	// verified: true
	// failed: ph = sha256(payload)
}

package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

const (
	testVersionID = "0b7e4c2a-9d1f-4a3b-8c5d-6e7f8a9b0c1d"
	otherVersion  = "66666666-6666-4666-8666-666666666666"
	testKeyID     = "test-key-1"
)

// testKey returns the Ed25519 key of a fixed seed byte, so that the artifacts
// are the same on every run.
func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

// sample is a passport version compiled and signed the way the pipeline does
// it, kept in parts so that tests can tamper with one and re-sign.
type sample struct {
	out    compiler.Output
	signed receipt.Receipt // the receipt with its signature
	a      Artifacts
	want   Expect
}

// compileSample compiles the NMC811 sample for versionID, signs the receipt
// with signer under testKeyID and renders the QR code; the key document holds
// pub (the signer's own key unless a test says otherwise).
func compileSample(t testing.TB, versionID string, facts []rules.Fact, signer ed25519.PrivateKey, pub ed25519.PublicKey) sample {
	t.Helper()
	out, err := compiler.CompilePassport(compiler.Input{
		TenantID:             "00000000-0000-0000-0000-00000000de00",
		PassportVersionID:    versionID,
		PassportID:           "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
		BatteryProductID:     "a1b2c3d4-e5f6-4789-8abc-def012345678",
		SnapshotID:           "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		Facts:                facts,
		RulePackageVersionID: "d4c3b2a1-0f9e-4d8c-b7a6-958473625140",
		DSLSource:            nmc811.Rules(),
		TestsSource:          nmc811.Tests(),
		CompilerBuildID:      "bpc-verify-test",
		SigningKeyID:         testKeyID,
		IssuedAt:             time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
	})
	require.NoError(t, err)
	s := sample{out: out, signed: out.ReceiptFields}
	s.signed.Signature = sign.SignatureBase64(sign.SignHash(signer, out.ReceiptHashRaw))
	receiptBytes, err := receipt.SignedCanonical(s.signed)
	require.NoError(t, err)
	qrPayload, err := qr.Payload(versionID, out.PayloadHash, out.ProofRootHash, out.ReceiptHash)
	require.NoError(t, err)
	png, err := qr.PNG(qrPayload)
	require.NoError(t, err)
	s.a = Artifacts{
		Payload:    out.Payload,
		Proof:      out.Proof,
		Receipt:    receiptBytes,
		QRPayload:  qrPayload,
		QRPNG:      png,
		SigningKey: KeyDocument(testKeyID, pub),
	}
	require.NoError(t, s.a.Detach())
	s.want = Expect{
		PassportVersionID: versionID,
		PayloadHash:       out.PayloadHash,
		ProofRootHash:     out.ProofRootHash,
		ReceiptHash:       out.ReceiptHash,
		Signature:         s.signed.Signature,
		SigningKeyID:      testKeyID,
		PublicKey:         pub,
		From:              "the API",
	}
	return s
}

func sampleFacts(t testing.TB) []rules.Fact {
	t.Helper()
	facts, err := nmc811.Facts()
	require.NoError(t, err)
	return facts
}

func newSample(t testing.TB) sample {
	t.Helper()
	priv := testKey(1)
	return compileSample(t, testVersionID, sampleFacts(t), priv, priv.Public().(ed25519.PublicKey))
}

func names(checks []Check) []string {
	out := make([]string, 0, len(checks))
	for _, c := range checks {
		out = append(out, c.Name)
	}
	return out
}

var allChecks = []string{CheckQRPayload, CheckReceipt, CheckProof, CheckVersion, CheckPayloadHash,
	CheckProofRoot, CheckReceiptHash, CheckSigningKey, CheckSignature, CheckQRPNG}

func TestVerifyPassesOnCompiledArtifacts(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	rep, err := Verify(s.a, s.want)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Empty(t, rep.Failed())
	require.Equal(t, allChecks, names(rep.Checks))
	for _, name := range allChecks {
		require.True(t, rep.Passed(name), name)
	}
	require.Equal(t, Check{Name: CheckPayloadHash, OK: true, Detail: s.out.PayloadHash}, rep.Checks[4])
	require.Equal(t, "test-key-1, Ed25519, public-key.pem = signing-key.json", rep.Checks[7].Detail)

	// A third party with nothing but the artifacts.
	_, err = Verify(s.a, Expect{})
	require.NoError(t, err)

	// An export's view: no image, no detached copies; nothing to say about
	// the image, and the rest passes.
	bare := s.a
	bare.QRPNG, bare.PublicKeyPEM, bare.ReceiptHash, bare.Signature = nil, nil, nil, nil
	rep, err = Verify(bare, s.want)
	require.NoError(t, err)
	require.Equal(t, allChecks[:len(allChecks)-1], names(rep.Checks))
	require.False(t, rep.Passed(CheckQRPNG), "a check that did not run did not pass")
	require.Equal(t, "test-key-1, Ed25519", rep.Checks[7].Detail)

	// An image rendered before the PNG encoding changed (go-qrcode's own
	// encoding, at deflate level 9) still verifies: the same image, other
	// bytes.
	code, err := qrcode.NewWithForcedVersion(s.a.QRPayload, qr.Version, qrcode.Medium)
	require.NoError(t, err)
	earlier := s.a
	earlier.QRPNG, err = code.PNG(qr.ImageSize)
	require.NoError(t, err)
	require.NotEqual(t, s.a.QRPNG, earlier.QRPNG)
	rep, err = Verify(earlier, s.want)
	require.NoError(t, err)
	require.True(t, rep.Passed(CheckQRPNG), "%+v", rep.Failed())
}

// resign re-encodes r signed by priv, and the QR payload and detached copies
// that go with it, as a forger holding a key would.
func (s sample) resign(t *testing.T, r receipt.Receipt, priv ed25519.PrivateKey) Artifacts {
	t.Helper()
	rh, raw, err := receipt.Hash(r)
	require.NoError(t, err)
	r.Signature = sign.SignatureBase64(sign.SignHash(priv, raw))
	a := s.a
	a.Receipt, err = receipt.SignedCanonical(r)
	require.NoError(t, err)
	a.QRPayload, err = qr.Payload(r.PassportVersionID, r.PayloadHash, r.ProofRootHash, rh)
	require.NoError(t, err)
	a.QRPNG, err = qr.PNG(a.QRPayload)
	require.NoError(t, err)
	require.NoError(t, a.Detach())
	return a
}

// Each kind of tampering fails exactly the checks it should, by name.
func TestVerifyNamesWhatWasTamperedWith(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	otherKey := testKey(2)
	otherPub := otherKey.Public().(ed25519.PublicKey)

	// Another compile: the same version and rules over facts where one
	// digit of one fact differs.
	facts := sampleFacts(t)
	changed := false
	for i, f := range facts {
		var b []byte
		b, changed = changeADigit(f.Payload)
		if changed {
			facts[i].Payload = b
			break
		}
	}
	require.True(t, changed)
	other := compileSample(t, testVersionID, facts, testKey(1), s.want.PublicKey)
	require.NotEqual(t, s.out.PayloadHash, other.out.PayloadHash)
	require.NotEqual(t, s.out.ProofRootHash, other.out.ProofRootHash)

	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0x01
		return b
	}
	receiptWith := func(edit func(r *receipt.Receipt)) []byte {
		r := s.signed
		edit(&r)
		b, err := receipt.SignedCanonical(r)
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name   string
		tamper func(a *Artifacts, want *Expect)
		failed []string
	}{
		{"one byte of the payload", func(a *Artifacts, _ *Expect) { a.Payload = flip(a.Payload, len(a.Payload)/2) },
			[]string{CheckPayloadHash}},
		{"the payload of another compile", func(a *Artifacts, _ *Expect) { a.Payload = other.a.Payload },
			[]string{CheckPayloadHash}},
		{"a proof node's hash", func(a *Artifacts, _ *Expect) {
			i := bytes.Index(a.Proof, []byte(`"hash":"`)) + len(`"hash":"`)
			a.Proof = bytes.Clone(a.Proof)
			a.Proof[i] = otherHexDigit(a.Proof[i])
		}, []string{CheckProof}},
		{"a proof node's data", func(a *Artifacts, _ *Expect) {
			a.Proof = bytes.Replace(a.Proof, []byte(`"found":true`), []byte(`"found":false`), 1)
		}, []string{CheckProof}},
		{"the proof of another compile, valid in itself", func(a *Artifacts, _ *Expect) { a.Proof = other.a.Proof },
			[]string{CheckProofRoot}},
		{"a proof built from other steps", func(a *Artifacts, _ *Expect) {
			_, b, err := proof.Build([]proof.Field{{Path: "general.sku", Root: &proof.Step{Type: proof.Const, Data: "EVB"}}})
			require.NoError(t, err)
			a.Proof = b
		}, []string{CheckProofRoot}},
		{"a receipt field, signature kept", func(a *Artifacts, _ *Expect) {
			a.Receipt = receiptWith(func(r *receipt.Receipt) { r.IssuedAt = "2026-11-22T10:00:01Z" })
		}, []string{CheckReceiptHash, CheckSignature}},
		{"the receipt's payload_hash, signature kept", func(a *Artifacts, _ *Expect) {
			a.Receipt = receiptWith(func(r *receipt.Receipt) { r.PayloadHash = other.out.PayloadHash })
		}, []string{CheckPayloadHash, CheckReceiptHash, CheckSignature}},
		{"the receipt without its signature", func(a *Artifacts, _ *Expect) { a.Receipt = s.out.Receipt },
			[]string{CheckReceipt}},
		{"the first byte of the receipt", func(a *Artifacts, _ *Expect) { a.Receipt = flip(a.Receipt, 0) },
			[]string{CheckReceipt}},
		// The verifier below trusts nothing but the artifacts.
		{"a receipt field, re-signed by another key", func(a *Artifacts, want *Expect) {
			r := s.signed
			r.IssuedAt = "2026-11-23T00:00:00Z"
			*a, *want = s.resign(t, r, otherKey), Expect{}
		}, []string{CheckSignature}},
		{"the signing key, everything else consistent", func(a *Artifacts, want *Expect) {
			a.SigningKey = KeyDocument(testKeyID, otherPub)
			require.NoError(t, a.Detach())
			*want = Expect{}
		}, []string{CheckSignature}},
		// A forger with a key of their own makes everything consistent: only
		// a key the verifier trusts tells.
		{"another payload, signed by a forger with the forger's key", func(a *Artifacts, want *Expect) {
			*a, *want = s.forge(t, other.a.Payload, otherKey), Expect{PublicKey: s.want.PublicKey}
		}, []string{CheckSigningKey}},
		{"a key document naming another key id", func(a *Artifacts, _ *Expect) {
			a.SigningKey = KeyDocument("another-key", s.want.PublicKey)
		}, []string{CheckSigningKey}},
		{"public-key.pem holding another key", func(a *Artifacts, _ *Expect) {
			a.PublicKeyPEM, _ = publicKeyPEM(otherPub)
		}, []string{CheckSigningKey}},
		{"signature.bin, another valid signature", func(a *Artifacts, _ *Expect) {
			a.Signature = sign.SignHash(otherKey, s.out.ReceiptHashRaw)
		}, []string{CheckSignature}},
		{"receipt-hash.bin", func(a *Artifacts, _ *Expect) { a.ReceiptHash = flip(a.ReceiptHash, 0) },
			[]string{CheckReceiptHash}},
		{"the QR pointing at another version", func(a *Artifacts, _ *Expect) {
			var err error
			a.QRPayload, err = qr.Payload(otherVersion, s.out.PayloadHash, s.out.ProofRootHash, s.out.ReceiptHash)
			require.NoError(t, err)
			a.QRPNG, err = qr.PNG(a.QRPayload)
			require.NoError(t, err)
		}, []string{CheckVersion}},
		{"the QR of another compile", func(a *Artifacts, _ *Expect) {
			a.QRPayload, a.QRPNG = other.a.QRPayload, other.a.QRPNG
		}, []string{CheckPayloadHash, CheckProofRoot, CheckReceiptHash}},
		{"qr.png of another payload", func(a *Artifacts, _ *Expect) { a.QRPNG = other.a.QRPNG },
			[]string{CheckQRPNG}},
		{"a QR payload that is not BPC-QR-1", func(a *Artifacts, _ *Expect) {
			a.QRPayload = strings.ToLower(a.QRPayload)
		}, []string{CheckQRPayload}},
		{"the API's version id", func(_ *Artifacts, w *Expect) { w.PassportVersionID = otherVersion },
			[]string{CheckVersion}},
		{"the API's payload hash", func(_ *Artifacts, w *Expect) { w.PayloadHash = hash.SHA256Hex(nil) },
			[]string{CheckPayloadHash}},
		{"the API's proof root", func(_ *Artifacts, w *Expect) { w.ProofRootHash = hash.SHA256Hex(nil) },
			[]string{CheckProofRoot}},
		{"the API's receipt hash", func(_ *Artifacts, w *Expect) { w.ReceiptHash = hash.SHA256Hex(nil) },
			[]string{CheckReceiptHash}},
		{"the API's signature", func(_ *Artifacts, w *Expect) {
			w.Signature = sign.SignatureBase64(sign.SignHash(otherKey, s.out.ReceiptHashRaw))
		}, []string{CheckSignature}},
		{"the API's key id", func(_ *Artifacts, w *Expect) { w.SigningKeyID = "another-key" },
			[]string{CheckSigningKey}},
		{"the trusted public key", func(_ *Artifacts, w *Expect) { w.PublicKey = otherPub },
			[]string{CheckSigningKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, want := s.a, s.want
			tc.tamper(&a, &want)
			rep, err := Verify(a, want)
			require.Error(t, err)
			require.False(t, rep.OK())
			require.Equal(t, tc.failed, names(rep.Failed()), "%+v", rep.Failed())
			for _, c := range rep.Failed() {
				require.Contains(t, err.Error(), c.Name+": "+c.Detail)
			}
		})
	}
}

// changeADigit changes the first digit of a canonical JSON document whose
// change keeps it canonical (a leading digit could become a leading zero).
func changeADigit(doc []byte) ([]byte, bool) {
	for i, c := range doc {
		if c < '0' || c > '9' {
			continue
		}
		b := bytes.Clone(doc)
		b[i] = '0' + (c-'0'+1)%10
		if canonjson.Valid(b) {
			return b, true
		}
	}
	return nil, false
}

// otherHexDigit returns a lowercase hex digit other than c.
func otherHexDigit(c byte) byte {
	if c == 'a' {
		return 'b'
	}
	return 'a'
}

// forge returns artifacts for payload whose receipt (the sample's, with the
// payload's hash) is signed by priv, and whose key document is priv's under
// the sample's key id: consistent in every part.
func (s sample) forge(t *testing.T, payload []byte, priv ed25519.PrivateKey) Artifacts {
	t.Helper()
	r := s.signed
	r.PayloadHash = hash.SHA256Hex(payload)
	a := s.resign(t, r, priv)
	a.Payload = payload
	a.SigningKey = KeyDocument(testKeyID, priv.Public().(ed25519.PublicKey))
	require.NoError(t, a.Detach())
	return a
}

// Without a key to trust, Verify proves the artifacts consistent, no more.
func TestVerifyWithoutATrustedKeyProvesConsistencyOnly(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	forged := s.forge(t, []byte(`{"forged":true}`), testKey(2))
	_, err := Verify(forged, Expect{})
	require.NoError(t, err)
	rep, err := Verify(forged, Expect{PublicKey: s.want.PublicKey})
	require.Error(t, err)
	require.Equal(t, []string{CheckSigningKey}, names(rep.Failed()))
	rep, err = Verify(forged, Expect{PayloadHash: s.out.PayloadHash})
	require.Error(t, err)
	require.Equal(t, []string{CheckPayloadHash}, names(rep.Failed()))
}

func TestVerifyReportsDetails(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	want := s.want
	want.PayloadHash = hash.SHA256Hex(nil)
	rep, err := Verify(s.a, want)
	require.EqualError(t, err, "verification failed: ph = sha256(payload): "+s.out.PayloadHash+
		", but the API says "+want.PayloadHash)
	require.False(t, rep.Passed(CheckPayloadHash))

	want.From = ""
	_, err = Verify(s.a, want)
	require.ErrorContains(t, err, "but the expectation says")

	a := s.a
	a.SigningKey = KeyDocument(testKeyID, testKey(2).Public().(ed25519.PublicKey))
	require.NoError(t, a.Detach())
	_, err = Verify(a, Expect{})
	require.EqualError(t, err, "verification failed: signature: Ed25519 signature does NOT verify over the receipt hash")

	require.EqualError(t, Report{}.Err(), "verification failed: nothing was checked")
}

// Every byte of every file matters: a flip anywhere fails verification.
func TestVerifyFailsOnAFlippedByteInEachFile(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	files := s.a.Files()
	require.Len(t, files, 9)
	for _, f := range files {
		positions := map[string]int{"first": 0, "middle": len(f.Data) / 2, "last": len(f.Data) - 1}
		if f.Name == FilePublicKeyPEM {
			// The final newline is not part of the PEM block.
			positions["last"] = len(f.Data) - 2
		}
		for at, i := range positions {
			t.Run(f.Name+"/"+at, func(t *testing.T) {
				fsys := fstest.MapFS{}
				for _, g := range files {
					data := g.Data
					if g.Name == f.Name {
						data = bytes.Clone(data)
						data[i] ^= 0x01
					}
					fsys[g.Name] = &fstest.MapFile{Data: data}
				}
				a, err := ReadDir(fsys)
				require.NoError(t, err)
				rep, err := Verify(a, Expect{})
				require.Error(t, err, "byte %d of %s flipped", i, f.Name)
				require.NotEmpty(t, rep.Failed())
			})
		}
	}
}

func TestReadDir(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	fsys := fstest.MapFS{}
	for _, f := range s.a.Files() {
		fsys[f.Name] = &fstest.MapFile{Data: f.Data}
	}
	a, err := ReadDir(fsys)
	require.NoError(t, err)
	require.Equal(t, s.a, a)

	// The image and the detached copies may be missing; a missing one is
	// not checked, an empty one fails.
	for _, name := range []string{FileQRPNG, FilePublicKeyPEM, FileReceiptHash, FileSignature} {
		t.Run(name, func(t *testing.T) {
			without := fstest.MapFS{}
			for k, v := range fsys {
				if k != name {
					without[k] = v
				}
			}
			a, err := ReadDir(without)
			require.NoError(t, err)
			_, err = Verify(a, s.want)
			require.NoError(t, err)

			without[name] = &fstest.MapFile{}
			a, err = ReadDir(without)
			require.NoError(t, err)
			rep, err := Verify(a, s.want)
			require.Error(t, err)
			require.Len(t, rep.Failed(), 1)
		})
	}
	for _, name := range []string{FileQRPayload, FilePayload, FileProof, FileReceipt, FileSigningKey} {
		without := fstest.MapFS{}
		for k, v := range fsys {
			if k != name {
				without[k] = v
			}
		}
		_, err := ReadDir(without)
		require.ErrorContains(t, err, name)
	}
	_, err = ReadDir(fstest.MapFS{})
	require.Error(t, err, "an empty directory has no artifacts")
}

func TestVerifyNeverPanicsOnGarbage(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	truncated := s.a
	truncated.Signature = truncated.Signature[:10]
	truncated.ReceiptHash = []byte{}
	inputs := []Artifacts{
		{},
		{QRPayload: "BPC1|garbage", Receipt: []byte("{"), Proof: []byte("[]"), Payload: []byte("null"),
			SigningKey:   []byte(`{"key_id":"k","public_key_base64":"AAAA"}`),
			PublicKeyPEM: []byte("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"),
			QRPNG:        []byte("\x89PNG"), ReceiptHash: []byte{1}, Signature: []byte{2}},
		{Receipt: s.a.Receipt, Proof: []byte(`{"proof_version":"BPC-PROOF-1","root_hash":"","nodes":[],"field_index":{}}`)},
		truncated,
	}
	for i, a := range inputs {
		rep, err := Verify(a, s.want)
		require.Error(t, err, "input %d", i)
		require.NotEmpty(t, rep.Failed(), "input %d", i)
	}
}

func TestKeyDocument(t *testing.T) {
	t.Parallel()
	pub := testKey(1).Public().(ed25519.PublicKey)
	b64 := base64.StdEncoding.EncodeToString(pub)
	doc := KeyDocument("k1", pub)
	require.Equal(t, "{\n  \"key_id\": \"k1\",\n  \"public_key_base64\": \""+b64+"\"\n}\n", string(doc))
	k, err := ParseKeyDocument(doc)
	require.NoError(t, err)
	require.Equal(t, Key{KeyID: "k1", PublicKey: pub}, k)

	// An item of the service's key list, or an export's signing_key.
	k, err = ParseKeyDocument([]byte(`{"alg":"ED25519","key_id":"k1","public_key_base64":"` + b64 + `"}`))
	require.NoError(t, err)
	require.Equal(t, "k1", k.KeyID)

	for doc, want := range map[string]string{
		`{"alg":"RSA","key_id":"k1","public_key_base64":"` + b64 + `"}`:             `alg is "RSA"`,
		`{"key_id":"k1","public_key_base64":"` + b64 + `","created_at":"x"}`:        `unknown field "created_at"`,
		`{"public_key_base64":"` + b64 + `"}`:                                       "no key_id",
		`{"key_id":"k1","public_key_base64":"` + strings.TrimRight(b64, "=") + `"}`: "not standard base64",
		`{"key_id":"k1","public_key_base64":"AAAA"}`:                                "not standard base64",
		`{"key_id":"k1","public_key_base64":"` + b64 + `"} {}`:                      "follows",
		`[]`: "cannot unmarshal",
		``:   "EOF",
	} {
		_, err := ParseKeyDocument([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
}

func TestDetach(t *testing.T) {
	t.Parallel()
	s := newSample(t)
	a := s.a
	a.PublicKeyPEM, a.ReceiptHash, a.Signature = nil, nil, nil
	require.NoError(t, a.Detach())
	require.Equal(t, s.out.ReceiptHashRaw[:], a.ReceiptHash)
	require.True(t, ed25519.Verify(s.want.PublicKey, a.ReceiptHash, a.Signature))

	a.Receipt = s.out.Receipt
	require.ErrorContains(t, a.Detach(), "not signed")
	a.Receipt = s.a.Receipt[:10]
	require.ErrorContains(t, a.Detach(), "not a valid BPC-RECEIPT-1")
	a.Receipt, a.SigningKey = s.a.Receipt, []byte("{}")
	require.ErrorContains(t, a.Detach(), "key document")
}

// The detached copies let a third party check the signature with openssl
// alone, as the package comment shows.
func TestDetachedCopiesVerifyWithOpenSSL(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	s := newSample(t)
	dir := t.TempDir()
	for _, f := range s.a.Files() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644))
	}
	verify := func() ([]byte, error) {
		cmd := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", FilePublicKeyPEM,
			"-rawin", "-in", FileReceiptHash, "-sigfile", FileSignature)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	out, err := verify()
	if err != nil && bytes.Contains(out, []byte("rawin")) {
		t.Skipf("openssl without -rawin (needs 3.x): %s", out)
	}
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Signature Verified Successfully")

	sig := bytes.Clone(s.a.Signature)
	sig[0] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileSignature), sig, 0o644))
	out, err = verify()
	require.Error(t, err, "%s", out)
}

func TestCheckLineAndFailedNames(t *testing.T) {
	r := Report{Checks: []Check{{Name: CheckProof, OK: true, Detail: "12 nodes"}, {Name: CheckSignature, Detail: "does not verify"}}}
	require.Equal(t, "ok   proof                  12 nodes", r.Checks[0].String())
	require.Equal(t, "FAIL signature              does not verify", r.Checks[1].String())
	require.Equal(t, []string{CheckSignature}, r.FailedNames())
	require.Nil(t, Report{Checks: r.Checks[:1]}.FailedNames())
}

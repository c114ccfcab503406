package sign_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
)

// RFC 8032 §7.1, TEST 1: the empty message.
const (
	rfcSeedHex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	rfcPubHex  = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	rfcSigHex  = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func rfcKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	priv, err := sign.ParsePrivateKey(base64.StdEncoding.EncodeToString(mustHex(t, rfcSeedHex)))
	require.NoError(t, err)
	return priv
}

func TestRFC8032Vector1(t *testing.T) {
	t.Parallel()
	priv := rfcKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	require.Equal(t, rfcPubHex, hex.EncodeToString(pub))
	// Signing the empty message checks the wiring of seed → key → signature.
	require.Equal(t, rfcSigHex, hex.EncodeToString(ed25519.Sign(priv, nil)))
	require.True(t, ed25519.Verify(pub, nil, mustHex(t, rfcSigHex)))
}

func TestSignHashVerify(t *testing.T) {
	t.Parallel()
	priv := rfcKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	digest := sha256.Sum256([]byte(`{"a":1,"b":2}`))

	sig := sign.SignHash(priv, digest)
	require.Len(t, sig, ed25519.SignatureSize)
	require.NoError(t, sign.Verify(pub, digest, sig))
	require.Equal(t, sig, sign.SignHash(priv, digest), "Ed25519 signatures are deterministic")

	// The message is the 32 raw bytes, not the 64-character hex spelling.
	require.True(t, ed25519.Verify(pub, digest[:], sig))
	require.False(t, ed25519.Verify(pub, []byte(hex.EncodeToString(digest[:])), sig))
}

func TestVerifyRejectsTampering(t *testing.T) {
	t.Parallel()
	priv := rfcKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	digest := sha256.Sum256([]byte("receipt"))
	sig := sign.SignHash(priv, digest)
	otherPub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)

	tests := []struct {
		name   string
		pub    ed25519.PublicKey
		digest [32]byte
		sig    []byte
	}{
		{"hash first byte flipped", pub, flipHash(digest, 0), sig},
		{"hash last bit flipped", pub, flipHash(digest, 31), sig},
		{"signature first byte flipped", pub, digest, flipSig(sig, 0)},
		{"signature last byte flipped", pub, digest, flipSig(sig, 63)},
		{"signature truncated", pub, digest, sig[:63]},
		{"signature empty", pub, digest, nil},
		{"other public key", otherPub, digest, sig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := sign.Verify(tt.pub, tt.digest, tt.sig)
			require.Equal(t, errcode.SignatureInvalid, errcode.CodeOf(err))
			require.False(t, errcode.As(err).Retryable())
		})
	}

	err := sign.Verify(pub[:31], digest, sig)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err), "a malformed public key is an input error, not a panic")
}

func flipHash(h [32]byte, i int) [32]byte {
	h[i] ^= 0x01
	return h
}

func flipSig(sig []byte, i int) []byte {
	out := append([]byte(nil), sig...)
	out[i] ^= 0x80
	return out
}

func TestParsePrivateKeyEncodings(t *testing.T) {
	t.Parallel()
	want := rfcKey(t)
	seed := mustHex(t, rfcSeedHex)
	full := append(append([]byte(nil), seed...), mustHex(t, rfcPubHex)...)
	// 0xfb… bytes make base64 use '+' / '/' (or '-' / '_'), so the
	// alphabets are really exercised.
	tests := []struct {
		name string
		in   string
	}{
		{"seed std padded", base64.StdEncoding.EncodeToString(seed)},
		{"seed std raw", base64.RawStdEncoding.EncodeToString(seed)},
		{"seed url padded", base64.URLEncoding.EncodeToString(seed)},
		{"seed url raw", base64.RawURLEncoding.EncodeToString(seed)},
		{"seed with newline", base64.StdEncoding.EncodeToString(seed) + "\n"},
		{"private key std padded", base64.StdEncoding.EncodeToString(full)},
		{"private key std raw", base64.RawStdEncoding.EncodeToString(full)},
		{"private key url padded", base64.URLEncoding.EncodeToString(full)},
		{"private key url raw", base64.RawURLEncoding.EncodeToString(full)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sign.ParsePrivateKey(tt.in)
			require.NoError(t, err)
			require.Equal(t, want, got, "seed and 64-byte key parse to the same key")
		})
	}

	// A key whose base64 needs the non-shared characters of both alphabets.
	alphabetSeed := []byte(strings.Repeat("\xfb\xff\xbf", 10) + "\xfb\xff")
	std := base64.StdEncoding.EncodeToString(alphabetSeed)
	url := base64.URLEncoding.EncodeToString(alphabetSeed)
	require.NotEqual(t, std, url)
	fromStd, err := sign.ParsePrivateKey(std)
	require.NoError(t, err)
	fromURL, err := sign.ParsePrivateKey(url)
	require.NoError(t, err)
	require.Equal(t, ed25519.NewKeyFromSeed(alphabetSeed), fromStd)
	require.Equal(t, fromStd, fromURL)
}

func TestParsePrivateKeyErrors(t *testing.T) {
	t.Parallel()
	seed := mustHex(t, rfcSeedHex)
	mismatched := append(append([]byte(nil), seed...), make([]byte, 32)...)
	tests := []struct {
		name string
		in   string
		code errcode.Code
		msg  string
	}{
		{"empty", "", errcode.SigningKeyMissing, "no Ed25519 signing key"},
		{"blank", " \n\t", errcode.SigningKeyMissing, "no Ed25519 signing key"},
		{"not base64", "nZ2xnd79WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A!", errcode.Validation, "not valid base64"},
		{"mixed alphabets", "nZ2xnd79WmC6hEr0kuwsxER+xWl7MmkZcDusAxyuf2_=", errcode.Validation, "not valid base64"},
		{"hex instead of base64", rfcSeedHex, errcode.Validation, "decodes to 48 bytes, want 32 (seed) or 64 (private key)"},
		{"too short", base64.StdEncoding.EncodeToString(seed[:31]), errcode.Validation, "decodes to 31 bytes"},
		{"too long", base64.StdEncoding.EncodeToString(append(seed, 0)), errcode.Validation, "decodes to 33 bytes"},
		{"public half mismatch", base64.StdEncoding.EncodeToString(mismatched), errcode.Validation, "public half does not match its seed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sign.ParsePrivateKey(tt.in)
			require.Nil(t, got)
			e := errcode.As(err)
			require.NotNil(t, e)
			require.Equal(t, tt.code, e.Code)
			require.Contains(t, e.Error(), tt.msg)
			if tt.code == errcode.Validation {
				require.Equal(t, "signing_private_key", e.Field)
			}
			requireNoKeyMaterial(t, err, tt.in)
			if strings.Contains(tt.msg, "not valid base64") {
				var corrupt base64.CorruptInputError
				require.ErrorAs(t, err, &corrupt, "the base64 cause is kept")
			}
		})
	}
}

// requireNoKeyMaterial fails if the error text contains the input or any
// 8-character piece of it, or the hex of the RFC seed.
func requireNoKeyMaterial(t *testing.T, err error, in string) {
	t.Helper()
	msg := err.Error()
	in = strings.TrimSpace(in)
	for i := 0; i+8 <= len(in); i++ {
		require.NotContains(t, msg, in[i:i+8], "error leaks key material")
	}
	require.NotContains(t, msg, rfcSeedHex[:16])
}

func TestPublicKeyRoundTrip(t *testing.T) {
	t.Parallel()
	pub := rfcKey(t).Public().(ed25519.PublicKey)
	b64 := sign.PublicKeyBase64(pub)
	require.Equal(t, "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=", b64)
	got, err := sign.ParsePublicKey(b64)
	require.NoError(t, err)
	require.Equal(t, pub, got)
	got, err = sign.ParsePublicKey(base64.RawURLEncoding.EncodeToString(pub))
	require.NoError(t, err)
	require.Equal(t, pub, got)
}

func TestParsePublicKeyErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ in, msg string }{
		"empty":      {"", "must not be empty"},
		"bad base64": {"***", "not valid base64"},
		"wrong size": {base64.StdEncoding.EncodeToString(make([]byte, 31)), "decodes to 31 bytes, want 32"},
	} {
		got, err := sign.ParsePublicKey(tc.in)
		require.Nil(t, got, name)
		e := errcode.As(err)
		require.NotNil(t, e, name)
		require.Equal(t, errcode.Validation, e.Code, name)
		require.Equal(t, "public_key", e.Field, name)
		require.Contains(t, e.Error(), tc.msg, name)
	}
}

func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	sig := mustHex(t, rfcSigHex)
	b64 := sign.SignatureBase64(sig)
	require.Equal(t, base64.StdEncoding.EncodeToString(sig), b64)
	require.True(t, strings.HasSuffix(b64, "=="), "standard padded base64")
	got, err := sign.ParseSignature(b64)
	require.NoError(t, err)
	require.Equal(t, sig, got)

	for name, in := range map[string]string{
		"unpadded":   base64.RawStdEncoding.EncodeToString(sig),
		"wrong size": base64.StdEncoding.EncodeToString(sig[:63]),
		"empty":      "",
	} {
		got, err := sign.ParseSignature(in)
		require.Nil(t, got, name)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), name)
		require.Equal(t, "signature", errcode.As(err).Field, name)
	}
}

package hash

import (
	"encoding/base32"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	emptyHex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	abcHex   = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
)

func TestSHA256Hex(t *testing.T) {
	require.Equal(t, emptyHex, SHA256Hex(nil))
	require.Equal(t, emptyHex, SHA256Hex([]byte{}))
	require.Equal(t, abcHex, SHA256Hex([]byte("abc")))
	require.Equal(t, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777", SHA256Hex([]byte(`{"a":1,"b":2}`)))
}

func TestSHA256(t *testing.T) {
	sum := SHA256([]byte("abc"))
	require.Equal(t, abcHex, hex.EncodeToString(sum[:]))
	sum = SHA256(nil)
	require.Equal(t, emptyHex, hex.EncodeToString(sum[:]))
}

func TestBase32NoPad(t *testing.T) {
	// RFC 4648 §10 test vectors with the padding removed.
	vectors := map[string]string{
		"":       "",
		"f":      "MY",
		"fo":     "MZXQ",
		"foo":    "MZXW6",
		"foob":   "MZXW6YQ",
		"fooba":  "MZXW6YTB",
		"foobar": "MZXW6YTBOI",
	}
	for in, want := range vectors {
		require.Equal(t, want, Base32NoPad([]byte(in)), "input %q", in)
	}
}

func TestHexToBase32NoPad(t *testing.T) {
	got, err := HexToBase32NoPad(abcHex)
	require.NoError(t, err)
	require.Len(t, got, 52)
	require.NotContains(t, got, "=")
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(got)
	require.NoError(t, err)
	require.Equal(t, abcHex, hex.EncodeToString(raw))
	sum := SHA256([]byte("abc"))
	require.Equal(t, Base32NoPad(sum[:]), got)

	got, err = HexToBase32NoPad(emptyHex)
	require.NoError(t, err)
	require.Equal(t, "4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ", got)
}

func TestHexToBase32NoPadErrors(t *testing.T) {
	cases := map[string]struct{ in, msg string }{
		"empty":     {"", "length 0, want 64"},
		"short":     {abcHex[:62], "length 62, want 64"},
		"long":      {abcHex + "00", "length 66, want 64"},
		"odd":       {abcHex[:63], "length 63"},
		"non-hex":   {"zz" + abcHex[2:], "invalid byte: U+007A 'z'"},
		"uppercase": {strings.ToUpper(abcHex), "not lowercase hex"},
		"space":     {abcHex[:63] + " ", "invalid byte: U+0020"},
		"mixed":     {"BA" + abcHex[2:], "not lowercase hex"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := HexToBase32NoPad(tc.in)
			require.ErrorIs(t, err, ErrInvalidDigest)
			require.Contains(t, err.Error(), tc.msg)
			require.Empty(t, got)
		})
	}
}

func TestIsDigestHexAndIsUUID(t *testing.T) {
	t.Parallel()
	digest := SHA256Hex([]byte("abc"))
	require.True(t, IsDigestHex(digest))
	require.False(t, IsDigestHex(strings.ToUpper(digest)), "one spelling: lowercase")
	require.False(t, IsDigestHex(digest[:63]))
	require.False(t, IsDigestHex(digest[:63]+"g"))

	require.True(t, IsUUID("3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"))
	for _, bad := range []string{
		"3F2B8C4E-1D2A-4B7E-9C1F-2A3B4C5D6E7F",
		"3f2b8c4e1d2a4b7e9c1f2a3b4c5d6e7f",
		"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7",
		"3f2b8c4e-1d2a-4b7e-9c1f_2a3b4c5d6e7f",
		"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7g",
	} {
		require.False(t, IsUUID(bad), bad)
	}
}

func TestSHA256HexString(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 4095, 4096, 4097, 10000} {
		s := strings.Repeat("x", n)
		require.Equal(t, SHA256Hex([]byte(s)), SHA256HexString(s), n)
	}
}

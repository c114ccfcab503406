package passport_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func newSignerStore(t *testing.T) (context.Context, *store.Queries) {
	t.Helper()
	return t.Context(), store.New(testdb.New(t))
}

func registeredKeys(t *testing.T, ctx context.Context, st *store.Queries) map[string]string {
	t.Helper()
	keys, err := st.ListSigningKeys(ctx)
	require.NoError(t, err)
	out := map[string]string{}
	for _, k := range keys {
		require.Equal(t, "ED25519", k.Alg)
		out[k.KeyID] = k.PublicKeyBase64
	}
	return out
}

func TestNewSigner(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	s := passport.NewSigner("k-1", key)
	require.Equal(t, "k-1", s.KeyID)
	require.Equal(t, "env", s.Source)
	got, err := s.Key()
	require.NoError(t, err)
	require.Equal(t, key, got)
	require.Equal(t, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)), s.PublicKeyBase64())

	for name, keyless := range map[string]*passport.Signer{"nil": nil, "no key": {KeyID: "k-2"}} {
		_, err := keyless.Key()
		require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), name)
		require.Empty(t, keyless.PublicKeyBase64(), name)
	}
}

func TestLoadSignerFromEnv(t *testing.T) {
	t.Parallel()
	ctx, st := newSignerStore(t)
	key := newKey(t)
	seed := base64.StdEncoding.EncodeToString(key.Seed())

	s, err := passport.LoadSigner(ctx, st, "prod", "prod-key-1", seed)
	require.NoError(t, err)
	require.Equal(t, "env", s.Source)
	require.Equal(t, "prod-key-1", s.KeyID)
	got, err := s.Key()
	require.NoError(t, err)
	require.Equal(t, key, got)
	pub := sign.PublicKeyBase64(key.Public().(ed25519.PublicKey))
	require.Equal(t, pub, s.PublicKeyBase64())
	require.Equal(t, map[string]string{"prod-key-1": pub}, registeredKeys(t, ctx, st))

	// The same key again (a restart) is fine, also as a 64-byte private key.
	again, err := passport.LoadSigner(ctx, st, "prod", "prod-key-1", base64.StdEncoding.EncodeToString(key))
	require.NoError(t, err)
	require.Equal(t, pub, again.PublicKeyBase64())

	// Another key under the same id is refused: old receipts must verify.
	other := base64.StdEncoding.EncodeToString(newKey(t).Seed())
	_, err = passport.LoadSigner(ctx, st, "prod", "prod-key-1", other)
	require.Error(t, err)
	require.Equal(t, errcode.Conflict, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "BPC_SIGNING_KEY_ID")
	require.NotContains(t, err.Error(), other)
	require.Equal(t, map[string]string{"prod-key-1": pub}, registeredKeys(t, ctx, st), "the registered key is kept")

	// A new id for the new key is a rotation.
	rotated, err := passport.LoadSigner(ctx, st, "prod", "prod-key-2", other)
	require.NoError(t, err)
	require.Len(t, registeredKeys(t, ctx, st), 2)
	require.Equal(t, rotated.PublicKeyBase64(), registeredKeys(t, ctx, st)["prod-key-2"])

	// A dev start under an id registered from the environment has no seed
	// to reuse: it holds no legacy key (and never makes a new one).
	keyless, err := passport.LoadSigner(ctx, st, "dev", "prod-key-1", "")
	require.NoError(t, err)
	_, err = keyless.Key()
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err))
	require.Equal(t, pub, registeredKeys(t, ctx, st)["prod-key-1"], "the registered key is kept")
}

func TestLoadSignerRejectsBadKeysWithoutEchoingThem(t *testing.T) {
	t.Parallel()
	ctx, st := newSignerStore(t)
	for name, bad := range map[string]string{
		"not base64":   "secret-key-material!*not*base64",
		"wrong length": base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key")),
		"64 bytes, mismatched public half": base64.StdEncoding.EncodeToString(
			append(append([]byte{}, newKey(t).Seed()...), newKey(t).Public().(ed25519.PublicKey)...)),
	} {
		s, err := passport.LoadSigner(ctx, st, "prod", "bad-key", bad)
		require.Error(t, err, name)
		require.Nil(t, s, name)
		require.Contains(t, err.Error(), "BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64", name)
		require.NotContains(t, err.Error(), bad, name)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), name)
	}
	require.Empty(t, registeredKeys(t, ctx, st), "nothing is registered")
}

// TestLoadSignerDevKeepsAnExistingKeyAndGeneratesNone: dev no longer
// generates a platform key (tenants sign with their own); a dev key an
// earlier release generated into the database is still read, so that the
// versions compiled under it before the upgrade get signed and verify.
func TestLoadSignerDevKeepsAnExistingKeyAndGeneratesNone(t *testing.T) {
	t.Parallel()
	ctx, st := newSignerStore(t)

	none, err := passport.LoadSigner(ctx, st, "dev", "dev-key-1", "")
	require.NoError(t, err)
	require.Empty(t, none.Source)
	_, err = none.Key()
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err))
	require.Empty(t, registeredKeys(t, ctx, st), "no dev key is generated any more")

	// What an earlier release generated and kept.
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, "an earlier release's dev seed...")
	earlier := ed25519.NewKeyFromSeed(seed)
	_, err = st.StoreDevSigningKey(ctx, "dev-key-1", sign.PublicKeyBase64(earlier.Public().(ed25519.PublicKey)), base64.StdEncoding.EncodeToString(seed))
	require.NoError(t, err)

	kept, err := passport.LoadSigner(ctx, st, "dev", "dev-key-1", "")
	require.NoError(t, err)
	require.Equal(t, "dev-database", kept.Source)
	k, err := kept.Key()
	require.NoError(t, err)
	require.Equal(t, earlier, k)
	require.Equal(t, map[string]string{"dev-key-1": kept.PublicKeyBase64()}, registeredKeys(t, ctx, st))

	// A signature made before the restart verifies with the key after it.
	var digest [32]byte
	copy(digest[:], "0123456789abcdef0123456789abcdef")
	pub, err := sign.ParsePublicKey(kept.PublicKeyBase64())
	require.NoError(t, err)
	require.NoError(t, sign.Verify(pub, digest, sign.SignHash(earlier, digest)))
}

func TestLoadSignerWithoutKeyOutsideDev(t *testing.T) {
	t.Parallel()
	ctx, st := newSignerStore(t)
	for _, env := range []string{"prod", "test"} {
		s, err := passport.LoadSigner(ctx, st, env, "k-"+env, "")
		require.NoError(t, err, env)
		require.Equal(t, "k-"+env, s.KeyID)
		require.Empty(t, s.Source)
		_, err = s.Key()
		require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), env)
		require.Empty(t, s.PublicKeyBase64())
	}
	require.Empty(t, registeredKeys(t, ctx, st), "no key is generated outside dev")
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return key
}

package passport_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func newKeyring(t *testing.T, legacy *passport.Signer) *passport.Keyring {
	t.Helper()
	return fixture.Keyring(t, legacy)
}

func TestKeyringSealOpen(t *testing.T) {
	t.Parallel()
	k := newKeyring(t, nil)
	tenant := uuid.New()
	seed := bytes.Repeat([]byte{0x5a}, ed25519.SeedSize)

	sealed, err := k.Seal(tenant, "acme-k1", seed)
	require.NoError(t, err)
	require.Len(t, sealed, 12+ed25519.SeedSize+16, "nonce, ciphertext, tag")
	require.False(t, bytes.Contains(sealed, seed), "the seed is not stored in the clear")
	again, err := k.Seal(tenant, "acme-k1", seed)
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "a fresh nonce each time")

	priv, err := k.Open(tenant, "acme-k1", sealed)
	require.NoError(t, err)
	require.Equal(t, ed25519.NewKeyFromSeed(seed), priv)

	refused := map[string]func() (ed25519.PrivateKey, error){
		"another key id (moved row)": func() (ed25519.PrivateKey, error) { return k.Open(tenant, "acme-k2", sealed) },
		"another tenant (moved row)": func() (ed25519.PrivateKey, error) { return k.Open(uuid.New(), "acme-k1", sealed) },
		"a flipped ciphertext bit": func() (ed25519.PrivateKey, error) {
			b := bytes.Clone(sealed)
			b[14] ^= 1
			return k.Open(tenant, "acme-k1", b)
		},
		"a flipped nonce bit": func() (ed25519.PrivateKey, error) {
			b := bytes.Clone(sealed)
			b[0] ^= 1
			return k.Open(tenant, "acme-k1", b)
		},
		"truncated": func() (ed25519.PrivateKey, error) { return k.Open(tenant, "acme-k1", sealed[:20]) },
		"empty":     func() (ed25519.PrivateKey, error) { return k.Open(tenant, "acme-k1", nil) },
		"another key encryption key": func() (ed25519.PrivateKey, error) {
			other, err := passport.NewKeyring(bytes.Repeat([]byte{1}, 32), nil)
			require.NoError(t, err)
			return other.Open(tenant, "acme-k1", sealed)
		},
	}
	for name, open := range refused {
		priv, err := open()
		require.ErrorIs(t, err, passport.ErrKeyDecrypt, name)
		require.Nil(t, priv, name)
	}

	for _, n := range []int{0, 16, 31, 33, 64} {
		kek := bytes.Repeat([]byte{0xab}, n)
		_, err := passport.NewKeyring(kek, nil)
		require.ErrorContains(t, err, "BPC_KEY_ENCRYPTION_KEY", n)
		if n > 0 {
			require.NotContains(t, err.Error(), hex.EncodeToString(kek))
			require.NotContains(t, err.Error(), string(kek))
		}
	}
}

// activeKeyID runs ActiveSigningKeyID in its own transaction.
func (e env) activeKeyID(t *testing.T, k *passport.Keyring, tenantID uuid.UUID) string {
	t.Helper()
	var id string
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		var err error
		id, err = k.ActiveSigningKeyID(e.Ctx, tx, tenantID)
		return err
	}))
	return id
}

func (e env) tenantKeys(t *testing.T, tenantID uuid.UUID) map[string]bpctype.SigningKey {
	t.Helper()
	keys, err := e.Store.ListTenantSigningKeys(e.Ctx, tenantID)
	require.NoError(t, err)
	out := map[string]bpctype.SigningKey{}
	for _, k := range keys {
		if k.TenantID != nil {
			require.Equal(t, tenantID, *k.TenantID)
			out[k.KeyID] = k
		}
	}
	return out
}

func (e env) tenantEvents(t *testing.T, tenantID uuid.UUID, eventType string) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM events WHERE tenant_id = $1 AND event_type = $2`, tenantID, eventType)
}

func TestActiveSigningKeyCreatedOnFirstNeedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := newKeyring(t, nil)

	// Two racing creators (two compiles of a tenant without a key) end
	// with one key, created once.
	const racers = 8
	ids := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = e.activeKeyID(t, k, store.DevTenantID)
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, "dev-k1", id, "the dev tenant's first key, never the legacy dev-key-1")
	}
	keys := e.tenantKeys(t, store.DevTenantID)
	require.Len(t, keys, 1)
	require.Equal(t, bpctype.KeyActive, keys["dev-k1"].Status)
	require.Equal(t, "ED25519", keys["dev-k1"].Alg)
	require.Equal(t, 1, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyCreated))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM signing_keys WHERE tenant_id = $1 AND status = 'active'`, store.DevTenantID))

	// The private key is stored encrypted and opens to the public key listed.
	row, err := e.Store.GetSigningKey(e.Ctx, "dev-k1")
	require.NoError(t, err)
	priv, err := k.Open(store.DevTenantID, "dev-k1", row.PrivateKeyEncrypted)
	require.NoError(t, err)
	require.Equal(t, row.PublicKeyBase64, sign.PublicKeyBase64(priv.Public().(ed25519.PublicKey)))
	var payload string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT convert_from(payload, 'UTF8') FROM events WHERE event_type = $1`, passport.EventSigningKeyCreated).Scan(&payload))
	require.Contains(t, payload, row.PublicKeyBase64)
	require.NotContains(t, payload, sign.PublicKeyBase64(ed25519.PublicKey(priv.Seed())), "no private material in the event")

	// Another tenant whose natural first id a legacy key took gets the next.
	other := e.OtherTenant(t)
	tn, err := e.Store.GetTenant(e.Ctx, other)
	require.NoError(t, err)
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, tn.Slug+"-k1", sign.PublicKeyBase64(newKey(t).Public().(ed25519.PublicKey))))
	require.Equal(t, tn.Slug+"-k2", e.activeKeyID(t, k, other))
	require.Equal(t, "dev-k1", e.activeKeyID(t, k, store.DevTenantID), "each tenant its own key")

	// Without a key encryption key nothing is created, and nothing panics.
	var none *passport.Keyring
	err = e.run(t, func(tx passport.Tx) error {
		_, err := none.ActiveSigningKeyID(e.Ctx, tx, e.OtherTenant(t))
		return err
	})
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), "%v", err)
}

// compileFor compiles the sample into a COMPILING version whose receipt
// names keyID.
func (e env) compileFor(t *testing.T, s sample, keyID string) uuid.UUID {
	t.Helper()
	req := s.request()
	req.SigningKeyID = keyID
	in, err := passport.LoadCompileInput(e.Ctx, e.Store, req)
	require.NoError(t, err)
	out, err := compiler.CompilePassport(in)
	require.NoError(t, err)
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		_, err := passport.RecordCompiled(e.Ctx, tx, passport.Compiled{Request: req, Output: out}, rand.Int64())
		return err
	}))
	return req.PassportVersionID
}

func (e env) signWith(k *passport.Keyring, tenantID, id uuid.UUID) error {
	return passport.InTx(e.Ctx, e.Store, e.River, "test", func(tx passport.Tx) error {
		return passport.SignPassportVersion(e.Ctx, tx, k, tenantID, id)
	})
}

// requireSignedBy checks that the version is SIGNED by keyID, and that its
// signature verifies with keyID's registered public key.
func (e env) requireSignedBy(t *testing.T, id uuid.UUID, keyID string) {
	t.Helper()
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, bpctype.PassportSigned, v.Status)
	require.Equal(t, keyID, v.SigningKeyID)
	row, err := e.Store.GetSigningKey(e.Ctx, keyID)
	require.NoError(t, err)
	require.Equal(t, row.PublicKeyBase64, *v.SigningPublicKey)
	art, err := e.Store.LoadPassportArtifacts(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	r, err := receipt.Parse(art.Receipt)
	require.NoError(t, err)
	_, raw, err := receipt.Hash(r)
	require.NoError(t, err)
	pub, err := sign.ParsePublicKey(row.PublicKeyBase64)
	require.NoError(t, err)
	sig, err := sign.ParseSignature(*v.Signature)
	require.NoError(t, err)
	require.NoError(t, sign.Verify(pub, raw, sig))
}

func TestSigningKeyLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := newKeyring(t, nil)
	s := e.sample(t)

	first := e.activeKeyID(t, k, store.DevTenantID)
	before := e.compileFor(t, s, first)
	require.NoError(t, e.signWith(k, store.DevTenantID, before))
	e.requireSignedBy(t, before, first)

	// A version compiled under the key but signed after the rotation
	// still signs with it (retired, not revoked).
	pending := e.compileFor(t, s, first)

	var rotated bpctype.SigningKey
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		var err error
		rotated, err = k.RotateSigningKey(e.Ctx, tx, store.DevTenantID)
		return err
	}))
	require.Equal(t, "dev-k2", rotated.KeyID)
	require.Equal(t, bpctype.KeyActive, rotated.Status)
	keys := e.tenantKeys(t, store.DevTenantID)
	require.Equal(t, bpctype.KeyRetired, keys[first].Status)
	require.NotNil(t, keys[first].RetiredAt)
	require.Equal(t, 1, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyRotated))
	require.Equal(t, "dev-k2", e.activeKeyID(t, k, store.DevTenantID), "new compiles name the new key")

	require.NoError(t, e.signWith(k, store.DevTenantID, pending))
	e.requireSignedBy(t, pending, first)
	after := e.compileFor(t, s, rotated.KeyID)
	require.NoError(t, e.signWith(newKeyring(t, nil), store.DevTenantID, after), "another process (no cache) opens the key")
	e.requireSignedBy(t, after, rotated.KeyID)
	e.requireSignedBy(t, before, first)

	revoke := func(keyID string, r passport.Revocation, now time.Time) (bpctype.SigningKey, error) {
		var key bpctype.SigningKey
		err := e.run(t, func(tx passport.Tx) error {
			var err error
			key, err = passport.RevokeSigningKey(e.Ctx, tx, store.DevTenantID, keyID, r, now)
			return err
		})
		return key, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ptr := func(t time.Time) *time.Time { return &t }

	t.Run("invalid revocations change nothing", func(t *testing.T) {
		_, err := revoke(rotated.KeyID, passport.Revocation{CompromisedAt: ptr(now.Add(time.Hour)), Reason: "x"}, now)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err))
		require.Equal(t, "compromised_at", errcode.As(err).Field)
		// Shown on public pages: no control or format characters (a bidi
		// override would reorder the page's text), not blank, not padded.
		for _, reason := range []string{"", strings.Repeat("é", passport.MaxRevocationReason+1), "\xff",
			"laptop \u202estolen", "laptop\nstolen", "zero\u200bwidth", "   ", " laptop stolen"} {
			_, err = revoke(rotated.KeyID, passport.Revocation{Reason: reason}, now)
			require.Equal(t, errcode.Validation, errcode.CodeOf(err))
			require.Equal(t, "reason", errcode.As(err).Field)
		}
		_, err = revoke(strings.Repeat("k", 10_000), passport.Revocation{Reason: "x"}, now)
		require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
		require.Equal(t, bpctype.KeyActive, e.tenantKeys(t, store.DevTenantID)[rotated.KeyID].Status)
		require.Equal(t, 0, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyRevoked))
	})

	t.Run("another tenant's key and the legacy key are not found", func(t *testing.T) {
		other := e.OtherTenant(t)
		otherKey := e.activeKeyID(t, k, other)
		_, err := revoke(otherKey, passport.Revocation{Reason: "not mine"}, now)
		require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
		require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, "legacy-1", sign.PublicKeyBase64(newKey(t).Public().(ed25519.PublicKey))))
		_, err = revoke("legacy-1", passport.Revocation{Reason: "not mine"}, now)
		require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
		require.Equal(t, bpctype.KeyActive, e.tenantKeys(t, other)[otherKey].Status)

		// A version of this tenant naming the other tenant's key is not
		// signed with it.
		stolen := e.compileFor(t, s, otherKey)
		err = e.signWith(k, store.DevTenantID, stolen)
		require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), "not this tenant's")
	})

	// Revoking the active key: since an hour ago.
	pendingRevoked := e.compileFor(t, s, rotated.KeyID)
	hourAgo := now.Add(-time.Hour)
	key, err := revoke(rotated.KeyID, passport.Revocation{CompromisedAt: &hourAgo, Reason: "laptop stolen"}, now)
	require.NoError(t, err)
	require.Equal(t, bpctype.KeyRevoked, key.Status)
	require.True(t, key.CompromisedAt.Equal(hourAgo))
	require.True(t, key.RevokedAt.Equal(now))
	require.Equal(t, "laptop stolen", *key.RevocationReason)
	require.Equal(t, 1, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyRevoked))

	err = e.signWith(k, store.DevTenantID, pendingRevoked)
	require.Equal(t, errcode.KeyRevoked, errcode.CodeOf(err), "%v", err)
	require.False(t, errcode.As(err).Retryable(), "KEY_REVOKED is permanent")
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, pendingRevoked)
	require.NoError(t, err)
	require.Equal(t, bpctype.PassportCompiling, v.Status)

	// A later compromise time changes nothing; an earlier one moves it.
	same, err := revoke(rotated.KeyID, passport.Revocation{Reason: "again"}, now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, same.CompromisedAt.Equal(hourAgo))
	require.Equal(t, "laptop stolen", *same.RevocationReason)
	require.Equal(t, 1, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyRevoked))
	dayAgo := now.Add(-24 * time.Hour)
	earlier, err := revoke(rotated.KeyID, passport.Revocation{CompromisedAt: &dayAgo, Reason: "it was earlier"}, now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, earlier.CompromisedAt.Equal(dayAgo))
	require.True(t, earlier.RevokedAt.Equal(now), "revoked_at stays the first revocation's")
	require.Equal(t, 2, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyRevoked))

	// The tenant has no active key now; the next compile creates one.
	_, found, err := e.Store.ActiveSigningKey(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	require.False(t, found)
	require.Equal(t, "dev-k3", e.activeKeyID(t, k, store.DevTenantID))
	require.Equal(t, 2, e.tenantEvents(t, store.DevTenantID, passport.EventSigningKeyCreated))
}

func TestSignWithTheLegacyPlatformKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.sample(t)
	legacy := passport.NewSigner("dev-key-1", newKey(t))
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, legacy.KeyID, legacy.PublicKeyBase64()))

	// A version compiled before the upgrade names the platform's key.
	old := e.compileFor(t, s, legacy.KeyID)
	err := e.signWith(newKeyring(t, nil), store.DevTenantID, old)
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), "a worker without the legacy key")
	err = e.signWith(newKeyring(t, passport.NewSigner(legacy.KeyID, newKey(t))), store.DevTenantID, old)
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err), "a worker holding another key under the id")
	require.NoError(t, e.signWith(newKeyring(t, legacy), store.DevTenantID, old))
	e.requireSignedBy(t, old, legacy.KeyID)

	unknown := e.compileFor(t, s, "nobody-k1")
	err = e.signWith(newKeyring(t, legacy), store.DevTenantID, unknown)
	require.Equal(t, errcode.SigningKeyMissing, errcode.CodeOf(err))
}

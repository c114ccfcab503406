package passport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (e env) createKey(t *testing.T, in passport.NewKey) (passport.CreatedKey, error) {
	t.Helper()
	var k passport.CreatedKey
	err := e.run(t, func(tx passport.Tx) error {
		var err error
		k, err = passport.CreateAPIKey(e.Ctx, tx, passport.DefaultQuotas(), in, time.Now())
		return err
	})
	return k, err
}

func (e env) revokeKey(t *testing.T, tenantID, id uuid.UUID) (bpctype.APIKey, error) {
	t.Helper()
	var k bpctype.APIKey
	err := e.run(t, func(tx passport.Tx) error {
		var err error
		k, err = passport.RevokeAPIKey(e.Ctx, tx, tenantID, id)
		return err
	})
	return k, err
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k, err := e.createKey(t, passport.NewKey{TenantID: store.DevTenantID, Name: "  ci uploader ", Role: "writer"})
	require.NoError(t, err)
	require.Equal(t, "ci uploader", k.Name)
	require.Equal(t, "writer", k.Role)
	require.True(t, strings.HasPrefix(k.Token, "bpc_"+k.Prefix+"_"))
	require.Equal(t, passport.HashToken(k.Token), k.TokenSHA256)
	require.Equal(t, 0, e.Count(t, `SELECT count(*) FROM api_keys WHERE position(convert_to($1, 'UTF8') in token_sha256) > 0`, k.Token),
		"the token is not stored")
	require.Equal(t, 1, e.events(t, passport.EventKeyCreated, k.APIKeyID))
	require.Equal(t, 0, e.Count(t, `SELECT count(*) FROM events WHERE payload::text LIKE '%' || $1 || '%'`, k.Token),
		"the event names the key, not its token")

	// The token authenticates until the key is revoked.
	ring := access.NewKeyring(e.Store)
	p, err := ring.Authenticate(e.Ctx, k.Token)
	require.NoError(t, err)
	require.Equal(t, access.Principal{TenantID: store.DevTenantID, KeyID: k.APIKeyID, Role: passport.RoleWriter}, p)

	revoked, err := e.revokeKey(t, store.DevTenantID, k.APIKeyID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	again, err := e.revokeKey(t, store.DevTenantID, k.APIKeyID)
	require.NoError(t, err)
	require.Equal(t, revoked.RevokedAt, again.RevokedAt, "the first revocation time stays")
	require.Equal(t, 1, e.events(t, passport.EventKeyRevoked, k.APIKeyID), "one event for one revocation")

	ring.Forget(k.Prefix)
	_, err = ring.Authenticate(e.Ctx, k.Token)
	require.Equal(t, errcode.Unauthorized, errcode.CodeOf(err))
}

func TestAPIKeyValidationAndScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	past := time.Now().Add(-time.Minute)
	far := time.Now().Add(11 * 365 * 24 * time.Hour)
	for _, tc := range []struct {
		in    passport.NewKey
		field string
	}{
		{passport.NewKey{TenantID: store.DevTenantID, Name: " ", Role: "reader"}, "name"},
		{passport.NewKey{TenantID: store.DevTenantID, Name: strings.Repeat("n", 201), Role: "reader"}, "name"},
		{passport.NewKey{TenantID: store.DevTenantID, Name: "k", Role: "owner"}, "role"},
		{passport.NewKey{TenantID: store.DevTenantID, Name: "k", Role: "Admin"}, "role"},
		{passport.NewKey{TenantID: store.DevTenantID, Name: "k", Role: "reader", ExpiresAt: &past}, "expires_at"},
		{passport.NewKey{TenantID: store.DevTenantID, Name: "k", Role: "reader", ExpiresAt: &far}, "expires_at"},
	} {
		_, err := e.createKey(t, tc.in)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), "%+v", tc.in)
		require.Equal(t, tc.field, errcode.As(err).Field)
	}
	_, err := e.createKey(t, passport.NewKey{TenantID: uuid.New(), Name: "k", Role: "reader"})
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err), "an unknown tenant")

	k, err := e.createKey(t, passport.NewKey{TenantID: store.DevTenantID, Name: "k", Role: "admin"})
	require.NoError(t, err)
	_, err = e.revokeKey(t, e.OtherTenant(t), k.APIKeyID)
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err), "another tenant's key is not found")
	require.Equal(t, 0, e.events(t, passport.EventKeyRevoked, k.APIKeyID))
}

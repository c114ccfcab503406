package access

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func TestPrincipal(t *testing.T) {
	t.Parallel()
	own, other := uuid.New(), uuid.New()
	key := func(r passport.Role) Principal { return Principal{TenantID: own, KeyID: uuid.New(), Role: r} }

	got, err := PlatformPrincipal.Tenant(other)
	require.NoError(t, err)
	require.Equal(t, other, got)
	_, err = PlatformPrincipal.Tenant(uuid.Nil)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))

	for _, r := range passport.Roles {
		p := key(r)
		got, err := p.Tenant(uuid.Nil)
		require.NoError(t, err)
		require.Equal(t, own, got, "the key's tenant is implied")
		got, err = p.Tenant(own)
		require.NoError(t, err)
		require.Equal(t, own, got)
		_, err = p.Tenant(other)
		require.Equal(t, errcode.Forbidden, errcode.CodeOf(err))
		require.Equal(t, errcode.Forbidden, errcode.CodeOf(p.RequirePlatform("metrics")))
		require.Equal(t, errcode.Forbidden, errcode.CodeOf(p.ManageKeys(other)))
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		require.NoError(t, key(passport.RoleReader).Allow(m))
	}
	for _, m := range []string{http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut} {
		require.Equal(t, errcode.Forbidden, errcode.CodeOf(key(passport.RoleReader).Allow(m)), m)
		require.NoError(t, key(passport.RoleWriter).Allow(m))
		require.NoError(t, key(passport.RoleAdmin).Allow(m))
		require.NoError(t, PlatformPrincipal.Allow(m))
	}
	require.NoError(t, key(passport.RoleAdmin).ManageKeys(own))
	require.Equal(t, errcode.Forbidden, errcode.CodeOf(key(passport.RoleWriter).ManageKeys(own)))
	require.NoError(t, PlatformPrincipal.ManageKeys(other))
	require.NoError(t, PlatformPrincipal.RequirePlatform("metrics"))

	_, ok := FromContext(context.Background())
	require.False(t, ok)
	p, ok := FromContext(NewContext(context.Background(), key(passport.RoleWriter)))
	require.True(t, ok)
	require.Equal(t, passport.RoleWriter, p.Role)
}

// keyTable is an in-memory KeyStore: the keyring's store, not the keyring.
type keyTable struct {
	mu      sync.Mutex
	keys    map[string]bpctype.APIKey
	reads   atomic.Int64
	touched map[uuid.UUID]time.Time
	fail    error
	block   chan struct{}
}

func (kt *keyTable) APIKeyByPrefix(_ context.Context, prefix string) (bpctype.APIKey, error) {
	kt.reads.Add(1)
	if kt.block != nil {
		<-kt.block
	}
	kt.mu.Lock()
	defer kt.mu.Unlock()
	if kt.fail != nil {
		return bpctype.APIKey{}, kt.fail
	}
	k, ok := kt.keys[prefix]
	if !ok {
		return bpctype.APIKey{}, errcode.Wrap(errcode.NotFound, store.ErrNotFound, "api key %s not found", prefix)
	}
	return k, nil
}

func (kt *keyTable) TouchAPIKeys(_ context.Context, used map[uuid.UUID]time.Time) error {
	kt.mu.Lock()
	defer kt.mu.Unlock()
	if kt.fail != nil {
		return kt.fail
	}
	for id, at := range used {
		kt.touched[id] = at
	}
	return nil
}

func (kt *keyTable) set(k bpctype.APIKey) {
	kt.mu.Lock()
	kt.keys[k.Prefix] = k
	kt.mu.Unlock()
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newKey(tenant uuid.UUID, role passport.Role) (string, bpctype.APIKey) {
	token, prefix := passport.NewToken()
	return token, bpctype.APIKey{APIKeyID: uuid.New(), TenantID: tenant, Name: "k", Role: string(role),
		Prefix: prefix, TokenSHA256: passport.HashToken(token)}
}

func deniedReason(t *testing.T, err error) string {
	t.Helper()
	require.Equal(t, errcode.Unauthorized, errcode.CodeOf(err), "%v", err)
	var d *DeniedError
	require.True(t, errors.As(err, &d))
	return d.Reason
}

// newTestKeyring is a keyring over an in-memory key table, on a fake clock.
func newTestKeyring() (*keyTable, *Keyring, *clock) {
	kt := &keyTable{keys: map[string]bpctype.APIKey{}, touched: map[uuid.UUID]time.Time{}}
	clk := &clock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	kr := NewKeyring(kt)
	kr.now = clk.now
	return kt, kr, clk
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	kt, kr, clk := newTestKeyring()
	ctx := context.Background()
	tenant := uuid.New()
	token, key := newKey(tenant, passport.RoleWriter)
	kt.set(key)

	p, err := kr.Authenticate(ctx, token)
	require.NoError(t, err)
	require.Equal(t, Principal{TenantID: tenant, KeyID: key.APIKeyID, Role: passport.RoleWriter}, p)
	for range 50 {
		_, err = kr.Authenticate(ctx, token)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, kt.reads.Load(), "a fresh row is not read again")

	// The wrong secret with a real prefix; an unknown prefix; not a token.
	wrong := token[:len(token)-4] + "aaaa"
	if wrong == token {
		wrong = token[:len(token)-4] + "bbbb"
	}
	_, err = kr.Authenticate(ctx, wrong)
	require.Equal(t, DeniedSecret, deniedReason(t, err))
	unknown, _ := passport.NewToken()
	_, err = kr.Authenticate(ctx, unknown)
	require.Equal(t, DeniedUnknown, deniedReason(t, err))
	reads := kt.reads.Load()
	_, err = kr.Authenticate(ctx, "Bearer nonsense")
	require.Equal(t, DeniedMalformed, deniedReason(t, err))
	require.Equal(t, reads, kt.reads.Load(), "a malformed token costs no read")

	// Revoked elsewhere: seen once the row is older than Fresh.
	revokedAt := clk.now()
	key.RevokedAt = &revokedAt
	kt.set(key)
	_, err = kr.Authenticate(ctx, token)
	require.NoError(t, err, "still fresh")
	clk.add(kr.Fresh)
	_, err = kr.Authenticate(ctx, token)
	require.Equal(t, DeniedRevoked, deniedReason(t, err))
	require.Contains(t, err.Error(), "revoked")

	// Expiry needs no read: the row says when.
	token2, key2 := newKey(tenant, passport.RoleReader)
	exp := clk.now().Add(time.Minute)
	key2.ExpiresAt = &exp
	kt.set(key2)
	_, err = kr.Authenticate(ctx, token2)
	require.NoError(t, err)
	clk.add(time.Minute)
	_, err = kr.Authenticate(ctx, token2)
	require.Equal(t, DeniedExpired, deniedReason(t, err))

	// A store error is not a denial.
	kt.mu.Lock()
	kt.fail = errors.New("connection refused")
	kt.mu.Unlock()
	clk.add(time.Second)
	_, err = kr.Authenticate(ctx, token)
	require.ErrorContains(t, err, "connection refused")
	var d *DeniedError
	require.False(t, errors.As(err, &d))
}

func TestKeyringReadsOncePerPrefixUnderConcurrency(t *testing.T) {
	t.Parallel()
	kt, kr, _ := newTestKeyring()
	kt.block = make(chan struct{})
	token, key := newKey(uuid.New(), passport.RoleAdmin)
	kt.set(key)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := kr.Authenticate(context.Background(), token)
			errs <- err
		})
	}
	require.Eventually(t, func() bool { return kt.reads.Load() >= 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // let the others queue behind the read in flight
	close(kt.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, kt.reads.Load())
}

func TestKeyringFlushesLastUsed(t *testing.T) {
	t.Parallel()
	kt, kr, clk := newTestKeyring()
	token, key := newKey(uuid.New(), passport.RoleReader)
	kt.set(key)
	ctx := context.Background()
	for range 10 {
		_, err := kr.Authenticate(ctx, token)
		require.NoError(t, err)
		clk.add(time.Millisecond)
	}
	require.Empty(t, kt.touched, "nothing is written per request")
	last := clk.now().Add(-time.Millisecond)

	kt.fail = errors.New("down")
	require.Error(t, kr.Flush(ctx))
	kt.fail = nil
	require.NoError(t, kr.Flush(ctx), "kept for the next flush")
	require.Equal(t, map[uuid.UUID]time.Time{key.APIKeyID: last}, kt.touched)
	clear(kt.touched)
	require.NoError(t, kr.Flush(ctx))
	require.Empty(t, kt.touched, "no use since, nothing written")
}

func TestKeyringCacheIsBounded(t *testing.T) {
	t.Parallel()
	_, kr, clk := newTestKeyring()
	kr.MaxCached = 10
	for range 25 {
		unknown, _ := passport.NewToken()
		_, err := kr.Authenticate(context.Background(), unknown)
		require.Error(t, err)
	}
	require.Len(t, kr.rows, 10)
	clk.add(kr.Fresh)
	unknown, _ := passport.NewToken()
	_, _ = kr.Authenticate(context.Background(), unknown)
	require.Len(t, kr.rows, 1, "stale rows make room")
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	require.Nil(t, NewLimiter(0, 10))
	var none *Limiter
	ok, _ := none.Allow("x")
	require.True(t, ok, "no limiter, no limit")

	clk := &clock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	l := NewLimiter(10, 5)
	l.now = clk.now
	for i := range 5 {
		ok, _ := l.Allow("a")
		require.True(t, ok, "burst %d", i)
	}
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.Equal(t, 100*time.Millisecond, wait)
	require.Equal(t, 1, RetryAfterSeconds(wait))
	require.Equal(t, 3, RetryAfterSeconds(2001*time.Millisecond))
	ok, _ = l.Allow("b")
	require.True(t, ok, "another client has its own bucket")
	ok, _ = l.Allow("a")
	require.False(t, ok, "a refused request takes nothing, and the bucket stays empty")
	clk.add(100 * time.Millisecond)
	ok, _ = l.Allow("a")
	require.True(t, ok, "recovered at the rate")

	// Exhausted looks without taking.
	over, _ := l.Exhausted("unseen")
	require.False(t, over)
	over, wait = l.Exhausted("a")
	require.True(t, over)
	require.Equal(t, 100*time.Millisecond, wait)
	clk.add(100 * time.Millisecond)
	for range 3 {
		over, _ = l.Exhausted("a")
		require.False(t, over, "a look takes nothing")
	}
	ok, _ = l.Allow("a")
	require.True(t, ok)
	over, _ = none.Exhausted("a")
	require.False(t, over)

	// Full buckets are dropped when the table is full; clients in debt
	// beyond it share the overflow bucket.
	l = NewLimiter(1, 1)
	l.now = clk.now
	l.max = 3
	for _, c := range []string{"c1", "c2", "c3"} {
		ok, _ := l.Allow(c)
		require.True(t, ok)
	}
	ok, _ = l.Allow("c4")
	require.True(t, ok, "the overflow bucket")
	ok, _ = l.Allow("c5")
	require.False(t, ok, "the overflow bucket is shared")
	clk.add(2 * time.Second)
	ok, _ = l.Allow("c6")
	require.True(t, ok)
	require.Len(t, l.buckets, 1, "the recovered buckets were dropped for c6's")
}

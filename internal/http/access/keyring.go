package access

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// KeyStore is what a Keyring reads keys from and records their use in.
type KeyStore interface {
	APIKeyByPrefix(ctx context.Context, prefix string) (bpctype.APIKey, error)
	TouchAPIKeys(ctx context.Context, used map[uuid.UUID]time.Time) error
}

// Why a key was refused, as DeniedError.Reason and the denied metric's label.
const (
	DeniedMalformed = "malformed" // not a bpc_ token
	DeniedUnknown   = "unknown"   // no key has the prefix
	DeniedSecret    = "secret"    // the prefix is a key's, the secret is not
	DeniedRevoked   = "revoked"
	DeniedExpired   = "expired"
)

// DeniedError is a token that does not authenticate.
type DeniedError struct {
	Reason string
	// KeyID is the key the token's prefix found, for the audit log; nil for
	// a malformed or unknown token.
	KeyID    uuid.UUID
	TenantID uuid.UUID
}

func (e *DeniedError) Error() string { return "api key refused: " + e.Reason }

// UnknownTokenMessage is the 401 message of a bearer token that is not
// the platform token nor a live API key's: it does not say whether a key
// with the token's prefix exists, nor whose it is.
const UnknownTokenMessage = "the bearer token is unknown or revoked"

// deny is the UNAUTHORIZED error of a refused token, wrapping its
// DeniedError. Only a client that holds the whole token learns that its key
// was revoked or has expired; anything else reads the same
// (UnknownTokenMessage).
func deny(reason string, key bpctype.APIKey) error {
	msg := UnknownTokenMessage
	switch reason {
	case DeniedRevoked:
		msg = "the api key has been revoked"
	case DeniedExpired:
		msg = "the api key has expired"
	}
	return errcode.Wrap(errcode.Unauthorized, &DeniedError{Reason: reason, KeyID: key.APIKeyID, TenantID: key.TenantID}, "%s", msg)
}

// Keyring resolves API key tokens to principals. It is safe for concurrent
// use. The zero value is not usable: see NewKeyring.
type Keyring struct {
	store KeyStore
	// Fresh is how long a key row read from the store is trusted.
	Fresh time.Duration
	// MaxCached bounds the cached rows (known and unknown prefixes).
	MaxCached int
	now       func() time.Time

	group singleflight.Group
	mu    sync.Mutex
	rows  map[string]cachedKey
	used  map[uuid.UUID]time.Time
}

// cachedKey is a key row (or the absence of one) and when it was read.
type cachedKey struct {
	key   bpctype.APIKey
	found bool
	read  time.Time
}

// NewKeyring returns a Keyring reading keys from st.
func NewKeyring(st KeyStore) *Keyring {
	return &Keyring{store: st, Fresh: 500 * time.Millisecond, MaxCached: 10000, now: time.Now,
		rows: map[string]cachedKey{}, used: map[uuid.UUID]time.Time{}}
}

// Knows reports whether token's prefix is a key this keyring has read from
// the store (fresh or not): checking such a token costs no store read.
func (k *Keyring) Knows(token string) bool {
	prefix, ok := passport.ParseToken(token)
	if !ok {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rows[prefix].found
}

// Authenticate returns the principal of an API key token. A token that does
// not authenticate is an UNAUTHORIZED error wrapping a *DeniedError; an
// error reading the store is returned as it is.
func (k *Keyring) Authenticate(ctx context.Context, token string) (Principal, error) {
	prefix, ok := passport.ParseToken(token)
	if !ok {
		return Principal{}, deny(DeniedMalformed, bpctype.APIKey{})
	}
	c, err := k.row(ctx, prefix)
	if err != nil {
		return Principal{}, err
	}
	if !c.found {
		return Principal{}, deny(DeniedUnknown, bpctype.APIKey{})
	}
	key := c.key
	if subtle.ConstantTimeCompare(passport.HashToken(token), key.TokenSHA256) != 1 {
		return Principal{}, deny(DeniedSecret, key)
	}
	now := k.now()
	if key.RevokedAt != nil {
		return Principal{}, deny(DeniedRevoked, key)
	}
	if key.ExpiresAt != nil && !now.Before(*key.ExpiresAt) {
		return Principal{}, deny(DeniedExpired, key)
	}
	role, ok := passport.ParseRole(key.Role)
	if !ok {
		return Principal{}, errcode.New(errcode.Internal, "api key %s has an unknown role", key.APIKeyID)
	}
	k.mu.Lock()
	k.used[key.APIKeyID] = now
	k.mu.Unlock()
	return Principal{TenantID: key.TenantID, KeyID: key.APIKeyID, Role: role}, nil
}

// row returns the key row of prefix, from the cache while it is fresh, else
// read once from the store however many requests ask at the same time.
func (k *Keyring) row(ctx context.Context, prefix string) (cachedKey, error) {
	now := k.now()
	k.mu.Lock()
	c, ok := k.rows[prefix]
	k.mu.Unlock()
	if ok && now.Sub(c.read) < k.Fresh {
		return c, nil
	}
	v, err, _ := k.group.Do(prefix, func() (any, error) {
		key, err := k.store.APIKeyByPrefix(ctx, prefix)
		c := cachedKey{key: key, found: err == nil, read: k.now()}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return c, err
		}
		k.remember(prefix, c)
		return c, nil
	})
	if err != nil {
		return cachedKey{}, err
	}
	return v.(cachedKey), nil
}

// remember caches c, first dropping stale rows when the cache is full; when
// it is still full, c is not cached.
func (k *Keyring) remember(prefix string, c cachedKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.rows) >= k.MaxCached {
		for p, old := range k.rows {
			if c.read.Sub(old.read) >= k.Fresh {
				delete(k.rows, p)
			}
		}
		if len(k.rows) >= k.MaxCached {
			return
		}
	}
	k.rows[prefix] = c
}

// Forget drops the cached row of a key this process revoked, so that the
// revocation holds here at once.
func (k *Keyring) Forget(prefix string) {
	k.mu.Lock()
	delete(k.rows, prefix)
	k.mu.Unlock()
}

// Flush writes the times keys were last used since the previous flush.
func (k *Keyring) Flush(ctx context.Context) error {
	k.mu.Lock()
	used := k.used
	k.used = map[uuid.UUID]time.Time{}
	k.mu.Unlock()
	if err := k.store.TouchAPIKeys(ctx, used); err != nil {
		// Put them back (a newer use wins) for the next flush.
		k.mu.Lock()
		for id, at := range used {
			if cur, ok := k.used[id]; !ok || cur.Before(at) {
				k.used[id] = at
			}
		}
		k.mu.Unlock()
		return err
	}
	return nil
}

// Run flushes the last-used times every interval until ctx is done, and
// once more then.
func (k *Keyring) Run(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := k.Flush(flushCtx); err != nil {
				logger.Warn("error recording api key use at shutdown", slog.String("error", err.Error()))
			}
			return
		case <-t.C:
			if err := k.Flush(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("error recording api key use", slog.String("error", err.Error()))
			}
		}
	}
}

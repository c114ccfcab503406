package public

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listenState is what Listen shares with Sync.
type listenState struct {
	mu        sync.Mutex
	pool      *pgxpool.Pool
	channel   string // "" while not listening
	waiters   map[string]chan struct{}
	connected chan struct{} // closed at the first LISTEN
}

// Listen drops the answers each change in the database touches, whichever
// process made it: it holds a connection of its own that LISTENs on the
// triggers' channel, until ctx ends. When the connection is lost it
// reconnects (after a pause), and drops every answer once listening again:
// what changed in between is unknown. Without Listen (BPC_DB_LISTEN=false
// behind PgBouncer in transaction mode, which has no LISTEN), answers live
// at most MaxAge.
func (a *Answers) Listen(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) {
	pause := time.Second
	for {
		connected, err := a.listenOnce(ctx, pool)
		a.stopListening()
		if ctx.Err() != nil {
			return
		}
		// Changes made while this process does not listen go unheard:
		// drop everything now, not only once listening again, so that a
		// reconnect that keeps failing does not leave answers up to
		// MaxAge old.
		a.InvalidateAll()
		if connected {
			pause = time.Second
		}
		logger.Warn("public answers: listening for changes failed; answers are dropped and listening resumes",
			slog.String("error", err.Error()), slog.Duration("retry_in", pause))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// Listening returns a channel closed once Listen first listens.
func (a *Answers) Listening() <-chan struct{} {
	l := &a.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.connected == nil {
		l.connected = make(chan struct{})
	}
	return l.connected
}

// listenOnce listens on a new connection until it fails or ctx ends;
// connected is whether it got as far as listening.
func (a *Answers) listenOnce(ctx context.Context, pool *pgxpool.Pool) (connected bool, err error) {
	cfg := pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // not the pool's queries: a test counting them counts requests
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("error connecting: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	// The triggers' channel, named by the database's own function
	// (migration 018), so that the two agree for any schema's name.
	var channel string
	if err := conn.QueryRow(ctx, `SELECT bpc_public_answers_channel(current_schema())`).Scan(&channel); err != nil {
		return false, fmt.Errorf("error reading the answers' channel: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("error listening on %s: %w", channel, err)
	}
	// Whatever changed before LISTEN took effect was not heard. On a
	// reconnect that may be recent, and a replica may not have replayed
	// it: read from the primary for a while, as after any change. Dropped
	// before Listening says so, so that an answer cached after it is not.
	if a.startListening(pool, channel) {
		a.InvalidateAll()
	} else {
		a.invalidate(invalidation{all: true, noPrimary: true})
		a.firstListened()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		a.apply(n.Payload)
	}
}

// startListening records that Listen listens on channel; again is whether
// it had listened before (a reconnect). The first time, firstListened
// tells Listening's waiters.
func (a *Answers) startListening(pool *pgxpool.Pool, channel string) (again bool) {
	l := &a.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pool, l.channel = pool, channel
	if l.connected == nil {
		l.connected = make(chan struct{})
	}
	select {
	case <-l.connected:
		return true
	default:
		return false
	}
}

// firstListened closes the channel Listening returns.
func (a *Answers) firstListened() {
	l := &a.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.connected:
	default:
		close(l.connected)
	}
}

func (a *Answers) stopListening() {
	l := &a.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	l.channel = ""
}

// apply drops what a notification names (see the migration public_answers_notify for the
// payloads): "version <tenant> <id>", "key <tenant|*> <key id>",
// "tenant <tenant>", and Sync's "sync <token>". One it cannot read drops
// everything.
func (a *Answers) apply(payload string) {
	kind, rest, _ := strings.Cut(payload, " ")
	if kind == "sync" {
		a.synced(rest)
		return
	}
	tenantText, id, _ := strings.Cut(rest, " ")
	var tenant uuid.UUID
	if tenantText != "*" {
		t, err := uuid.Parse(tenantText)
		if err != nil {
			a.InvalidateAll()
			return
		}
		tenant = t
	}
	switch kind {
	case "tenant":
		a.invalidate(invalidation{tenant: tenant})
	case "key":
		a.invalidate(invalidation{tenant: tenant, keyID: id})
	case "version":
		v, err := uuid.Parse(id)
		if err != nil {
			a.InvalidateAll()
			return
		}
		a.invalidate(invalidation{tenant: tenant, version: v})
	default:
		a.InvalidateAll()
	}
}

// Sync returns once every change committed before it was called has
// reached this cache through Listen: it sends a notification of its own
// and waits for it, which the database delivers after those of every
// transaction that committed before. For tests, and for a caller that
// must see a change another process made. Without Listen running it fails.
func (a *Answers) Sync(ctx context.Context) error {
	l := &a.listener
	token := uuid.NewString()
	done := make(chan struct{})
	l.mu.Lock()
	pool, channel := l.pool, l.channel
	if channel != "" {
		if l.waiters == nil {
			l.waiters = map[string]chan struct{}{}
		}
		l.waiters[token] = done
	}
	l.mu.Unlock()
	if channel == "" {
		return errors.New("public answers: not listening for changes")
	}
	defer func() {
		l.mu.Lock()
		delete(l.waiters, token)
		l.mu.Unlock()
	}()
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, "sync "+token); err != nil {
		return fmt.Errorf("error notifying: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Answers) synced(token string) {
	l := &a.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	if done, ok := l.waiters[token]; ok {
		close(done)
		delete(l.waiters, token)
	}
}

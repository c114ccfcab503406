package public

import (
	"container/list"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// Answers caches the finished public answers of published versions: a
// QR scan, the page or JSON of a version, answered again without a
// database round trip, without hashing a byte and without rendering.
//
// What is cached, per version id: the version as read (without the proof
// and QR image, which only its verification needed), the verification of
// its stored bytes and code, and the answers made from them — the body of
// each representation (JSON, page) of each route with its ETag. Only
// answers whose variety is bounded are kept: the version's own answers,
// and a scanned code's when it is the version's own (a handful of
// spellings). A scanned code that does not match is answered from the
// cached version without a lookup, but not kept: a client sending ever new
// hashes costs a render each and evicts nothing. Errors, and ids that are
// not published, are never cached, so a scan of random ids costs each a
// lookup (rate-limited per address by the API) and no memory.
//
// An answer is right until something it shows changes: the version's
// status, its signing key, its issuer's profile or verification, its
// tenant's or product's name. Invalidate drops the answers a change
// touches — called by this process right after it commits one, and by
// Listen for every process's changes (the database's triggers NOTIFY).
// MaxAge bounds an answer's life where no notification can arrive
// (BPC_DB_LISTEN=false) or one was lost. After an invalidation of a tenant,
// its versions are read from the primary for PrimaryWindow
// (store.WithPrimary), so that a replica that has not replayed the change
// yet cannot fill the cache with the old answer.
//
// Memory is bounded by MaxBytes (bodies and version data, counted) and
// MaxEntries (versions); the least recently used version goes first. A
// herd of misses for one version runs one lookup; no lock is held while
// reading or rendering. A nil *Answers caches nothing. Answers is safe for
// concurrent use.
type Answers struct {
	cfg AnswersConfig

	mu      sync.Mutex
	entries map[uuid.UUID]*entry
	lru     list.List // of *entry, the most recently used first
	bytes   int64
	// gen counts invalidations; recent keeps the last ones, so that a
	// lookup that ran while one happened does not keep what it read.
	gen    uint64
	recent []invalidation
	// primaryAll and primary are until when versions (of every tenant; of
	// a tenant, or one version, by its id) are read from the primary.
	primaryAll time.Time
	primary    map[uuid.UUID]time.Time

	flights singleflight.Group

	listener listenState

	lookups atomic.Int64
}

// AnswersConfig bounds Answers.
type AnswersConfig struct {
	// MaxBytes bounds the cached bodies and version data (BPC_PUBLIC_CACHE_MB).
	MaxBytes int64
	// MaxEntries bounds the versions held (BPC_PUBLIC_CACHE_ENTRIES).
	MaxEntries int
	// MaxAge is how long an answer is kept at most (BPC_PUBLIC_CACHE_MAX_AGE_S).
	MaxAge time.Duration
	// PrimaryWindow is how long after an invalidation of a tenant its
	// versions are read from the primary (default DefaultPrimaryWindow).
	PrimaryWindow time.Duration
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

// DefaultPrimaryWindow is how long after a change the changed tenant's
// versions are read from the primary: far longer than a healthy replica
// lags (a lagging one is left out by the store's routing anyway).
const DefaultPrimaryWindow = time.Minute

// recentInvalidations is how many invalidations Answers remembers for the
// lookups still running; a lookup older than all of them keeps nothing.
const recentInvalidations = 256

// entryOverhead is what an entry and an answer cost beyond the bytes
// counted (maps, strings, the row's fields), estimated.
const entryOverhead = 2048

// NewAnswers returns an empty cache bounded by cfg (a zero bound: 64 MiB,
// 50,000 versions, 5 minutes).
func NewAnswers(cfg AnswersConfig) *Answers {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PrimaryWindow <= 0 {
		cfg.PrimaryWindow = DefaultPrimaryWindow
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 50_000
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 5 * time.Minute
	}
	return &Answers{cfg: cfg, entries: map[uuid.UUID]*entry{}, primary: map[uuid.UUID]time.Time{}}
}

// entry is a cached version and its answers.
type entry struct {
	id, tenant uuid.UUID
	keyID      string
	// row is the version as read, without Proof and QRPNG.
	row store.PublicPassportVersion
	// stored is the verification of the bytes with the stored code, before
	// the trust checks (Checks.check); version is Lookup's answer.
	stored  Verification
	version VerifiedVersion
	born    time.Time
	answers map[string]*answer
	size    int64
	elem    *list.Element
	// kept is true while the entry is in the cache: answers made from an
	// entry that was dropped (or never kept) are not stored.
	kept bool
}

// answer is a finished answer: its body, type and ETag.
type answer struct {
	body        []byte
	contentType string
	etag        string
}

// invalidation is what a change touched: every version (all), a tenant's,
// one version, or the versions a key signed.
type invalidation struct {
	gen     uint64
	all     bool
	tenant  uuid.UUID // zero: none named (all, or a legacy key's)
	version uuid.UUID
	keyID   string
	// noPrimary leaves the primary window alone: the first drop when
	// Listen starts, which follows no change.
	noPrimary bool
}

// matches reports whether inv touches e.
func (inv invalidation) matches(e *entry) bool {
	switch {
	case inv.all:
		return true
	case inv.version != uuid.Nil:
		return e.id == inv.version
	case inv.keyID != "":
		return e.keyID == inv.keyID
	}
	return e.tenant == inv.tenant
}

// Lookups is how many times the versions were read from the database
// (each a miss), for tests and the benchmark.
func (a *Answers) Lookups() int64 { return a.lookups.Load() }

// Len is how many versions are cached, and Bytes what they are counted as.
func (a *Answers) Len() (versions int, bytes int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries), a.bytes
}

// version returns version id's entry: the cached one, or one read (a herd
// of callers reading once) and kept.
func (a *Answers) version(ctx context.Context, q *store.Queries, c *Checks, id uuid.UUID) (*entry, error) {
	if a == nil {
		return load(ctx, q, c, id)
	}
	now := a.cfg.Now()
	a.mu.Lock()
	if e, ok := a.entries[id]; ok {
		if now.Sub(e.born) < a.cfg.MaxAge {
			a.lru.MoveToFront(e.elem)
			a.mu.Unlock()
			return e, nil
		}
		a.removeLocked(e)
	}
	gen := a.gen
	a.mu.Unlock()
	// The flight's key has the generation: a request after an
	// invalidation does not join a lookup that began before it. The
	// lookup outlives a caller that gives up, for the others waiting.
	v, err, _ := a.flights.Do(id.String()+"/"+strconv.FormatUint(gen, 10), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return a.fill(fctx, q, c, id, gen)
	})
	if err != nil {
		return nil, err
	}
	return v.(*entry), nil
}

// fill reads version id and keeps it, unless an invalidation that touches
// it came while it was read (gen was the count before): the caller is then
// answered with what it read, as if it had come just before the change.
func (a *Answers) fill(ctx context.Context, q *store.Queries, c *Checks, id uuid.UUID, gen uint64) (*entry, error) {
	a.lookups.Add(1)
	e, err := load(ctx, q, c, id)
	if err != nil {
		return nil, err
	}
	if !store.PrimaryWanted(ctx) && a.wantsPrimary(e) {
		// Its tenant changed lately: a replica may not have replayed the
		// change yet. Read again where it was made.
		a.lookups.Add(1)
		fresh, err := load(store.WithPrimary(ctx), q, c, id)
		switch {
		case err == nil:
			e = fresh
		case errcode.CodeOf(err) == errcode.NotFound:
			return nil, err
		default:
			// The primary cannot answer (a restart, a failover): the
			// replica's answer is the best there is, given but not
			// kept, so that the next scan tries the primary again.
			return e, nil
		}
	}
	e.born = a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.touchedSinceLocked(e, gen) {
		return e, nil
	}
	if old, ok := a.entries[id]; ok {
		a.removeLocked(old)
	}
	e.kept = true
	e.elem = a.lru.PushFront(e)
	a.entries[id] = e
	a.bytes += e.size
	a.evictLocked()
	return e, nil
}

// load reads version id and verifies it (c remembers the bytes' checks).
func load(ctx context.Context, q *store.Queries, c *Checks, id uuid.UUID) (*entry, error) {
	v, err := q.GetPublicPassportVersion(ctx, id)
	if err != nil {
		return nil, err
	}
	stored := c.check(v, deref(v.QRPayload), true)
	// Only the verification needed these.
	v.Proof, v.QRPNG = nil, nil
	e := &entry{id: id, tenant: v.TenantID, keyID: v.SigningKeyID, row: v, stored: stored,
		version: view(v, withTrust(v, stored)), answers: map[string]*answer{}}
	e.size = entryOverhead + int64(len(v.Payload)+len(v.ReceiptSigned)+len(deref(v.QRPayload)))
	return e, nil
}

// wantsPrimary reports whether e's tenant was invalidated within the
// primary window.
func (a *Answers) wantsPrimary(e *entry) bool {
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.primaryAll) || now.Before(a.primary[e.tenant]) || now.Before(a.primary[e.id])
}

// touchedSinceLocked reports whether an invalidation after gen touches e;
// one too old to be remembered counts as touching it.
func (a *Answers) touchedSinceLocked(e *entry, gen uint64) bool {
	if a.gen == gen {
		return false
	}
	if len(a.recent) == 0 || a.recent[0].gen > gen+1 {
		return true
	}
	for _, inv := range a.recent {
		if inv.gen > gen && inv.matches(e) {
			return true
		}
	}
	return false
}

// answer returns e's answer under key, made by build when there is none,
// and kept when key is not empty and e is still cached. build runs without
// the lock; a herd of the same answer builds it once.
func (a *Answers) answer(e *entry, key string, build func() (*answer, error)) (*answer, error) {
	if a == nil || key == "" {
		return build()
	}
	a.mu.Lock()
	an := e.answers[key]
	a.mu.Unlock()
	if an != nil {
		return an, nil
	}
	v, err, _ := a.flights.Do("answer/"+e.id.String()+"/"+strconv.FormatInt(e.born.UnixNano(), 10)+"/"+key, func() (any, error) {
		return build()
	})
	if err != nil {
		return nil, err
	}
	an = v.(*answer)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.kept && e.answers[key] == nil {
		e.answers[key] = an
		grow := int64(entryOverhead/4 + len(an.body) + len(key))
		e.size += grow
		a.bytes += grow
		a.evictLocked()
	}
	return an, nil
}

// evictLocked drops the least recently used versions until the cache is
// within its bounds.
func (a *Answers) evictLocked() {
	for a.lru.Len() > 0 && (a.bytes > a.cfg.MaxBytes || len(a.entries) > a.cfg.MaxEntries) {
		a.removeLocked(a.lru.Back().Value.(*entry))
	}
}

func (a *Answers) removeLocked(e *entry) {
	if !e.kept {
		return
	}
	e.kept = false
	a.lru.Remove(e.elem)
	delete(a.entries, e.id)
	a.bytes -= e.size
}

// Invalidate drops every cached answer of tenantID's versions; the
// tenant's versions are read from the primary for the primary window. A
// process calls it right after committing a change of what the tenant's
// public answers show, so that its own next answer shows the change;
// Listen does the same for every process's changes.
func (a *Answers) Invalidate(tenantID uuid.UUID) {
	a.invalidate(invalidation{tenant: tenantID})
}

// InvalidateAll drops every cached answer, and reads every version from
// the primary for the primary window.
func (a *Answers) InvalidateAll() {
	a.invalidate(invalidation{all: true})
}

func (a *Answers) invalidate(inv invalidation) {
	if a == nil {
		return
	}
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	inv.gen = a.gen
	a.recent = append(a.recent, inv)
	if len(a.recent) > recentInvalidations {
		a.recent = append(a.recent[:0], a.recent[len(a.recent)-recentInvalidations:]...)
	}
	until := now.Add(a.cfg.PrimaryWindow)
	switch {
	case inv.noPrimary:
	case inv.all || inv.tenant == uuid.Nil && inv.version == uuid.Nil:
		// Every version, or a legacy key's (which signs for every tenant).
		a.primaryAll = until
	default:
		if len(a.primary) > 1024 {
			for t, u := range a.primary {
				if !now.Before(u) {
					delete(a.primary, t)
				}
			}
		}
		switch {
		case inv.version != uuid.Nil:
			// One version changed (superseded): its tenant's others did
			// not, and a tenant issuing all day keeps its single reads.
			a.primary[inv.version] = until
		case inv.tenant != uuid.Nil:
			a.primary[inv.tenant] = until
		}
	}
	if inv.version != uuid.Nil {
		if e, ok := a.entries[inv.version]; ok {
			a.removeLocked(e)
		}
		return
	}
	for _, e := range a.entries {
		if inv.matches(e) {
			a.removeLocked(e)
		}
	}
}

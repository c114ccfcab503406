package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// primaryKey marks a context whose reads must see the primary's latest
// commit (read-your-writes), even where Queries would otherwise read from a
// replica.
type primaryKey struct{}

// WithPrimary returns ctx marked so that reads made with it go to the
// primary: a caller that has just written, or has just learnt that the rows
// it reads changed (a cache invalidated by a revocation), and must not be
// answered from a replica that has not replayed that change yet.
func WithPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

// PrimaryWanted reports whether ctx was marked by WithPrimary.
func PrimaryWanted(ctx context.Context) bool {
	v, _ := ctx.Value(primaryKey{}).(bool)
	return v
}

// Read targets and the reasons a read went where it went: the labels of
// ReadRouter.Reads (and of the service's bpc_db_reads_total).
const (
	TargetReplica = "replica"
	TargetPrimary = "primary"

	// ReasonReplicaHealthy: the replica was streaming within the lag bound.
	ReasonReplicaHealthy = "replica_healthy"
	// ReasonPrimaryWanted: the context was marked by WithPrimary.
	ReasonPrimaryWanted = "primary_wanted"
	// ReasonReplicaUnchecked: the monitor has not measured the replica's
	// lag yet: no check has been made, or the replica has not replayed
	// even the oldest primary position the monitor holds, which is younger
	// than MaxLag (its lag is at least that position's age and may be
	// far more: a replica the service starts beside may be hours behind).
	ReasonReplicaUnchecked = "replica_unchecked"
	// ReasonReplicaLagging: the replica was more than MaxLag behind.
	ReasonReplicaLagging = "replica_lagging"
	// ReasonReplicaDown: the monitor could not reach the replica.
	ReasonReplicaDown = "replica_down"
	// ReasonReplicaNotStandby: the server at the read URL is not a standby
	// (pg_is_in_recovery() is false): the primary itself, a promoted
	// replica that no longer follows the primary, or another primary.
	// Reads go to the primary: a promoted replica's data stops at its
	// promotion while it reports no lag at all.
	ReasonReplicaNotStandby = "replica_not_standby"
	// ReasonReplicaError: a read on the replica failed for want of a
	// connection, or was cancelled by a recovery conflict, and was made
	// again on the primary.
	ReasonReplicaError = "replica_error"
	// ReasonNotReplayed: the replica did not have the row (a version just
	// activated, not replayed yet), so the lookup was made again on the
	// primary.
	ReasonNotReplayed = "not_replayed"
	// ReasonReplicaPrimaryDown: the primary could not be reached
	// (refused, shutting down, connection lost) and the replica, healthy
	// at the last check that could measure it, serves the reads: it holds
	// every commit it received, the best copy there is.
	ReasonReplicaPrimaryDown = "replica_primary_down"
	// ReasonReplicaTooLarge: a read on the replica returned more than
	// MaxBufferedBytes, so it was made again on the primary, which
	// streams its rows instead of holding them all.
	ReasonReplicaTooLarge = "replica_too_large"
)

// readReasons are every reason, in the order Reads reports them.
var readReasons = []string{ReasonReplicaHealthy, ReasonPrimaryWanted, ReasonReplicaUnchecked,
	ReasonReplicaLagging, ReasonReplicaDown, ReasonReplicaNotStandby, ReasonReplicaError, ReasonNotReplayed,
	ReasonReplicaPrimaryDown, ReasonReplicaTooLarge}

// ReadRouterOptions tune a ReadRouter.
type ReadRouterOptions struct {
	// MaxLag is how far behind the primary the replica may be and still
	// serve reads (default 5 s).
	MaxLag time.Duration
	// CheckInterval is how often the monitor checks the replica (default
	// 1 s); a read never waits for a check.
	CheckInterval time.Duration
	// Logger says when the route changes (nil: silent).
	Logger *slog.Logger
	// MaxBufferedBytes bounds the bytes of rows a read on the replica
	// holds (readReplica); a larger read is made again on the primary
	// (default 8 MiB).
	MaxBufferedBytes int
}

// ReadRouter is a DBTX that sends the reads it is given to a streaming
// replica while the replica is healthy, and everything else to the primary.
// Queries made over it (New(router)) are the read-routed Queries: only the
// read paths that can bear a replica's few seconds of staleness use them
// (public verification, the operators' list routes); every other call site
// keeps its Queries over the primary pool. A read-routed Queries is for
// reads only: an INSERT … RETURNING is a Query too, and would be sent to
// the replica, which refuses it.
//
// What goes to the primary, always: Exec (a write), Begin (a transaction,
// so anything that writes or must read what it writes), and a read whose
// context was marked by WithPrimary. A read goes to the primary too while
// the replica is lagging, down, not a standby or its lag not measured yet.
// A read on the replica runs to its last row before the caller sees the
// first: when it fails for want of a connection, or is cancelled by a
// recovery conflict (at any row), it is made again on the primary, once.
//
// Health is decided by a monitor (Run), not per request: every
// CheckInterval it reads the primary's WAL position (pg_current_wal_lsn:
// what it has written out; a commit made with synchronous_commit off counts
// once the WAL writer writes it, within wal_writer_delay) and the
// replica's replay position (pg_last_wal_replay_lsn), and keeps the
// primary's recent positions with the time it saw each. The replica's lag
// is the age of the oldest primary position it has not replayed yet: zero
// when it has replayed everything the primary wrote, however long ago the
// last commit was. A replay timestamp (pg_last_xact_replay_timestamp)
// alone would call an idle primary's replica stale. The monitor keeps the
// positions back to the newest one older than MaxLag; until it holds one
// that old (it has just started), a replica that has not replayed even the
// oldest position held has a lag no check can bound: at least that
// position's age, maybe hours. Reads then stay on the primary
// (ReasonReplicaUnchecked): the router starts there and assumes nothing of
// a replica it has not measured; one that keeps up is trusted once a
// check finds it has replayed the primary's position (which may be the
// first check). A server at the read URL that is not a standby (the
// primary itself, or a promoted replica) is never trusted
// (ReasonReplicaNotStandby): a promoted replica's data stops at its
// promotion, yet it would measure no lag at all. While the primary
// cannot be reached (connections refused or cut: a restart), a replica
// the last measuring check found healthy keeps serving as long as it
// answers (ReasonReplicaPrimaryDown): it then holds every commit it
// received, which is the best copy there is, and the public pages keep
// answering from it. One that was lagging or unchecked stays off. A
// primary that is only slow to answer, or at max_connections (53300),
// leaves the route as it was: that says nothing of the lag.
type ReadRouter struct {
	primary *pgxpool.Pool
	replica *pgxpool.Pool
	opts    ReadRouterOptions

	// reason is why reads go where they go now: ReasonReplicaHealthy
	// sends them to the replica, any other reason to the primary.
	reason atomic.Pointer[string]
	// lagNanos is the lag the last check measured.
	lagNanos atomic.Int64

	mu      sync.Mutex
	samples []walSample // the primary's positions, oldest first (monitor only)

	reads [2][]atomic.Int64 // [target][reason index]
}

// walSample is the primary's WAL position at a time.
type walSample struct {
	at  time.Time
	lsn uint64
}

// NewReadRouter returns a router over the primary and replica pools. It
// reads from the primary until its monitor (Run) has found the replica
// healthy.
func NewReadRouter(primary, replica *pgxpool.Pool, opts ReadRouterOptions) *ReadRouter {
	if opts.MaxLag <= 0 {
		opts.MaxLag = 5 * time.Second
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = time.Second
	}
	if opts.MaxBufferedBytes <= 0 {
		opts.MaxBufferedBytes = 8 << 20
	}
	r := &ReadRouter{primary: primary, replica: replica, opts: opts}
	for i := range r.reads {
		r.reads[i] = make([]atomic.Int64, len(readReasons))
	}
	unchecked := ReasonReplicaUnchecked
	r.reason.Store(&unchecked)
	return r
}

// Route says where reads without WithPrimary go now: TargetReplica or
// TargetPrimary, and why.
func (r *ReadRouter) Route() (target, reason string) {
	reason = *r.reason.Load()
	if reason == ReasonReplicaHealthy || reason == ReasonReplicaPrimaryDown {
		return TargetReplica, reason
	}
	return TargetPrimary, reason
}

// Lag is the replica's lag the monitor last measured.
func (r *ReadRouter) Lag() time.Duration { return time.Duration(r.lagNanos.Load()) }

// Reads calls fn with the number of reads served so far by each target for
// each reason (only the pairs that occurred).
func (r *ReadRouter) Reads(fn func(target, reason string, n int64)) {
	for ti, target := range []string{TargetReplica, TargetPrimary} {
		for ri, reason := range readReasons {
			if n := r.reads[ti][ri].Load(); n > 0 {
				fn(target, reason, n)
			}
		}
	}
}

func (r *ReadRouter) count(target, reason string) {
	ti := 1
	if target == TargetReplica {
		ti = 0
	}
	for ri, rr := range readReasons {
		if rr == reason {
			r.reads[ti][ri].Add(1)
			return
		}
	}
}

// target picks the pool a read made with ctx goes to.
func (r *ReadRouter) target(ctx context.Context) (*pgxpool.Pool, string, string) {
	if PrimaryWanted(ctx) {
		if retried, _ := ctx.Value(notReplayedKey{}).(bool); retried {
			return r.primary, TargetPrimary, ReasonNotReplayed
		}
		return r.primary, TargetPrimary, ReasonPrimaryWanted
	}
	if target, reason := r.Route(); target == TargetReplica {
		return r.replica, target, reason
	} else {
		return r.primary, target, reason
	}
}

// replicaServes reports whether a read made with ctx would go to the
// replica now.
func (r *ReadRouter) replicaServes(ctx context.Context) bool {
	_, target, _ := r.target(ctx)
	return target == TargetReplica
}

// Query runs a read on the target. On the replica the read runs to its
// last row before the caller sees the first (readReplica), so that a
// failure at any row can still be answered from the primary: a replica
// that cannot be reached is marked down (until the monitor finds it back),
// and the read is made on the primary; so is one the replica cancelled for
// a recovery conflict.
func (r *ReadRouter) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	pool, target, reason := r.target(ctx)
	if target != TargetReplica {
		r.count(target, reason)
		return pool.Query(ctx, sql, args...)
	}
	rows, err := r.readReplica(ctx, sql, args...)
	if errors.Is(err, errTooLarge) {
		r.count(TargetPrimary, ReasonReplicaTooLarge)
		return r.primary.Query(ctx, sql, args...)
	}
	if err != nil && ctx.Err() == nil {
		switch {
		case IsUnavailable(err) || pgconn.SafeToRetry(err):
			r.setReason(ReasonReplicaDown, err)
		case !isRecoveryConflict(err):
			r.count(target, reason)
			return nil, err
		}
		r.count(TargetPrimary, ReasonReplicaError)
		return r.primary.Query(ctx, sql, args...)
	}
	r.count(target, reason)
	return rows, err
}

// readReplica runs a read on the replica and reads every row of it into
// memory (a copy of their bytes) before returning: a recovery conflict
// cancels a read at any row, after some have come, and the caller must
// not have seen those when the read is made again on the primary. The
// rows keep the replica's connection, whose type map decodes them, until
// they are closed. Not every routed read is small (ListTenants, ListAPIKeys
// and ListWebhookEndpoints have no LIMIT; ListFacts reads up to 1000
// rows), so the copy is bounded: past MaxBufferedBytes the read is closed
// and errTooLarge returned, and Query makes it on the primary, which
// streams.
func (r *ReadRouter) readReplica(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	conn, err := r.replica.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		conn.Release()
		return nil, err
	}
	b := &bufferedRows{conn: conn, fields: slices.Clone(rows.FieldDescriptions()), row: -1}
	total := 0
	for rows.Next() {
		// One allocation for the row's bytes, one for its columns.
		raw := rows.RawValues()
		size := 0
		for _, v := range raw {
			size += len(v)
		}
		total += size
		if total > r.opts.MaxBufferedBytes {
			rows.Close()
			conn.Release()
			return nil, errTooLarge
		}
		buf := make([]byte, 0, size)
		values := make([][]byte, len(raw))
		for i, v := range raw {
			if v != nil {
				at := len(buf)
				buf = append(buf, v...)
				values[i] = buf[at:len(buf):len(buf)]
			}
		}
		b.rows = append(b.rows, values)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		conn.Release()
		return nil, err
	}
	b.tag = rows.CommandTag()
	return b, nil
}

// errTooLarge is readReplica's answer to a read past MaxBufferedBytes.
var errTooLarge = errors.New("the read on the replica returned more than MaxBufferedBytes")

// bufferedRows are a read's rows read ahead (readReplica), as pgx.Rows.
type bufferedRows struct {
	conn   *pgxpool.Conn // released at Close
	fields []pgconn.FieldDescription
	rows   [][][]byte
	row    int // the current row, -1 before the first
	tag    pgconn.CommandTag
	err    error
	closed bool
	// plans scan each column into the type planned for it.
	plans   []pgtype.ScanPlan
	planned []reflect.Type
}

// Close releases the replica's connection.
func (b *bufferedRows) Close() {
	if !b.closed {
		b.closed = true
		b.conn.Release()
	}
}

// Err is the first error scanning a row.
func (b *bufferedRows) Err() error { return b.err }

// CommandTag is the read's command tag.
func (b *bufferedRows) CommandTag() pgconn.CommandTag { return b.tag }

// FieldDescriptions describes the read's columns.
func (b *bufferedRows) FieldDescriptions() []pgconn.FieldDescription { return b.fields }

// Next moves to the next row; after the last it closes the rows.
func (b *bufferedRows) Next() bool {
	if b.closed || b.err != nil {
		return false
	}
	b.row++
	if b.row >= len(b.rows) {
		b.Close()
		return false
	}
	return true
}

// Scan decodes the current row into dest, as pgx's rows do.
func (b *bufferedRows) Scan(dest ...any) error {
	if b.closed || b.row < 0 || b.row >= len(b.rows) {
		return errors.New("no row to scan: call Next first")
	}
	var rs pgx.RowScanner
	if len(dest) == 1 {
		rs, _ = dest[0].(pgx.RowScanner)
	}
	var err error
	if rs != nil {
		err = rs.ScanRow(b)
	} else {
		err = b.scan(dest)
	}
	if err != nil {
		b.err = err
		b.Close()
		return err
	}
	return nil
}

// scan decodes the current row into dest with scan plans made at the first
// row and kept while dest's types stay (pgx's rows do the same; ScanRow
// alone would plan every row again).
func (b *bufferedRows) scan(dest []any) error {
	values := b.rows[b.row]
	if len(dest) != len(b.fields) {
		return fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(b.fields), len(dest))
	}
	if b.plans == nil {
		b.plans = make([]pgtype.ScanPlan, len(dest))
		b.planned = make([]reflect.Type, len(dest))
	}
	tm := b.conn.Conn().TypeMap()
	for i, dst := range dest {
		if dst == nil {
			continue
		}
		if typ := reflect.TypeOf(dst); b.plans[i] == nil || b.planned[i] != typ {
			b.plans[i] = tm.PlanScan(b.fields[i].DataTypeOID, b.fields[i].Format, dst)
			b.planned[i] = typ
		}
		if err := b.plans[i].Scan(values[i], dst); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: b.fields[i].Name, Err: err}
		}
	}
	return nil
}

// Values decodes the current row into Go values, as pgx's rows do.
func (b *bufferedRows) Values() ([]any, error) {
	if b.closed || b.row < 0 || b.row >= len(b.rows) {
		return nil, errors.New("no row to read: call Next first")
	}
	tm := b.conn.Conn().TypeMap()
	values := make([]any, len(b.fields))
	for i, fd := range b.fields {
		buf := b.rows[b.row][i]
		if buf == nil {
			continue
		}
		if dt, ok := tm.TypeForOID(fd.DataTypeOID); ok {
			v, err := dt.Codec.DecodeValue(tm, fd.DataTypeOID, fd.Format, buf)
			if err != nil {
				b.err = err
				b.Close()
				return nil, err
			}
			values[i] = v
			continue
		}
		if fd.Format == pgx.TextFormatCode {
			values[i] = string(buf)
		} else {
			values[i] = slices.Clone(buf)
		}
	}
	return values, nil
}

// RawValues are the current row's bytes, as the replica sent them.
func (b *bufferedRows) RawValues() [][]byte {
	if b.row < 0 || b.row >= len(b.rows) {
		return nil
	}
	return b.rows[b.row]
}

// TypeMap is the replica connection's type map, which decodes the rows.
func (b *bufferedRows) TypeMap() *pgtype.Map { return b.conn.Conn().TypeMap() }

// Conn is the replica's connection while the rows are open.
func (b *bufferedRows) Conn() *pgx.Conn {
	if b.closed {
		return nil
	}
	return b.conn.Conn()
}

// isRecoveryConflict reports whether err is a read the replica cancelled
// because replaying the primary's WAL conflicted with it (40001
// "canceling statement due to conflict with recovery", or 40P01 with
// "conflict with recovery" in its detail or message: a buffer-pin
// deadlock): the primary has no such conflict, and a read is safe to
// repeat, so the read is made again there.
func isRecoveryConflict(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == "40001" || pgErr.Code == "40P01" &&
		(strings.Contains(pgErr.Message, "conflict with recovery") || strings.Contains(pgErr.Detail, "conflict with recovery"))
}

// QueryRow is Query's one row: pgx's own QueryRow defers its error to
// Scan, too late to make the read again on the primary.
func (r *ReadRouter) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := r.Query(ctx, sql, args...)
	return firstRow{rows: rows, err: err}
}

// Exec runs on the primary: an Exec is a write.
func (r *ReadRouter) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.primary.Exec(ctx, sql, args...)
}

// SendBatch sends a batch to the primary: a batch may write, and the
// compile's batch of reads (LoadCompileReads) runs in a worker, on the
// primary anyway.
func (r *ReadRouter) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return r.primary.SendBatch(ctx, b)
}

// Begin begins a transaction on the primary: what runs in a transaction
// writes, or reads what it writes.
func (r *ReadRouter) Begin(ctx context.Context) (pgx.Tx, error) {
	return r.primary.Begin(ctx)
}

// firstRow is the pgx.Row of rows' first row, as pgx's QueryRow reads it.
type firstRow struct {
	rows pgx.Rows
	err  error
}

// Scan reads the first row into dest; no row is pgx.ErrNoRows.
func (f firstRow) Scan(dest ...any) error {
	if f.err != nil {
		return f.err
	}
	defer f.rows.Close()
	if !f.rows.Next() {
		if err := f.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := f.rows.Scan(dest...); err != nil {
		return err
	}
	f.rows.Close()
	return f.rows.Err()
}

// Run checks the replica every CheckInterval until ctx ends, the first
// time at once.
func (r *ReadRouter) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.CheckInterval)
	defer t.Stop()
	for {
		r.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check measures the replica once and routes reads accordingly (Run calls
// it; a test may call it to decide at once).
func (r *ReadRouter) Check(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Each side within a fraction of the bound: a check that hangs must
	// not hold the route as it was.
	timeout := max(time.Second, r.opts.CheckInterval)
	replay, recovering, err := r.replayPosition(ctx, timeout)
	if err != nil {
		if ctx.Err() == nil {
			r.setReason(ReasonReplicaDown, err)
		}
		return
	}
	if !recovering {
		// Not a standby: the primary itself, or a promoted replica that
		// no longer follows it (its data stops at the promotion). Say so
		// once (setReason logs a change) and read the primary.
		r.samples = r.samples[:0]
		r.lagNanos.Store(0)
		r.setReason(ReasonReplicaNotStandby, errNotStandby)
		return
	}
	primaryLSN, perr := r.primaryPosition(ctx, timeout)
	now := time.Now()
	if perr != nil {
		r.primaryUnreachable(perr)
		return
	}
	r.samples = append(r.samples, walSample{at: now, lsn: primaryLSN})
	// The newest position older than MaxLag bounds the lag from below
	// well enough (a replica that has not replayed it is lagging); older
	// ones are not needed.
	keep := 0
	for keep < len(r.samples)-1 && now.Sub(r.samples[keep+1].at) > r.opts.MaxLag {
		keep++
	}
	r.samples = append(r.samples[:0], r.samples[keep:]...)
	var lag time.Duration
	for _, s := range r.samples {
		if s.lsn > replay {
			lag = now.Sub(s.at)
			break
		}
	}
	r.lagNanos.Store(int64(lag))
	switch {
	case lag > r.opts.MaxLag:
		r.setReason(ReasonReplicaLagging, nil)
	case r.samples[0].lsn > replay:
		// Not even the oldest position held is replayed, and it is too
		// young to call the replica lagging: its lag is unknown.
		r.setReason(ReasonReplicaUnchecked, nil)
	default:
		r.setReason(ReasonReplicaHealthy, nil)
	}
}

// errNotStandby is why reads go to the primary when the read URL's server
// is not a standby.
var errNotStandby = errors.New("the server at the read URL is not a standby (pg_is_in_recovery() is false): " +
	"the primary itself, or a promoted replica that no longer follows the primary")

// primaryUnreachable routes reads after a check could not read the
// primary's position (perr). A primary that is away (restarting) leaves
// the replica serving, under ReasonReplicaPrimaryDown, only if the last
// check that measured it found it healthy: it has every commit it
// received, the best copy there is. A replica that was lagging, unchecked
// or down is not promoted to serve by the primary's absence: its lag may
// be hours, and reads stay where they were. A slow answer or a primary
// at max_connections (53300) says nothing of the lag: the route stays as
// it was until a check can measure it.
func (r *ReadRouter) primaryUnreachable(perr error) {
	if !primaryDown(perr) {
		return
	}
	if reason := *r.reason.Load(); reason == ReasonReplicaHealthy || reason == ReasonReplicaPrimaryDown {
		r.setReason(ReasonReplicaPrimaryDown, perr)
	}
}

// primaryDown reports whether err, from reading the primary's position,
// means the primary is not there (refused, shutting down, starting up,
// connection lost) rather than slow to answer or busy (53300
// too_many_connections: it is up, and serving others).
func primaryDown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53300" {
		return false
	}
	return IsUnavailable(err) && !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded)
}

// replayPosition is the replica's replay position, and whether it is a
// standby at all (a standby that has replayed nothing yet is at 0).
func (r *ReadRouter) replayPosition(ctx context.Context, timeout time.Duration) (uint64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var recovering bool
	var replay *string
	err := r.replica.QueryRow(ctx, `SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text`).Scan(&recovering, &replay)
	if err != nil {
		return 0, false, fmt.Errorf("error reading the replica's replay position: %w", err)
	}
	if !recovering || replay == nil {
		return 0, recovering, nil
	}
	lsn, err := parseLSN(*replay)
	return lsn, true, err
}

// primaryPosition is the primary's current WAL position.
func (r *ReadRouter) primaryPosition(ctx context.Context, timeout time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var s string
	if err := r.primary.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s); err != nil {
		return 0, fmt.Errorf("error reading the primary's WAL position: %w", err)
	}
	return parseLSN(s)
}

// parseLSN reads Postgres' text form of a WAL position, "16/B374D848".
func parseLSN(s string) (uint64, error) {
	var hi, lo uint32
	if _, err := fmt.Sscanf(s, "%X/%X", &hi, &lo); err != nil {
		return 0, fmt.Errorf("error parsing WAL position %q: %w", s, err)
	}
	return uint64(hi)<<32 | uint64(lo), nil
}

// setReason routes reads for reason, saying so in the log when the route
// changes.
func (r *ReadRouter) setReason(reason string, cause error) {
	old := r.reason.Swap(&reason)
	if *old == reason || r.opts.Logger == nil {
		return
	}
	target, _ := r.Route()
	attrs := []any{slog.String("target", target), slog.String("reason", reason), slog.String("was", *old),
		slog.Duration("lag", r.Lag()), slog.Duration("max_lag", r.opts.MaxLag)}
	if cause != nil {
		attrs = append(attrs, slog.String("error", cause.Error()))
	}
	if target == TargetReplica {
		r.opts.Logger.Info("reads routed to the read replica", attrs...)
	} else {
		r.opts.Logger.Warn("reads routed to the primary: the read replica is not usable", attrs...)
	}
}

// notReplayedKey marks the context of a lookup made again on the primary
// because the replica did not have the row (counted as ReasonNotReplayed).
type notReplayedKey struct{}

// primaryIfNotReplayed runs read with ctx, and once more on the primary
// when q reads through a router that sent it to the replica and the
// replica answered NOT_FOUND: the row may have been committed on the
// primary and not replayed yet (a version activated a moment ago), and a
// lookup by id must not answer a false 404.
func primaryIfNotReplayed[T any](ctx context.Context, q *Queries, read func(context.Context) (T, error)) (T, error) {
	r, routed := q.db.(*ReadRouter)
	onReplica := routed && r.replicaServes(ctx)
	v, err := read(ctx)
	if onReplica && errors.Is(err, ErrNotFound) {
		return read(context.WithValue(WithPrimary(ctx), notReplayedKey{}, true))
	}
	return v, err
}

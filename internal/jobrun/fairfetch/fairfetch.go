// Package fairfetch makes River's producers fetch fairly across tenants: a
// driver that wraps River's and hands River a pilot (River's plugin
// interface, the one River Pro plugs in through) whose JobGetAvailable
// replaces River's fetch statement by the store's FairFetch. Each tenant
// with available jobs in the queue gets a fair share of its workers across
// the fleet — the tenants with the fewest jobs running first, one job each
// per round among equals, River's order (priority, scheduled_at, id) within
// a tenant and between ties — and, where a queue has a per-tenant cap, never
// more than the cap of one tenant's jobs running in that queue at once. Everything else River does
// (inserts, completions, rescues, listeners) is River's own.
package fairfetch

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivershared/baseservice"
	"github.com/riverqueue/river/rivershared/riverpilot"
	"github.com/riverqueue/river/rivershared/uniquestates"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/store"
)

// fetchTimeout bounds one fetch, as River bounds its own (its "hot
// operation" timeout): a fetch waiting on the queue's lock behind a stuck
// one gives up, and the producer fetches again later.
const fetchTimeout = 10 * time.Second

// Driver is a River driver whose producers fetch fairly. It is the wrapped
// driver in every other respect, listener included.
type Driver struct {
	riverdriver.Driver[pgx.Tx]
	pilot *Pilot
}

var _ riverdriver.Driver[pgx.Tx] = (*Driver)(nil)

// Wrap returns driver fetching fairly from pool, the pool driver runs on.
// tenantCaps maps a queue to the most jobs of one tenant running in it at
// once; a queue not in it has no cap (round-robin only).
func Wrap(driver riverdriver.Driver[pgx.Tx], pool *pgxpool.Pool, tenantCaps map[string]int) *Driver {
	caps := make(map[string]int, len(tenantCaps))
	for q, n := range tenantCaps {
		if n > 0 {
			caps[q] = n
		}
	}
	return &Driver{Driver: driver, pilot: &Pilot{store: store.New(pool), caps: caps}}
}

// PluginInit is part of River's driver plugin interface; the pilot needs
// nothing from River's archetype.
func (d *Driver) PluginInit(*baseservice.Archetype) {}

// PluginPilot returns the fair pilot: River calls it once, building its
// client, and uses the pilot for every fetch.
func (d *Driver) PluginPilot() riverpilot.Pilot { return d.pilot }

// Pilot is River's standard pilot with a fair JobGetAvailable.
type Pilot struct {
	riverpilot.StandardPilot
	store *store.Queries
	caps  map[string]int
}

// JobGetAvailable locks up to params.MaxToLock jobs of params.Queue for the
// producer, fairly. River passes its driver's executor, which runs on the
// same pool as p.store; the store's transaction takes its place so that the
// queue's lock and the fetch share one.
func (p *Pilot) JobGetAvailable(ctx context.Context, _ riverdriver.Executor, _ riverpilot.ProducerState, params *riverdriver.JobGetAvailableParams) (*riverdriver.JobGetAvailableResult, error) {
	if params.MaxToLock <= 0 {
		return &riverdriver.JobGetAvailableResult{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	rows, err := p.store.FairFetch(ctx, store.FairFetchParams{
		Schema:         params.Schema,
		Queue:          params.Queue,
		Kinds:          params.Kind,
		Now:            params.Now,
		Max:            params.MaxToLock,
		TenantCap:      p.caps[params.Queue],
		ClientID:       params.ClientID,
		MaxAttemptedBy: params.MaxAttemptedBy,
	})
	if err != nil {
		return nil, err
	}
	return decode(rows), nil
}

// decode turns the fetched rows into River's job rows as River's pgx driver
// does. Every row has been moved to running, so a row whose errors cannot
// be decoded is still returned, with its error in DecodeErrors: River then
// fails that attempt rather than leave the job running with no worker.
func decode(rows []store.FetchedRiverJob) *riverdriver.JobGetAvailableResult {
	res := &riverdriver.JobGetAvailableResult{Jobs: make([]*rivertype.JobRow, len(rows))}
	for i, r := range rows {
		job, err := jobRow(r)
		res.Jobs[i] = job
		if err != nil {
			if res.DecodeErrors == nil {
				res.DecodeErrors = map[int64]error{}
			}
			res.DecodeErrors[job.ID] = err
		}
	}
	return res
}

// jobRow is one fetched row as River's driver decodes it (times in UTC,
// the unique states from their bitmask); on an undecodable attempt error
// it returns the row without its errors, and the error.
func jobRow(r store.FetchedRiverJob) (*rivertype.JobRow, error) {
	var decodeErr error
	attemptErrors := make([]rivertype.AttemptError, len(r.Errors))
	for i, raw := range r.Errors {
		if err := riverdriver.UnmarshalAttemptError(raw, &attemptErrors[i]); err != nil {
			decodeErr = fmt.Errorf("error unmarshaling `errors`: %w", err)
			attemptErrors = nil
			break
		}
	}
	var uniqueStates byte
	if r.UniqueStates.Valid && len(r.UniqueStates.Bytes) > 0 {
		uniqueStates = r.UniqueStates.Bytes[0]
	}
	return &rivertype.JobRow{
		ID:           r.ID,
		Attempt:      max(int(r.Attempt), 0),
		AttemptedAt:  utc(r.AttemptedAt),
		AttemptedBy:  r.AttemptedBy,
		CreatedAt:    r.CreatedAt.UTC(),
		EncodedArgs:  r.Args,
		Errors:       attemptErrors,
		FinalizedAt:  utc(r.FinalizedAt),
		Kind:         r.Kind,
		MaxAttempts:  max(int(r.MaxAttempts), 0),
		Metadata:     r.Metadata,
		Priority:     max(int(r.Priority), 0),
		Queue:        r.Queue,
		ScheduledAt:  r.ScheduledAt.UTC(),
		State:        rivertype.JobState(r.State),
		Tags:         r.Tags,
		UniqueKey:    r.UniqueKey,
		UniqueStates: uniquestates.UniqueBitmaskToStates(uniqueStates),
	}, decodeErr
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

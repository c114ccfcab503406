package doctor

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ReplicaReport is what doctor found of the read replica
// (BPC_DATABASE_READ_URL).
type ReplicaReport struct {
	// Reachable is false when the replica could not be read (Error says
	// why): the service then reads from the primary, which is not a fault
	// of the data, so it leaves the report OK.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Standby is true while the replica replays the primary's WAL
	// (pg_is_in_recovery). A server that is not a standby (the primary
	// itself, a promoted replica) serves no reads: the service's router
	// reads the primary instead (store.ReasonReplicaNotStandby). That
	// fails the report: the replica the operator meant to have is not
	// there, and nothing else says so but a log line.
	Standby bool `json:"standby"`
	// PrimaryItself is true when the read URL reaches the primary's own
	// server (the same system identifier and start time, not a standby).
	PrimaryItself bool `json:"primary_itself"`
	// SameCluster is true when the replica is a copy of the primary's
	// cluster (the same system identifier): a server that is not would
	// answer the public pages with other data, which fails the report.
	SameCluster bool `json:"same_cluster"`
	// ReplayLagBytes is how much WAL the primary has written that the
	// replica has not replayed yet.
	ReplayLagBytes int64 `json:"replay_lag_bytes"`
}

// CheckReplica inspects the read replica against the primary.
func CheckReplica(ctx context.Context, primary, replica *pgxpool.Pool) (ReplicaReport, error) {
	var rep ReplicaReport
	var primaryID int64
	var primaryLSN string
	var primaryStart time.Time
	if err := primary.QueryRow(ctx, `SELECT system_identifier, pg_current_wal_lsn()::text, pg_postmaster_start_time()
		FROM pg_control_system()`).Scan(&primaryID, &primaryLSN, &primaryStart); err != nil {
		return rep, fmt.Errorf("error reading the primary's WAL position: %w", err)
	}
	var replicaID int64
	var lag *int64
	var replicaStart time.Time
	err := replica.QueryRow(ctx, `SELECT system_identifier, pg_is_in_recovery(),
			pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::bigint, pg_postmaster_start_time()
		FROM pg_control_system()`, primaryLSN).Scan(&replicaID, &rep.Standby, &lag, &replicaStart)
	if err != nil {
		rep.Error = oneLine(err)
		return rep, nil
	}
	rep.Reachable = true
	rep.SameCluster = replicaID == primaryID
	rep.PrimaryItself = rep.SameCluster && !rep.Standby && replicaStart.Equal(primaryStart)
	if lag != nil {
		rep.ReplayLagBytes = max(0, *lag)
	}
	return rep, nil
}

// OK reports whether the replica, if reachable, is a standby of the
// primary's cluster. One that cannot be reached leaves the report OK: the
// service reads the primary meanwhile, and it may be back soon.
func (r ReplicaReport) OK() bool { return !r.Reachable || (r.SameCluster && r.Standby) }

// writeText prints the replica's line.
func (r ReplicaReport) writeText(w io.Writer) {
	switch {
	case !r.Reachable:
		fmt.Fprintf(w, "read replica: unreachable, reads go to the primary (%s)\n", r.Error)
	case !r.SameCluster:
		fmt.Fprintln(w, "read replica: NOT a copy of the primary's cluster (another system identifier): fix BPC_DATABASE_READ_URL")
	case r.PrimaryItself:
		fmt.Fprintln(w, "read replica: NOT a replica: BPC_DATABASE_READ_URL reaches the primary itself, so reads go to the primary; set it to a standby's URL or unset it")
	case !r.Standby:
		fmt.Fprintln(w, "read replica: NOT a standby (pg_is_in_recovery() is false: promoted?): it no longer follows the primary, so reads go to the primary; fix BPC_DATABASE_READ_URL")
	default:
		fmt.Fprintf(w, "read replica: streaming, %d bytes of WAL behind the primary\n", r.ReplayLagBytes)
	}
}

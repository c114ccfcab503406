// Package doctor checks a database the way `bpc doctor` reports on it: the
// schema is current, River's jobs and the SSOT jobs mirror agree, and every
// tenant's audit chain verifies. It only reads.
package doctor

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bpc-platform/bpc/migrations"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Report is what Check found, as `bpc doctor --json` prints it.
type Report struct {
	Schema      string                  `json:"schema"`
	Consistency store.ConsistencyReport `json:"consistency"`
	AuditChains map[string]string       `json:"audit_chains"`
	// Replica is the read replica's state, when BPC_DATABASE_READ_URL is
	// set (Report.AddReplica).
	Replica *ReplicaReport `json:"replica,omitempty"`
	OK      bool           `json:"ok"`

	// tenants are the tenants' slugs in the store's order, the order of
	// the text report's audit chain lines.
	tenants []string
}

// Check inspects the database behind pool. A broken audit chain or a drift
// is a finding in the report (OK false), not an error; errors are for a
// database that cannot be read.
func Check(ctx context.Context, pool *pgxpool.Pool) (Report, error) {
	s := store.New(pool)
	rep := Report{AuditChains: map[string]string{}, OK: true}
	st, err := migrations.Check(ctx, pool)
	if err != nil {
		return rep, err
	}
	rep.Schema = st.String()
	rep.OK = st.Current()
	if rep.Consistency, err = s.CheckConsistency(ctx); err != nil {
		return rep, err
	}
	rep.OK = rep.OK && rep.Consistency.OK()
	tenants, err := s.ListTenants(ctx)
	if err != nil {
		return rep, err
	}
	for _, t := range tenants {
		rep.tenants = append(rep.tenants, t.Slug)
		n, err := passport.VerifyAuditChain(ctx, s, t.TenantID)
		if err != nil {
			rep.AuditChains[t.Slug] = "BROKEN: " + err.Error()
			rep.OK = false
			continue
		}
		rep.AuditChains[t.Slug] = fmt.Sprintf("ok (%d events)", n)
	}
	return rep, nil
}

// AddReplica adds the read replica's report; a replica that is not a copy
// of the primary makes the report not OK.
func (r *Report) AddReplica(rep ReplicaReport) {
	r.Replica = &rep
	r.OK = r.OK && rep.OK()
}

// WriteText prints the report for a person, one finding a line, ending
// with "all good" when nothing is wrong.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "schema:       %s\n", r.Schema)
	fmt.Fprintf(w, "jobs mirror:  %d River jobs, %d SSOT rows, %d drift(s)\n",
		r.Consistency.RiverJobs, r.Consistency.SSOTJobs, r.Consistency.DriftCount)
	for _, d := range r.Consistency.Drifts {
		fmt.Fprintf(w, "  - river_job_id=%v job_id=%v: %s\n", deref(d.RiverJobID), deref(d.JobID), d.Problem)
	}
	for _, slug := range r.tenants {
		fmt.Fprintf(w, "audit chain:  %s %s\n", slug, r.AuditChains[slug])
	}
	if r.Replica != nil {
		r.Replica.writeText(w)
	}
	if r.OK {
		fmt.Fprintln(w, "all good")
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "-"
	}
	return *p
}

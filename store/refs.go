package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// refTables maps each entity a job payload may name (the values of
// jobargs.Entity) to its table and key. Every domain table is keyed
// (tenant_id, id), so a lookup scoped to the job's tenant is an index probe.
var refTables = map[string][2]string{
	"document":             {"documents", "document_id"},
	"document_version":     {"document_versions", "document_version_id"},
	"snapshot":             {"data_snapshots", "snapshot_id"},
	"passport":             {"passports", "passport_id"},
	"passport_version":     {"passport_versions", "passport_version_id"},
	"rule_package_version": {"rule_package_versions", "rule_package_version_id"},
	"webhook_delivery":     {"webhook_deliveries", "webhook_delivery_id"},
}

// RefKey names a row a job's args refer to: its entity (a key of the
// entity map, as jobargs.Entity spells it), its tenant and its id.
type RefKey struct {
	Entity   string
	TenantID uuid.UUID
	ID       uuid.UUID
}

// RefCheck is the answer of CheckRefs: the start of the transaction the
// check ran in, the first tenant that does not exist (nil when all do) and
// the index of the first ref whose row does not exist in its tenant (-1
// when all do).
type RefCheck struct {
	TxStart       time.Time
	MissingTenant *uuid.UUID
	MissingRef    int
}

// CheckRefs asks, in one statement, whether tenants and the rows refs name
// exist (RefCheck).
func (q *Queries) CheckRefs(ctx context.Context, tenants []uuid.UUID, refs []RefKey) (RefCheck, error) {
	var c RefCheck
	sql, args, scan, err := refChecks(tenants, refs, &c)
	if err != nil {
		return RefCheck{}, err
	}
	if err := scan(q.db.QueryRow(ctx, sql, args...)); err != nil {
		return RefCheck{}, fmt.Errorf("error checking references: %w", err)
	}
	return c, nil
}

// QueueCheckRefs queues CheckRefs' statement on b; dst holds its answer
// once b has run.
func QueueCheckRefs(b *pgx.Batch, tenants []uuid.UUID, refs []RefKey, dst *RefCheck) error {
	sql, args, scan, err := refChecks(tenants, refs, dst)
	if err != nil {
		return err
	}
	b.Queue(sql, args...).QueryRow(scan)
	return nil
}

// missingTenantSQL returns the first tenant id that does not exist.
const missingTenantSQL = `SELECT t.id FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n)
	WHERE NOT EXISTS (SELECT 1 FROM tenants x WHERE x.tenant_id = t.id) ORDER BY t.n LIMIT 1`

// refChecks is CheckRefs' statement in one query: the transaction's start
// (the mirror's updated_at), the first tenant that does not exist and the
// ordinal (1-based) of the first ref that does not (NULL when all do). Its
// refs are probed one subquery per entity present, so that Postgres, which
// plans the statement anew for each request, plans only those (a CASE over
// every entity cost more backend CPU to plan than the whole insert).
func refChecks(tenants []uuid.UUID, refs []RefKey, dst *RefCheck) (string, []any, func(pgx.Row) error, error) {
	var present []string
	byEntity := map[string]*refColumns{}
	for i, r := range refs {
		if _, ok := refTables[r.Entity]; !ok {
			return "", nil, nil, fmt.Errorf("error checking references: unknown entity %q", r.Entity)
		}
		c := byEntity[r.Entity]
		if c == nil {
			c = &refColumns{}
			byEntity[r.Entity] = c
			present = append(present, r.Entity)
		}
		c.tenants = append(c.tenants, r.TenantID)
		c.ids = append(c.ids, r.ID)
		c.ordinals = append(c.ordinals, int32(i+1)) //nolint:gosec // at most a batch's refs
	}
	slices.Sort(present)
	// The cache's key, made without fmt: it is made for every enqueue. Each
	// name is one of refTables' (checked above), none holding a comma.
	key := strings.Join(present, ",")
	sql, ok := refChecksSQL.Load(key)
	if !ok {
		probes := make([]string, len(present))
		for k, e := range present {
			t, n := refTables[e], 2+3*k
			probes[k] = fmt.Sprintf(`(SELECT min(r.n) FROM unnest($%d::uuid[], $%d::uuid[], $%d::int[]) AS r(tenant_id, id, n)
	WHERE NOT EXISTS (SELECT 1 FROM %s x WHERE x.tenant_id = r.tenant_id AND x.%s = r.id))`, n, n+1, n+2, t[0], t[1])
		}
		refsSQL := "NULL::int"
		if len(probes) > 0 {
			refsSQL = "least(" + strings.Join(probes, ", ") + ")"
		}
		sql, _ = refChecksSQL.LoadOrStore(key, `SELECT now(), (`+missingTenantSQL+`), `+refsSQL)
	}
	args := make([]any, 1, 1+3*len(present))
	args[0] = uuidArray(tenants)
	for _, e := range present {
		c := byEntity[e]
		args = append(args, c.tenants, c.ids, c.ordinals)
	}
	scan := func(row pgx.Row) error {
		var missingTenant *[16]byte
		var missingRef *int
		if err := row.Scan(&dst.TxStart, &missingTenant, &missingRef); err != nil {
			return err
		}
		dst.MissingTenant, dst.MissingRef = nil, -1
		if missingTenant != nil {
			id := uuid.UUID(*missingTenant)
			dst.MissingTenant = &id
		}
		if missingRef != nil {
			dst.MissingRef = *missingRef - 1
		}
		return nil
	}
	return sql.(string), args, scan, nil
}

// refColumns are the parameters of one entity's probe in refChecks.
type refColumns struct {
	tenants, ids [][16]byte
	ordinals     []int32
}

// refChecksSQL caches refChecks' statements by the entities they probe.
var refChecksSQL sync.Map

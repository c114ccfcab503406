package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/jobargs"
)

// refTables maps each entity a job payload may name to its table and key.
// Every domain table is keyed (tenant_id, id), so a lookup scoped to the
// job's tenant is an index probe.
var refTables = map[jobargs.Entity][2]string{
	jobargs.EntityDocument:           {"documents", "document_id"},
	jobargs.EntityDocumentVersion:    {"document_versions", "document_version_id"},
	jobargs.EntitySnapshot:           {"data_snapshots", "snapshot_id"},
	jobargs.EntityPassport:           {"passports", "passport_id"},
	jobargs.EntityPassportVersion:    {"passport_versions", "passport_version_id"},
	jobargs.EntityRulePackageVersion: {"rule_package_versions", "rule_package_version_id"},
	jobargs.EntityWebhookDelivery:    {"webhook_deliveries", "webhook_delivery_id"},
}

// missingRefSQL returns the ordinal (1-based) of the first ref whose row does
// not exist in its tenant, in one round trip for any number of refs. The
// CASE arms are built from refTables once; no input reaches the SQL text.
var missingRefSQL = func() string {
	arms := ""
	for _, e := range []jobargs.Entity{
		jobargs.EntityDocument, jobargs.EntityDocumentVersion, jobargs.EntitySnapshot,
		jobargs.EntityPassport, jobargs.EntityPassportVersion, jobargs.EntityRulePackageVersion,
		jobargs.EntityWebhookDelivery,
	} {
		t := refTables[e]
		arms += fmt.Sprintf("\n    WHEN '%s' THEN EXISTS (SELECT 1 FROM %s x WHERE x.tenant_id = r.tenant_id AND x.%s = r.id)", e, t[0], t[1])
	}
	return `SELECT r.n FROM unnest($1::text[], $2::uuid[], $3::uuid[]) WITH ORDINALITY AS r(entity, tenant_id, id, n)
WHERE NOT (CASE r.entity` + arms + `
    ELSE false END)
ORDER BY r.n LIMIT 1`
}()

// MissingRef returns the index in refs of the first id whose row does not
// exist in the ref's tenant, or -1 when all exist.
func (q *Queries) MissingRef(ctx context.Context, refs []jobargs.Ref) (int, error) {
	if len(refs) == 0 {
		return -1, nil
	}
	entities, tenants, ids, err := refArrays(refs)
	if err != nil {
		return 0, err
	}
	var n int
	err = q.db.QueryRow(ctx, missingRefSQL, entities, tenants, ids).Scan(&n)
	switch {
	case err == nil:
		return n - 1, nil
	case errors.Is(err, pgx.ErrNoRows):
		return -1, nil
	}
	return 0, fmt.Errorf("error checking references: %w", err)
}

// refArrays are missingRefSQL's parameters for refs.
func refArrays(refs []jobargs.Ref) (entities []string, tenants, ids [][16]byte, err error) {
	entities = make([]string, len(refs))
	tenants = make([][16]byte, len(refs))
	ids = make([][16]byte, len(refs))
	for i, r := range refs {
		if _, ok := refTables[r.Entity]; !ok {
			return nil, nil, nil, fmt.Errorf("error checking references: unknown entity %q", r.Entity)
		}
		entities[i], tenants[i], ids[i] = string(r.Entity), r.TenantID, r.ID
	}
	return entities, tenants, ids, nil
}

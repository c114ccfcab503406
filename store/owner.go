package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ownedTables are the tables whose rows have a globally unique id and a
// tenant: the resources the admin API names by id alone.
var ownedTables = []struct{ table, id string }{
	{"jobs", "job_id"},
	{"api_keys", "api_key_id"},
	{"webhook_endpoints", "webhook_endpoint_id"},
	{"webhook_subscriptions", "webhook_subscription_id"},
	{"webhook_deliveries", "webhook_delivery_id"},
	{"documents", "document_id"},
	{"document_versions", "document_version_id"},
	{"facts", "fact_id"},
	{"data_snapshots", "snapshot_id"},
	{"rule_packages", "rule_package_id"},
	{"rule_package_versions", "rule_package_version_id"},
	{"battery_products", "battery_product_id"},
	{"passports", "passport_id"},
	{"passport_versions", "passport_version_id"},
}

// tenantOfIDSQL looks an id up in every owned table at once, each by its
// primary key.
var tenantOfIDSQL = func() string {
	s := ""
	for i, t := range ownedTables {
		if i > 0 {
			s += "\nUNION ALL "
		}
		s += fmt.Sprintf("SELECT tenant_id FROM %s WHERE %s = $1", t.table, t.id)
	}
	return s + "\nLIMIT 1"
}()

// TenantOfID returns the tenant owning the resource with the globally
// unique id (a job, an API key, a webhook endpoint, subscription or
// delivery, a document or version, a fact, a snapshot, a rule package or
// version, a product, a passport or version); found is false when no
// resource has it.
func (q *Queries) TenantOfID(ctx context.Context, id uuid.UUID) (tenantID uuid.UUID, found bool, err error) {
	err = q.db.QueryRow(ctx, tenantOfIDSQL, id).Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("error looking up the tenant of %s: %w", id, err)
	}
	return tenantID, true, nil
}

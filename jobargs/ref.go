package jobargs

import "github.com/google/uuid"

// Entity names the kind of row a job payload refers to.
type Entity string

// The rows job payloads refer to. The store maps each to its table.
const (
	EntityDocument           Entity = "document"
	EntityDocumentVersion    Entity = "document_version"
	EntitySnapshot           Entity = "snapshot"
	EntityPassport           Entity = "passport"
	EntityPassportVersion    Entity = "passport_version"
	EntityRulePackageVersion Entity = "rule_package_version"
	EntityWebhookDelivery    Entity = "webhook_delivery"
)

// Entities lists every Entity, the one list of them: the store's reference
// check needs a table for each, and a Ref naming any other is refused.
var Entities = []Entity{
	EntityDocument, EntityDocumentVersion, EntitySnapshot, EntityPassport,
	EntityPassportVersion, EntityRulePackageVersion, EntityWebhookDelivery,
}

// Ref is an id a job payload names: the row must exist in the job's tenant
// before the job is enqueued, so that a foreign or made-up id is a 404 at
// the API rather than a job that fails later.
type Ref struct {
	// Field is the payload field that holds the id, e.g. "snapshot_id".
	Field    string
	Entity   Entity
	TenantID uuid.UUID
	ID       uuid.UUID
}

func (b Base) ref(field string, e Entity, id uuid.UUID) Ref {
	return Ref{Field: field, Entity: e, TenantID: b.TenantID, ID: id}
}

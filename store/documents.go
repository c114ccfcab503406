package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/core/hash"
)

const documentColumns = `document_id, tenant_id, kind, name, created_at`

const documentVersionColumns = `document_version_id, tenant_id, document_id, version, mime_type,
	content_sha256, octet_length(content) AS size_bytes, status, error, fact_count, created_at, processed_at`

// CreateDocument creates a document of kind (passport.CheckDocumentKind
// says which kinds there are).
func (q *Queries) CreateDocument(ctx context.Context, tenantID uuid.UUID, kind, name string) (bpctype.Document, error) {
	return create[bpctype.Document](ctx, q.db, "document", "tenant", tenantID, `INSERT INTO documents (document_id, tenant_id, kind, name)
		VALUES ($1, $2, $3, $4) RETURNING `+documentColumns, uuid.New(), tenantID, kind, name)
}

// GetDocument returns the tenant's document.
func (q *Queries) GetDocument(ctx context.Context, tenantID, id uuid.UUID) (bpctype.Document, error) {
	return getOne[bpctype.Document](ctx, q.db, "document", id,
		`SELECT `+documentColumns+` FROM documents WHERE tenant_id = $1 AND document_id = $2`, tenantID, id)
}

// ListDocuments returns the tenant's documents, oldest first.
func (q *Queries) ListDocuments(ctx context.Context, tenantID uuid.UUID) ([]bpctype.Document, error) {
	return list[bpctype.Document](ctx, q.db, "documents",
		`SELECT `+documentColumns+` FROM documents WHERE tenant_id = $1 ORDER BY created_at, document_id`, tenantID)
}

// CreateDocumentVersion stores content as the document's next version
// (UPLOADED). The same bytes uploaded again return the existing version and
// existed = true. Run it in the transaction that also enqueues PARSE_FACTS,
// on content passport.CheckDocumentContent accepts.
func (q *Queries) CreateDocumentVersion(ctx context.Context, tenantID, documentID uuid.UUID, mimeType string, content []byte) (v bpctype.DocumentVersion, existed bool, err error) {
	if err := q.lockParent(ctx, "document", tenantID, documentID,
		`SELECT document_id FROM documents WHERE tenant_id = $1 AND document_id = $2 FOR UPDATE`); err != nil {
		return bpctype.DocumentVersion{}, false, err
	}
	sum := hash.SHA256Hex(content)
	if existing, found, err := findOne[bpctype.DocumentVersion](ctx, q.db, "document content", `SELECT `+documentVersionColumns+`
		FROM document_versions WHERE document_id = $1 AND content_sha256 = $2`, documentID, sum); err != nil || found {
		return existing, found, err
	}
	v, err = queryOne[bpctype.DocumentVersion](ctx, q.db, `INSERT INTO document_versions
		(document_version_id, tenant_id, document_id, version, mime_type, content, content_sha256)
		SELECT $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6 FROM document_versions WHERE document_id = $3
		RETURNING `+documentVersionColumns, uuid.New(), tenantID, documentID, mimeType, content, sum)
	if err != nil {
		return bpctype.DocumentVersion{}, false, fmt.Errorf("error storing document version: %w", err)
	}
	return v, false, nil
}

// GetDocumentVersion returns a version without its content.
func (q *Queries) GetDocumentVersion(ctx context.Context, tenantID, id uuid.UUID) (bpctype.DocumentVersion, error) {
	return getOne[bpctype.DocumentVersion](ctx, q.db, "document version", id,
		`SELECT `+documentVersionColumns+` FROM document_versions
		WHERE tenant_id = $1 AND document_version_id = $2`, tenantID, id)
}

// ListDocumentVersions returns a document's versions, newest first.
func (q *Queries) ListDocumentVersions(ctx context.Context, tenantID, documentID uuid.UUID) ([]bpctype.DocumentVersion, error) {
	return list[bpctype.DocumentVersion](ctx, q.db, "document versions",
		`SELECT `+documentVersionColumns+` FROM document_versions
		WHERE tenant_id = $1 AND document_id = $2 ORDER BY version DESC`, tenantID, documentID)
}

// VersionToParse is a document version locked for parsing: its row, its
// document's kind and its content.
type VersionToParse struct {
	Version bpctype.DocumentVersion
	Kind    string
	Content []byte
}

// LockDocumentVersionForParse locks a version (FOR UPDATE) and loads what
// PARSE_FACTS needs.
func (q *Queries) LockDocumentVersionForParse(ctx context.Context, tenantID, id uuid.UUID) (VersionToParse, error) {
	var out VersionToParse
	v, err := queryOne[bpctype.DocumentVersion](ctx, q.db, `SELECT `+documentVersionColumns+` FROM document_versions
		WHERE tenant_id = $1 AND document_version_id = $2 FOR UPDATE`, tenantID, id)
	if err != nil {
		return out, notFound(err, "document version", id)
	}
	out.Version = v
	err = q.db.QueryRow(ctx, `SELECT d.kind, v.content FROM document_versions v
		JOIN documents d ON d.tenant_id = v.tenant_id AND d.document_id = v.document_id
		WHERE v.tenant_id = $1 AND v.document_version_id = $2`, tenantID, id).Scan(&out.Kind, &out.Content)
	if err != nil {
		return out, fmt.Errorf("error loading document version %s: %w", id, err)
	}
	return out, nil
}

// MarkDocumentVersionValidated sets a version VALIDATED with its fact count.
func (q *Queries) MarkDocumentVersionValidated(ctx context.Context, tenantID, id uuid.UUID, factCount int) error {
	_, err := q.db.Exec(ctx, `UPDATE document_versions SET status = 'VALIDATED', fact_count = $3, error = NULL, processed_at = now()
		WHERE tenant_id = $1 AND document_version_id = $2`, tenantID, id, factCount)
	if err != nil {
		return fmt.Errorf("error validating document version %s: %w", id, err)
	}
	return nil
}

// MarkDocumentVersionRejected sets a version REJECTED with the parse error.
func (q *Queries) MarkDocumentVersionRejected(ctx context.Context, tenantID, id uuid.UUID, cause *errcode.Error) error {
	detail := map[string]any{"code": cause.Code, "message": cause.Message}
	if cause.Field != "" {
		detail["field"] = cause.Field
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = q.db.Exec(ctx, `UPDATE document_versions SET status = 'REJECTED', error = $3, fact_count = NULL, processed_at = now()
		WHERE tenant_id = $1 AND document_version_id = $2`, tenantID, id, b)
	if err != nil {
		return fmt.Errorf("error rejecting document version %s: %w", id, err)
	}
	return nil
}

const factColumns = `fact_id, tenant_id, fact_type, fact_key, schema_version, payload_canonical,
	payload_hash, source_document_version_id, created_at`

// InsertFacts stores the facts parsed from a document version and records
// that the version yielded them. A fact already stored with the same (type,
// key, schema version, payload hash) is reused, so parsing the same content
// twice adds nothing. It returns how many facts were new.
func (q *Queries) InsertFacts(ctx context.Context, tenantID, versionID uuid.UUID, fs []facts.Fact) (int, error) {
	if len(fs) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(fs))
	types := make([]string, len(fs))
	keys := make([]string, len(fs))
	schemas := make([]int32, len(fs))
	payloads := make([][]byte, len(fs))
	hashes := make([]string, len(fs))
	for i, f := range fs {
		ids[i], types[i], keys[i], schemas[i], payloads[i], hashes[i] = uuid.New(), f.FactType, f.FactKey, int32(f.SchemaVersion), f.Payload, f.PayloadHash
	}
	tag, err := q.db.Exec(ctx, `INSERT INTO facts (fact_id, tenant_id, fact_type, fact_key, schema_version,
			payload_canonical, payload_hash, source_document_version_id)
		SELECT u.id, $1, u.typ, u.key, u.schema, u.payload, u.hash, $2
		FROM unnest($3::uuid[], $4::text[], $5::text[], $6::int[], $7::bytea[], $8::text[])
			AS u(id, typ, key, schema, payload, hash)
		ON CONFLICT ON CONSTRAINT facts_identity_uniq DO NOTHING`,
		tenantID, versionID, ids, types, keys, schemas, payloads, hashes)
	if err != nil {
		return 0, fmt.Errorf("error storing facts: %w", err)
	}
	_, err = q.db.Exec(ctx, `INSERT INTO document_version_facts (tenant_id, document_version_id, fact_id)
		SELECT $1, $2, f.fact_id
		FROM unnest($3::text[], $4::text[], $5::int[], $6::text[]) AS u(typ, key, schema, hash)
		JOIN facts f ON f.tenant_id = $1 AND f.fact_type = u.typ AND f.fact_key = u.key
			AND f.schema_version = u.schema AND f.payload_hash = u.hash
		ON CONFLICT DO NOTHING`, tenantID, versionID, types, keys, schemas, hashes)
	if err != nil {
		return 0, fmt.Errorf("error recording the facts of document version %s: %w", versionID, err)
	}
	return int(tag.RowsAffected()), nil
}

// FactFilter selects facts; zero fields do not filter.
type FactFilter struct {
	TenantID          uuid.UUID
	DocumentVersionID uuid.UUID
	FactType          string
	Limit             int
}

// ListFacts returns the tenant's facts by type and key, at most f.Limit (default 1000).
func (q *Queries) ListFacts(ctx context.Context, f FactFilter) ([]bpctype.Fact, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	return list[bpctype.Fact](ctx, q.db, "facts",
		`SELECT `+factColumns+` FROM facts
		WHERE tenant_id = $1
		  AND ($2::uuid IS NULL OR fact_id IN (SELECT fact_id FROM document_version_facts
		                                        WHERE tenant_id = $1 AND document_version_id = $2))
		  AND ($3 = '' OR fact_type = $3)
		ORDER BY fact_type, fact_key, created_at, fact_id LIMIT $4`,
		f.TenantID, nullUUID(f.DocumentVersionID), f.FactType, limit)
}

// FactsOfDocumentVersions returns the ids of the facts the given versions
// yielded (including facts first stored from an earlier version).
func (q *Queries) FactsOfDocumentVersions(ctx context.Context, tenantID uuid.UUID, versionIDs []uuid.UUID) ([]uuid.UUID, error) {
	return collect(ctx, q.db, "facts of document versions", pgx.RowTo[uuid.UUID], `SELECT DISTINCT fact_id FROM document_version_facts
		WHERE tenant_id = $1 AND document_version_id = ANY($2) ORDER BY fact_id`, tenantID, versionIDs)
}

func nullUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// RequireDocumentVersions returns NOT_FOUND naming the first listed version
// the tenant does not have.
func (q *Queries) RequireDocumentVersions(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) error {
	var missing uuid.UUID
	err := q.db.QueryRow(ctx, `SELECT u.id FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n)
		WHERE NOT EXISTS (SELECT 1 FROM document_versions v WHERE v.tenant_id = $1 AND v.document_version_id = u.id)
		ORDER BY u.n LIMIT 1`, tenantID, ids).Scan(&missing)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("error checking document versions: %w", err)
	}
	return errcode.New(errcode.NotFound, "document version %s not found", missing)
}

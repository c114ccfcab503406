package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Audit events of snapshots.
const (
	aggregateSnapshot   = "DataSnapshot"
	eventSnapshotSealed = "snapshot.sealed"
)

func (s *Server) handleCreateSnapshot(w http.ResponseWriter, r *http.Request) {
	var in tenantRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sn, err := s.Store.CreateSnapshot(r.Context(), s.Store.Pool, tenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sn)
}

func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request) {
	serveByID(s, w, r, s.Store.GetSnapshot)
}

type addItemsRequest struct {
	TenantID           string   `json:"tenant_id"`
	FactIDs            []string `json:"fact_ids"`
	DocumentVersionIDs []string `json:"document_version_ids"`
}

type addItemsResponse struct {
	Snapshot store.Snapshot `json:"snapshot"`
	Added    int            `json:"added"`
}

// parseUUIDs parses a list of ids, naming the offending element.
func parseUUIDs(field string, values []string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, len(values))
	for i, v := range values {
		id, err := parseUUID(field+"["+strconv.Itoa(i)+"]", v)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// handleAddSnapshotItems adds facts to a BUILDING snapshot: the listed facts
// and every fact of the listed document versions.
func (s *Server) handleAddSnapshotItems(w http.ResponseWriter, r *http.Request) {
	var in addItemsRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	snapshotID, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case len(in.FactIDs) == 0 && len(in.DocumentVersionIDs) == 0:
		s.writeError(w, r, errcode.Invalid("fact_ids", "fact_ids or document_version_ids must list at least one id"))
		return
	case len(in.FactIDs)+len(in.DocumentVersionIDs) > maxItemIDs:
		s.writeError(w, r, errcode.Invalid("fact_ids", "fact_ids and document_version_ids may list at most %d ids together", maxItemIDs))
		return
	}
	factIDs, err := parseUUIDs("fact_ids", in.FactIDs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	versionIDs, err := parseUUIDs("document_version_ids", in.DocumentVersionIDs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var out addItemsResponse
	err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
		if len(versionIDs) > 0 {
			if err := s.requireDocumentVersions(ctx, tx, tenantID, versionIDs); err != nil {
				return err
			}
			more, err := s.Store.FactsOfDocumentVersions(ctx, tx, tenantID, versionIDs)
			if err != nil {
				return err
			}
			factIDs = dedupUUIDs(append(factIDs, more...))
		}
		added, err := s.Store.AddSnapshotItems(ctx, tx, tenantID, snapshotID, factIDs)
		if err != nil {
			return err
		}
		sn, err := s.Store.GetSnapshot(ctx, tx, tenantID, snapshotID)
		if err != nil {
			return err
		}
		out = addItemsResponse{Snapshot: sn, Added: added}
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// requireDocumentVersions returns NOT_FOUND naming the first listed version
// the tenant does not have (a version without facts yet is fine).
func (s *Server) requireDocumentVersions(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, ids []uuid.UUID) error {
	var missing uuid.UUID
	err := tx.QueryRow(ctx, `SELECT u.id FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n)
		WHERE NOT EXISTS (SELECT 1 FROM document_versions v WHERE v.tenant_id = $1 AND v.document_version_id = u.id)
		ORDER BY u.n LIMIT 1`, tenantID, ids).Scan(&missing)
	switch {
	case err == pgx.ErrNoRows:
		return nil
	case err != nil:
		return err
	}
	return errcode.New(errcode.NotFound, "document version %s not found", missing)
}

func dedupUUIDs(ids []uuid.UUID) []uuid.UUID {
	seen := make(map[uuid.UUID]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (s *Server) handleListSnapshotItems(w http.ResponseWriter, r *http.Request) {
	serveChildren(s, w, r, s.Store.GetSnapshot, s.Store.ListSnapshotItems)
}

// handleBuildSnapshot enqueues BUILD_SNAPSHOT (BUILDING → READY).
func (s *Server) handleBuildSnapshot(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := bodyTenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.enqueueDomainJob(r, jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: id},
		func(ctx context.Context, tx pgx.Tx) error {
			_, err := s.Store.GetSnapshot(ctx, tx, tenantID, id)
			return err
		})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, jobResponse{Job: job})
}

// handleSealSnapshot seals a READY snapshot and records snapshot.sealed.
func (s *Server) handleSealSnapshot(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := bodyTenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var sn store.Snapshot
	err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
		sn, err = s.Store.SealSnapshot(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		return s.appendDomainEvent(ctx, tx, tenantID, aggregateSnapshot, id, eventSnapshotSealed,
			map[string]any{"snapshot_hash": sn.SnapshotHash})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sn)
}

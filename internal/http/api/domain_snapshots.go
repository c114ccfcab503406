package api

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (s *Server) handleCreateSnapshot(ctx context.Context, req *jsonInput) (*out[bpctype.Snapshot], error) {
	var in tenantRequest
	tenantID, err := decodeTenantBody(ctx, req.RawBody, &in, &in.TenantID)
	if err != nil {
		return nil, err
	}
	return created(s.Store.CreateSnapshot(ctx, tenantID))
}

func (s *Server) handleGetSnapshot(ctx context.Context, req *idParams) (*out[bpctype.Snapshot], error) {
	return getByID(ctx, req, s.Store.GetSnapshot)
}

type addItemsRequest struct {
	TenantID           string   `json:"tenant_id" format:"uuid"`
	FactIDs            []string `json:"fact_ids" required:"false" maxItems:"10000" doc:"Facts to add."`
	DocumentVersionIDs []string `json:"document_version_ids" required:"false" maxItems:"10000" doc:"Document versions whose every fact is added."`
}

type addItemsResponse struct {
	Snapshot bpctype.Snapshot `json:"snapshot"`
	Added    int              `json:"added"`
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
func (s *Server) handleAddSnapshotItems(ctx context.Context, req *idBody) (*out[addItemsResponse], error) {
	var in addItemsRequest
	tenantID, snapshotID, err := decodeForID(ctx, req.RawBody, &in, &in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case len(in.FactIDs) == 0 && len(in.DocumentVersionIDs) == 0:
		return nil, errcode.Invalid("fact_ids", "fact_ids or document_version_ids must list at least one id")
	case len(in.FactIDs)+len(in.DocumentVersionIDs) > passport.MaxSnapshotItemIDs:
		return nil, errcode.Invalid("fact_ids", "fact_ids and document_version_ids may list at most %d ids together", passport.MaxSnapshotItemIDs)
	}
	factIDs, err := parseUUIDs("fact_ids", in.FactIDs)
	if err != nil {
		return nil, err
	}
	versionIDs, err := parseUUIDs("document_version_ids", in.DocumentVersionIDs)
	if err != nil {
		return nil, err
	}
	return ok(inTxValue(ctx, s, func(t passport.Tx) (addItemsResponse, error) {
		sn, added, err := passport.AddSnapshotItems(ctx, t, tenantID, snapshotID, factIDs, versionIDs)
		return addItemsResponse{Snapshot: sn, Added: added}, err
	}))
}

func (s *Server) handleListSnapshotItems(ctx context.Context, req *idParams) (*out[items[bpctype.SnapshotItem]], error) {
	return listChildren(ctx, req, s.Store.GetSnapshot, s.Store.ListSnapshotItems)
}

// handleBuildSnapshot enqueues BUILD_SNAPSHOT (BUILDING → READY).
func (s *Server) handleBuildSnapshot(ctx context.Context, req *idKeyBody) (*out[jobResponse], error) {
	tenantID, id, err := bodyTenantAndID(ctx, req.RawBody, req.ID)
	if err != nil {
		return nil, err
	}
	args := jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: id}
	return s.startJob(ctx, req.IdempotencyKey, args, exists((*store.Queries).GetSnapshot, tenantID, id))
}

// handleSealSnapshot seals a READY snapshot and records snapshot.sealed.
func (s *Server) handleSealSnapshot(ctx context.Context, req *idBody) (*out[bpctype.Snapshot], error) {
	return actOnID(ctx, s, req, passport.SealSnapshot)
}

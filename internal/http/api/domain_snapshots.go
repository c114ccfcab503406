package api

import (
	"context"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

func (s *Server) handleCreateSnapshot(ctx context.Context, req *bodyInput[tenantRequest]) (*out[bpctype.Snapshot], error) {
	tenantID, err := tenantOf(ctx, req.Body.TenantID)
	if err != nil {
		return nil, err
	}
	return created(s.Store.CreateSnapshot(ctx, tenantID))
}

func (s *Server) handleGetSnapshot(ctx context.Context, req *idParams) (*out[bpctype.Snapshot], error) {
	return getByID(ctx, s, req, s.Store.GetSnapshot)
}

type addItemsRequest struct {
	TenantID           ID   `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	FactIDs            []ID `json:"fact_ids,omitempty" maxItems:"10000" doc:"Facts to add."`
	DocumentVersionIDs []ID `json:"document_version_ids,omitempty" maxItems:"10000" doc:"Document versions whose every fact is added."`
}

type addItemsResponse struct {
	Snapshot bpctype.Snapshot `json:"snapshot"`
	Added    int              `json:"added"`
}

// handleAddSnapshotItems adds facts to a BUILDING snapshot: the listed facts
// and every fact of the listed document versions.
func (s *Server) handleAddSnapshotItems(ctx context.Context, req *idBody[addItemsRequest]) (*out[addItemsResponse], error) {
	in := req.Body
	tenantID, snapshotID, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case len(in.FactIDs) == 0 && len(in.DocumentVersionIDs) == 0:
		return nil, errcode.Invalid("fact_ids", "fact_ids or document_version_ids must list at least one id")
	case len(in.FactIDs)+len(in.DocumentVersionIDs) > passport.MaxSnapshotItemIDs:
		return nil, errcode.Invalid("fact_ids", "fact_ids and document_version_ids may list at most %d ids together", passport.MaxSnapshotItemIDs)
	}
	factIDs, versionIDs := ids(in.FactIDs), ids(in.DocumentVersionIDs)
	return ok(inTxValue(ctx, s, func(t passport.Tx) (addItemsResponse, error) {
		sn, added, err := passport.AddSnapshotItems(ctx, t, tenantID, snapshotID, factIDs, versionIDs)
		return addItemsResponse{Snapshot: sn, Added: added}, err
	}))
}

func (s *Server) handleListSnapshotItems(ctx context.Context, req *idParams) (*out[items[bpctype.SnapshotItem]], error) {
	return listChildren(ctx, s, req, s.Store.GetSnapshot, s.Store.ListSnapshotItems)
}

// handleBuildSnapshot enqueues BUILD_SNAPSHOT (BUILDING → READY).
func (s *Server) handleBuildSnapshot(ctx context.Context, req *idKeyBody[tenantRequest]) (*out[jobResponse], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, req.Body.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	args := jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: id}
	return s.startJob(ctx, req.IdempotencyKey, args, id)
}

// handleSealSnapshot seals a READY snapshot and records snapshot.sealed.
func (s *Server) handleSealSnapshot(ctx context.Context, req *idBody[tenantRequest]) (*out[bpctype.Snapshot], error) {
	return actOnID(ctx, s, req, passport.SealSnapshot)
}

package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (s *Server) handleCreateSnapshot(w http.ResponseWriter, r *http.Request) {
	var in tenantRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sn, err := s.Store.CreateSnapshot(r.Context(), tenantID)
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
	TenantID           string   `json:"tenant_id" format:"uuid"`
	FactIDs            []string `json:"fact_ids" required:"false" maxItems:"10000" doc:"Facts to add."`
	DocumentVersionIDs []string `json:"document_version_ids" required:"false" maxItems:"10000" doc:"Document versions whose every fact is added."`
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
	case len(in.FactIDs)+len(in.DocumentVersionIDs) > passport.MaxSnapshotItemIDs:
		s.writeError(w, r, errcode.Invalid("fact_ids", "fact_ids and document_version_ids may list at most %d ids together", passport.MaxSnapshotItemIDs))
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
	err = s.inTx(ctx, func(t passport.Tx) error {
		out.Snapshot, out.Added, err = passport.AddSnapshotItems(ctx, t, tenantID, snapshotID, factIDs, versionIDs)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
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
		func(ctx context.Context, q *store.Queries) error {
			_, err := q.GetSnapshot(ctx, tenantID, id)
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
	err = s.inTx(ctx, func(t passport.Tx) error {
		sn, err = passport.SealSnapshot(ctx, t, tenantID, id)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sn)
}

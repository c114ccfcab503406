package passport

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
)

// TestInsertOptsMetadata checks the River metadata the mirror trigger
// reads: the SSOT job id, and the idempotency key and request hash when a
// key is given, as the bytes json.Marshal writes for a map of them.
func TestInsertOptsMetadata(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f")
	args := &jobargs.DeliverWebhookArgs{Base: jobargs.Base{TenantID: id}, WebhookDeliveryID: id}
	for _, req := range []EnqueueRequest{
		{Args: args},
		{Args: args, IdempotencyKey: "order-17", RequestHash: "abc"},
		{Args: args, IdempotencyKey: "<a&b> \"q\" \xff \u2028", RequestHash: ""},
	} {
		want := map[string]string{"bpc_job_id": id.String()}
		if req.IdempotencyKey != "" {
			want["bpc_idempotency_key"], want["bpc_request_hash"] = req.IdempotencyKey, req.RequestHash
		}
		wantBytes, err := json.Marshal(want)
		require.NoError(t, err)
		opts, err := insertOpts(req, id)
		require.NoError(t, err)
		require.Equal(t, string(wantBytes), string(opts.Metadata))
	}
}

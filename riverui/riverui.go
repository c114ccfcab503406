// Package riverui builds the River UI handler (riverqueue.com/riverui) the
// service mounts at /riverui/: operators watch queues there and retry,
// cancel or delete jobs, and every such action reaches the SSOT jobs table
// through the mirror triggers, because River UI acts through the service's
// own River client and database.
package riverui

import (
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	upstream "riverqueue.com/riverui"
)

// Prefix is where River UI is mounted.
const Prefix = "/riverui"

// NewHandler returns River UI over client. Start it with the service's
// context; it is an http.Handler that expects the full /riverui/... path.
func NewHandler(client *river.Client[pgx.Tx], logger *slog.Logger) (*upstream.Handler, error) {
	h, err := upstream.NewHandler(&upstream.HandlerOpts{
		Endpoints: upstream.NewEndpoints(client, nil),
		Logger:    logger,
		Prefix:    Prefix,
		// Job args can carry document content: shown on demand only.
		JobListHideArgsByDefault: true,
	})
	if err != nil {
		return nil, fmt.Errorf("error creating River UI: %w", err)
	}
	return h, nil
}

package store

import (
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
)

// riverStatesOf lists the River states whose jobs have the SSOT status: the
// inverse of StatusOf, for answering "which live jobs are RUNNING" from
// River's own index on river_job.state.
func riverStatesOf(status string) []string {
	var states []string
	for _, state := range rivertype.JobStates() {
		if bpctype.StatusOf(state, false) == status || bpctype.StatusOf(state, true) == status {
			states = append(states, string(state))
		}
	}
	return states
}

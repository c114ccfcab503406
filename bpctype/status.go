package bpctype

import (
	"bytes"
	"encoding/json"

	"github.com/riverqueue/river/rivertype"
)

// riverStatus is the SSOT status of each River job state (SPEC §3). The
// mirror's triggers apply the same mapping in SQL, bpc_ssot_status; a test
// runs every River state through both and requires the same answer.
var riverStatus = map[rivertype.JobState]string{
	rivertype.JobStateAvailable: StatusQueued,
	rivertype.JobStateScheduled: StatusQueued,
	rivertype.JobStatePending:   StatusQueued,
	rivertype.JobStateRetryable: StatusQueued,
	rivertype.JobStateRunning:   StatusRunning,
	rivertype.JobStateCompleted: StatusSucceeded,
	rivertype.JobStateCancelled: StatusFailed, // or CANCELLED: see StatusOf
	rivertype.JobStateDiscarded: StatusDeadLetter,
}

// StatusOf is the SSOT status of a River job in state. A cancelled job is
// CANCELLED when an operator asked for it (River UI, admin API; read it from
// River's metadata with CancelledByOperator) and FAILED when its worker gave
// up on a permanent error. A state River adds later is QUEUED, as in SQL.
func StatusOf(state rivertype.JobState, operatorCancelled bool) string {
	if state == rivertype.JobStateCancelled && operatorCancelled {
		return StatusCancelled
	}
	if status, ok := riverStatus[state]; ok {
		return status
	}
	return StatusQueued
}

// CancelledByOperator reports whether a River job's metadata records an
// operator's cancel request: River sets cancel_attempted_at when asked to
// cancel a job (and clears it on a retry); a worker's river.JobCancel does
// not.
func CancelledByOperator(metadata []byte) bool {
	if !bytes.Contains(metadata, []byte(`"cancel_attempted_at"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return false
	}
	_, ok := m["cancel_attempted_at"]
	return ok
}

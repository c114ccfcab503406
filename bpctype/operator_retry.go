package bpctype

import (
	"bytes"
	"encoding/json"
	"time"
)

// OperatorRetryKey is the River metadata key under which the trigger
// bpc_mark_operator_retry (migrations/008_operator_retry.sql) marks a job an
// operator retried: River UI, the admin API, the river CLI or plain SQL.
const OperatorRetryKey = "bpc_operator_retry"

// OperatorRetry is an operator's last retry of a job, as marked on it.
type OperatorRetry struct {
	// At is when the retry was committed (the database's clock).
	At time.Time `json:"at"`
	// AfterAttempt is the number of attempts the job had made by then.
	AfterAttempt int `json:"after_attempt"`
}

// LastOperatorRetry reads the mark from a River job's metadata; ok is false
// when no operator has retried the job.
func LastOperatorRetry(metadata []byte) (r OperatorRetry, ok bool) {
	if !bytes.Contains(metadata, []byte(`"`+OperatorRetryKey+`"`)) {
		return r, false // the common case, without decoding
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil || m[OperatorRetryKey] == nil {
		return r, false
	}
	if json.Unmarshal(m[OperatorRetryKey], &r) != nil {
		return OperatorRetry{}, false
	}
	return r, true
}

// IsOperatorAttempt reports whether attempt (River's count, this attempt
// included) is the one the operator's retry asked for: the first after it.
// A snooze gives its attempt back, so a held first attempt stays the
// operator's; once it has ended with an error, the next is River's own.
func (r OperatorRetry) IsOperatorAttempt(attempt int) bool {
	return attempt == r.AfterAttempt+1
}

package bpctype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// SSOT job statuses (SPEC §3).
const (
	StatusQueued     = "QUEUED"
	StatusRunning    = "RUNNING"
	StatusSucceeded  = "SUCCEEDED"
	StatusFailed     = "FAILED"
	StatusCancelled  = "CANCELLED"
	StatusDeadLetter = "DEAD_LETTER"
)

// Statuses lists every SSOT status.
var Statuses = []string{StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled, StatusDeadLetter}

// IsTerminal reports whether a job in status will not change by itself.
func IsTerminal(status string) bool {
	switch status {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusDeadLetter:
		return true
	}
	return false
}

// Job is a row of the SSOT jobs table, the mirror of a River job.
type Job struct {
	JobID          uuid.UUID       `db:"job_id" json:"job_id"`
	TenantID       uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	Type           string          `db:"type" json:"type"`
	Status         string          `db:"status" json:"status"`
	Priority       int16           `db:"priority" json:"priority"`
	Attempts       int32           `db:"attempts" json:"attempts"`
	MaxAttempts    int32           `db:"max_attempts" json:"max_attempts"`
	IdempotencyKey *string         `db:"idempotency_key" json:"idempotency_key"`
	RequestHash    *string         `db:"request_hash" json:"-"`
	Payload        json.RawMessage `db:"payload" json:"payload"`
	Queue          string          `db:"queue" json:"queue"`
	ScheduledAt    time.Time       `db:"scheduled_at" json:"scheduled_at"`
	StartedAt      *time.Time      `db:"started_at" json:"started_at"`
	FinishedAt     *time.Time      `db:"finished_at" json:"finished_at"`
	LeaseOwner     *string         `db:"lease_owner" json:"lease_owner"`
	LeaseExpiresAt *time.Time      `db:"lease_expires_at" json:"lease_expires_at"`
	LastError      json.RawMessage `db:"last_error" json:"last_error"`
	RiverJobID     int64           `db:"river_job_id" json:"river_job_id"`
	RiverDeletedAt *time.Time      `db:"river_deleted_at" json:"river_deleted_at,omitempty"`
	CreatedAt      time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time       `db:"updated_at" json:"updated_at"`
}

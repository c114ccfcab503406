// Package audit computes BPC-EVENT-1 event hashes: the one function every
// writer and verifier of the audit chain uses.
package audit

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/hash"
)

// TimeFormat is how occurred_at enters the hash: UTC, microsecond precision
// (what Postgres stores), so a hash recomputed from the database matches.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// Event is the hashed part of an audit event.
type Event struct {
	TenantID         string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	EventType        string
	OccurredAt       time.Time
	// ActorID is empty for system actions (hashed as null).
	ActorID string
	// PayloadHash is the SHA-256 hex of the payload's canonical bytes.
	PayloadHash string
	// PrevEventHash is the aggregate's previous event hash; empty for version 1 (hashed as null).
	PrevEventHash string
}

// Hash returns the BPC-EVENT-1 event_hash: SHA-256 hex of the canonical JSON
// of the event's fields.
func Hash(e Event) (string, error) {
	// encoding/json would replace invalid UTF-8 with U+FFFD, so that two
	// different byte strings hashed alike: refuse them instead.
	for _, s := range []string{e.TenantID, e.AggregateType, e.AggregateID, e.EventType, e.ActorID, e.PayloadHash, e.PrevEventHash} {
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("error hashing event: %q is not valid UTF-8", s)
		}
	}
	doc := map[string]any{
		"tenant_id":         e.TenantID,
		"aggregate_type":    e.AggregateType,
		"aggregate_id":      e.AggregateID,
		"aggregate_version": e.AggregateVersion,
		"event_type":        e.EventType,
		"occurred_at":       e.OccurredAt.UTC().Format(TimeFormat),
		"actor_id":          nullable(e.ActorID),
		"payload_hash":      e.PayloadHash,
		"prev_event_hash":   nullable(e.PrevEventHash),
	}
	canonical, err := canonjson.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("error encoding event for hashing: %w", err)
	}
	return hash.SHA256Hex(canonical), nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

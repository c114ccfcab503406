package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fixture() Event {
	return Event{
		TenantID:         "00000000-0000-0000-0000-00000000de00",
		AggregateType:    "Passport",
		AggregateID:      "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
		AggregateVersion: 2,
		EventType:        "passport.activated",
		// Another zone, same instant: the hash uses UTC.
		OccurredAt:    time.Date(2026, 11, 22, 5, 15, 0, 123456000, time.FixedZone("CET", 3600)),
		PayloadHash:   "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862", // SHA-256 of {"a":1}
		PrevEventHash: strings.Repeat("ab", 32),
	}
}

// The expected hashes were computed independently (Python: json.dumps with
// sort_keys and compact separators, then hashlib.sha256).
func TestHashGolden(t *testing.T) {
	t.Parallel()
	got, err := Hash(fixture())
	require.NoError(t, err)
	require.Equal(t, "037d840e3b7e9324049cd1cd1015bf5998e5f33b1d28e53f5ffd242e2326c080", got)

	first := fixture()
	first.AggregateVersion, first.PrevEventHash, first.ActorID = 1, "", "ops@example.com"
	got, err = Hash(first)
	require.NoError(t, err)
	require.Equal(t, "bc99cd9771366683f10d70e020594620178fd1a91716f881e621b2faffe1f319", got, "empty prev hash is null, actor set")
}

func TestHashChangesWithEveryField(t *testing.T) {
	t.Parallel()
	base, err := Hash(fixture())
	require.NoError(t, err)
	for name, mutate := range map[string]func(*Event){
		"tenant":    func(e *Event) { e.TenantID = "00000000-0000-0000-0000-000000000001" },
		"type":      func(e *Event) { e.AggregateType = "Snapshot" },
		"id":        func(e *Event) { e.AggregateID = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e40" },
		"version":   func(e *Event) { e.AggregateVersion = 3 },
		"event":     func(e *Event) { e.EventType = "passport.revoked" },
		"time":      func(e *Event) { e.OccurredAt = e.OccurredAt.Add(time.Microsecond) },
		"actor":     func(e *Event) { e.ActorID = "someone" },
		"payload":   func(e *Event) { e.PayloadHash = strings.Repeat("0", 64) },
		"prev hash": func(e *Event) { e.PrevEventHash = strings.Repeat("cd", 32) },
	} {
		e := fixture()
		mutate(&e)
		got, err := Hash(e)
		require.NoError(t, err)
		require.NotEqual(t, base, got, name)
	}
	// Sub-microsecond differences are not stored by Postgres and do not count.
	e := fixture()
	e.OccurredAt = e.OccurredAt.Add(100 * time.Nanosecond)
	got, err := Hash(e)
	require.NoError(t, err)
	require.Equal(t, base, got)
}

func TestHashRejectsInvalidUTF8(t *testing.T) {
	t.Parallel()
	e := fixture()
	e.EventType = "bad\xff"
	_, err := Hash(e)
	require.Error(t, err)
}

package workers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/canonjson"
)

func sampleEvent() bpctype.Event {
	return bpctype.Event{
		EventID:       uuid.MustParse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"),
		TenantID:      uuid.MustParse("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"),
		AggregateType: "passport",
		AggregateID:   uuid.MustParse("cccccccc-cccc-4ccc-8ccc-cccccccccccc"),
		EventType:     "passport.activated",
		// A non-UTC zone with sub-microsecond digits: the body must not depend on either.
		OccurredAt: time.Date(2026, 3, 4, 7, 6, 7, 123456789, time.FixedZone("CET", 3600)),
		Payload:    json.RawMessage(`{"n":1,"note":"a<b&c","z":[true,null]}`),
	}
}

func TestSignMatchesIndependentHMAC(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec-0123456789abcdef")
	body := []byte(`{"event_id":"x"}`)
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))

	got := Sign(secret, body)
	require.Equal(t, want, got)
	require.True(t, strings.HasPrefix(got, "sha256="))
	require.Len(t, strings.TrimPrefix(got, "sha256="), 64)
	require.NotEqual(t, got, Sign([]byte("another-secret-000000"), body), "the secret is part of the signature")
	require.NotEqual(t, got, Sign(secret, append(body, ' ')), "every body byte is signed")
}

func TestBodyIsCanonicalBPCWH1(t *testing.T) {
	t.Parallel()
	ev := sampleEvent()
	body, err := Body(ev)
	require.NoError(t, err)
	require.True(t, canonjson.Valid(body), "body must be canonical JSON: %s", body)

	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"event_id", "event_type", "aggregate_type", "aggregate_id", "occurred_at", "tenant_id", "payload"}, keys)

	str := func(key string) string {
		var s string
		require.NoError(t, json.Unmarshal(m[key], &s), key)
		return s
	}
	require.Equal(t, ev.EventID.String(), str("event_id"))
	require.Equal(t, "passport.activated", str("event_type"))
	require.Equal(t, "passport", str("aggregate_type"))
	require.Equal(t, ev.AggregateID.String(), str("aggregate_id"))
	require.Equal(t, ev.TenantID.String(), str("tenant_id"))
	require.Equal(t, "2026-03-04T06:06:07.123456Z", str("occurred_at"), "UTC, microseconds")
	require.JSONEq(t, string(ev.Payload), string(m["payload"]))
	// The payload is embedded as stored: no HTML escaping of the signed bytes.
	require.Contains(t, string(body), `"payload":{"n":1,"note":"a<b&c","z":[true,null]}`)
}

func TestBodyIsByteIdenticalForTheSameEvent(t *testing.T) {
	t.Parallel()
	first, err := Body(sampleEvent())
	require.NoError(t, err)
	for range 20 {
		again, err := Body(sampleEvent())
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	// The same instant in another zone is the same event.
	ev := sampleEvent()
	ev.OccurredAt = ev.OccurredAt.UTC()
	utc, err := Body(ev)
	require.NoError(t, err)
	require.Equal(t, first, utc)
}

func TestBodyRejectsFractionalPayloadAsInternalError(t *testing.T) {
	t.Parallel()
	ev := sampleEvent()
	ev.Payload = json.RawMessage(`{"x":1.5}`)
	_, err := Body(ev)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "INTERNAL_ERROR: "), err.Error())
}

func TestBoundedHeadersCapsCountAndValueLength(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	for i := range 40 {
		h.Set("X-Header-"+strconv.Itoa(100+i), "v"+strconv.Itoa(i))
	}
	long := strings.Repeat("L", 2000)
	h.Set("X-Header-000-Long", long)
	h.Add("X-Header-000-Long", "second value")

	got := boundedHeaders(h)
	require.Len(t, got, maxResponseHeaders)
	require.Equal(t, 32, maxResponseHeaders)
	// Names are taken in sorted order, so the long one (sorting first) is kept, truncated.
	v, ok := got["X-Header-000-Long"]
	require.True(t, ok)
	require.Len(t, v, 512)
	require.Equal(t, long[:512], v)
	for name, value := range got {
		require.LessOrEqual(t, len(value), maxHeaderValueBytes, name)
	}
	require.Equal(t, "v0", got["X-Header-100"])
	require.NotContains(t, got, "X-Header-139", "headers beyond the cap are dropped")
}

func TestBoundedHeadersKeepsSmallHeadersWhole(t *testing.T) {
	t.Parallel()
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r-1"}}
	require.Equal(t, map[string]string{"Content-Type": "application/json", "X-Request-Id": "r-1"}, boundedHeaders(h))
	require.Empty(t, boundedHeaders(http.Header{}))
}

func TestRedactURLDropsTheURL(t *testing.T) {
	t.Parallel()
	c := NewHTTPClient()
	req, err := http.NewRequest(http.MethodPost, "http://user:s3cr3t@127.0.0.1:1/hook?token=abc", bytes.NewReader(nil))
	require.NoError(t, err)
	_, err = c.Do(req)
	require.Error(t, err)
	msg := redactURL(err)
	require.NotContains(t, msg, "s3cr3t")
	require.NotContains(t, msg, "token=abc")
}

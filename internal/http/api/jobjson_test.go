package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
)

// encodingJSON is what the API answered before jsonFormat: encoding/json's
// bytes, or its error.
func encodingJSON(v any) (string, error) {
	var buf bytes.Buffer
	err := huma.DefaultJSONFormat.Marshal(&buf, v)
	return buf.String(), err
}

// TestJSONFormatWritesEncodingJSONBytes checks that jobs, on their own and
// in a batch's items, are answered byte for byte as encoding/json writes
// them, the odd ones (strings to escape, times RFC 3339 cannot say,
// payloads to compact or invalid) included, and other bodies unchanged.
func TestJSONFormatWritesEncodingJSONBytes(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	at := func(t time.Time) *time.Time { return &t }
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	created := time.Date(2026, 11, 28, 11, 9, 1, 123456789, time.UTC)
	base := bpctype.Job{
		JobID: uuid.MustParse("3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"), TenantID: uuid.MustParse("00000000-0000-0000-0000-00000000de00"),
		Type: "DELIVER_WEBHOOK", Status: bpctype.StatusQueued, Priority: 2, Attempts: 0, MaxAttempts: 5,
		Payload: json.RawMessage(`{"tenant_id":"00000000-0000-0000-0000-00000000de00","webhook_delivery_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`),
		Queue:   "default", ScheduledAt: created, RiverJobID: 42, CreatedAt: created, UpdatedAt: created.Add(time.Millisecond),
	}
	variant := func(change func(j *bpctype.Job)) bpctype.Job {
		j := base
		change(&j)
		return j
	}
	jobs := map[string]bpctype.Job{
		"queued": base,
		"zero":   {},
		"running": variant(func(j *bpctype.Job) {
			j.Status, j.Attempts, j.StartedAt, j.LeaseOwner, j.LeaseExpiresAt = bpctype.StatusRunning, 1, at(created), str("worker-1"), at(created.In(paris))
		}),
		"failed": variant(func(j *bpctype.Job) {
			j.FinishedAt, j.LastError, j.RiverDeletedAt = at(created.Add(time.Hour)), json.RawMessage(`{"code":"X","message":"a <b> & c"}`), at(created)
		}),
		"idempotent": variant(func(j *bpctype.Job) { j.IdempotencyKey, j.RequestHash = str("order-17"), str("hash") }),
		"local times": variant(func(j *bpctype.Job) {
			j.CreatedAt, j.UpdatedAt = created.In(paris), created.In(time.FixedZone("", -(3*3600+30*60)))
		}),
		"whole seconds":   variant(func(j *bpctype.Job) { j.ScheduledAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }),
		"payload spaced":  variant(func(j *bpctype.Job) { j.Payload = json.RawMessage(" {\"a\": [1, 2],\n \"b\": \"x y\"} ") }),
		"payload html":    variant(func(j *bpctype.Job) { j.Payload = json.RawMessage(`{"a":"<script>&\u2028"}`) }),
		"key to escape":   variant(func(j *bpctype.Job) { j.IdempotencyKey = str("a\"b\\c\n\x01<&>") }),
		"key unicode":     variant(func(j *bpctype.Job) { j.IdempotencyKey = str("clé \u2028 \xff end") }),
		"owner html":      variant(func(j *bpctype.Job) { j.LeaseOwner = str("<host>&co") }),
		"negative":        variant(func(j *bpctype.Job) { j.Priority, j.RiverJobID = -1, -9223372036854775808 }),
		"year 10000":      variant(func(j *bpctype.Job) { j.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }),
		"payload invalid": variant(func(j *bpctype.Job) { j.Payload = json.RawMessage(`{"a":`) }),
		"payload empty":   variant(func(j *bpctype.Job) { j.Payload = json.RawMessage{} }),
	}
	// The usual jobs take the fast path, not the fallback.
	for _, name := range []string{"queued", "running", "failed", "idempotent", "local times", "payload spaced"} {
		_, ok := appendJobBody(nil, items[batchItem]{Items: []batchItem{{Job: jobs[name]}}})
		require.True(t, ok, name)
	}
	for name, job := range jobs {
		for _, body := range []any{job, items[batchItem]{Items: []batchItem{{Job: base, Existing: true}, {Job: job}}}} {
			want, wantErr := encodingJSON(body)
			var got bytes.Buffer
			err := jsonFormat.Marshal(&got, body)
			if wantErr != nil {
				require.Error(t, err, name)
				continue
			}
			require.NoError(t, err, name)
			require.Equal(t, want, got.String(), name)
		}
	}
	for _, body := range []any{items[batchItem]{}, map[string]any{"a": "<b>"}, &base, items[bpctype.Job]{Items: []bpctype.Job{base}}} {
		want, err := encodingJSON(body)
		require.NoError(t, err)
		var got bytes.Buffer
		require.NoError(t, jsonFormat.Marshal(&got, body))
		require.Equal(t, want, got.String())
	}
}

// TestCompactorIsJSONCompact checks that the payloads appendRaw compacts
// on its own come out as json.Compact writes them, and that it leaves the
// rest (invalid JSON) to json.Compact.
func TestCompactorIsJSONCompact(t *testing.T) {
	t.Parallel()
	for _, doc := range compactDocuments {
		requireSameAsJSONCompact(t, []byte(doc))
	}
	c := compactor{src: []byte(compactDocuments[0])}
	require.True(t, c.value(0) && c.end(), "a River payload takes the compactor's own path")
}

// compactDocuments are JSON texts, valid and not, that appendRaw must
// write as json.Compact does.
var compactDocuments = []string{
	`{"tenant_id":"00000000-0000-0000-0000-00000000de00","webhook_delivery_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`,
	" {\"a\": [1, 2.5e-3 , {\"b\" :\"x y\\n\\u00e9 <&>\"}],\n\t\"c\": null }\r\n", "\"\u2028\xff\"", `"\u12"`, `"\x"`, `[1,]`,
	`{"a":1,}`, `{"a" 1}`, `{1:2}`, `-`, `-0`, `-01`, `1.e5`, `1e+`, `[`, `]`, `[[[[]]]]`, `nul`, `truefalse`, "\"a\tb\"",
	`{}`, `[]`, `{"a":1}`, ` {"a" : [1, -2.5e3, 0, -0, 1E+2, true, false, null, "x"] } `,
	`{"a":1,"a":2}`, `{"a":{"b":{"c":[[[]]]}}}`, `"x"`, `12`, `null`, `true`,
	`{"esc":"a\"b\\c\n\u00e9\ud83d\ude00"}`, `{"lone":"\ud800"}`, "{\"bad\":\"\xff\"}", `{"é":"ü"}`,
	`{"big":1e400}`, `{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":+1}`, `{"n":-}`, `{"n":1e}`, `{"n":0x10}`,
	``, ` `, `{`, `{"a"}`, `{"a":}`, `[1 2]`, `{"a":1}x`, `{} {}`, `truex`,
	"{\"ctl\":\"a\tb\"}", `{"a":1}` + "\n",
}

func FuzzCompactor(f *testing.F) {
	for _, doc := range compactDocuments {
		f.Add([]byte(doc))
	}
	f.Fuzz(requireSameAsJSONCompact)
}

func requireSameAsJSONCompact(t *testing.T, raw []byte) {
	if raw == nil {
		raw = []byte{} // nil is the RawMessage written as null
	}
	var want bytes.Buffer
	wantErr := json.Compact(&want, raw)
	got, ok := appendRaw([]byte("prefix:"), raw, true)
	if wantErr != nil {
		require.False(t, ok, "%q", raw)
		return
	}
	require.True(t, ok, "%q", raw)
	require.Equal(t, "prefix:"+want.String(), string(got), "%q", raw)
}

// TestJSONFormatWritesEveryMember guards appendJob's copy of the job's
// members: every member of bpctype.Job and batchItem set (by reflection,
// so a member added later is set too, omitempty or not), the answer is
// still encoding/json's, from appendJob's own path.
func TestJSONFormatWritesEveryMember(t *testing.T) {
	t.Parallel()
	var item batchItem
	fill(t, reflect.ValueOf(&item).Elem())
	for _, body := range []any{item.Job, items[batchItem]{Items: []batchItem{item, item}}} {
		b, ok := appendJobBody(nil, body)
		require.True(t, ok, "a job with every member set takes appendJob's path")
		want, err := encodingJSON(body)
		require.NoError(t, err)
		require.Equal(t, want, string(b)+"\n")
	}
}

// fill sets every exported member of v, recursively, to a value that is
// not its zero value; it fails on a kind it does not know, so that a new
// member's type is added here rather than left zero.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	at := time.Date(2026, 11, 28, 12, 30, 1, 500, time.UTC)
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(at))
		return
	case uuid.UUID:
		v.Set(reflect.ValueOf(uuid.MustParse("3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f")))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"member":["set",1]}`)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem())
	case reflect.String:
		v.SetString("set")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	default:
		t.Fatalf("fill: a member of type %s: add its kind", v.Type())
	}
}

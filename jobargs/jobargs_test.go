package jobargs_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/workers"
)

var (
	tenant = uuid.MustParse("3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f")
	idA    = "11111111-1111-4111-8111-111111111111"
	idB    = "22222222-2222-4222-8222-222222222222"
	idC    = "33333333-3333-4333-8333-333333333333"
)

// kindCase is one job type: its SSOT name, the zero args, the queue and
// River priority SPEC §2 gives it, a valid payload and the name of one
// required uuid field.
type kindCase struct {
	kind          string
	zero          jobargs.Args
	queue         string
	riverPriority int
	valid         string
	uuidField     string
}

var kindCases = []kindCase{
	{"INGEST_DOCUMENT", jobargs.IngestDocumentArgs{}, "pipeline", 3,
		`{"document_id":"` + idA + `","content":"eyJhIjoxfQ==","mime_type":"application/json"}`, "document_id"},
	{"PARSE_FACTS", jobargs.ParseFactsArgs{}, "pipeline", 3,
		`{"document_version_id":"` + idA + `"}`, "document_version_id"},
	{"BUILD_SNAPSHOT", jobargs.BuildSnapshotArgs{}, "pipeline", 3,
		`{"snapshot_id":"` + idA + `"}`, "snapshot_id"},
	{"COMPILE_PASSPORT", jobargs.CompilePassportArgs{}, "pipeline", 2,
		`{"passport_id":"` + idA + `","snapshot_id":"` + idB + `","rule_package_version_id":"` + idC + `"}`, "rule_package_version_id"},
	{"SIGN_PASSPORT", jobargs.SignPassportArgs{}, "pipeline", 2,
		`{"passport_version_id":"` + idA + `"}`, "passport_version_id"},
	{"GENERATE_QR", jobargs.GenerateQRArgs{}, "pipeline", 3,
		`{"passport_version_id":"` + idA + `"}`, "passport_version_id"},
	{"EXPORT_PASSPORT", jobargs.ExportPassportArgs{}, "exports", 4,
		`{"passport_version_id":"` + idA + `","format":"JSON"}`, "passport_version_id"},
	{"RUN_RULE_TESTS", jobargs.RunRuleTestsArgs{}, "rules", 3,
		`{"rule_package_version_id":"` + idA + `","seed":42}`, "rule_package_version_id"},
	{"DELIVER_WEBHOOK", jobargs.DeliverWebhookArgs{}, "webhooks", 4,
		`{"webhook_delivery_id":"` + idA + `"}`, "webhook_delivery_id"},
}

func TestKindsAreTheNineSSOTTypesSorted(t *testing.T) {
	t.Parallel()
	kinds := jobargs.Names(workers.Kinds())
	require.Len(t, kinds, len(kindCases))
	require.True(t, sort.StringsAreSorted(kinds), "%v", kinds)
	want := make([]string, 0, len(kindCases))
	for _, c := range kindCases {
		want = append(want, c.kind)
		_, known := jobargs.Find(workers.Kinds(), c.kind)
		require.True(t, known, c.kind)
	}
	sort.Strings(want)
	require.Equal(t, want, kinds)
	for _, name := range []string{"compile_passport", ""} {
		_, known := jobargs.Find(workers.Kinds(), name)
		require.False(t, known, "kinds are case-sensitive: %q", name)
	}
}

func TestKindEqualsSSOTTypeName(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		require.Equal(t, c.kind, c.zero.Kind())
	}
}

func TestInsertOptsQueueAndRiverPriority(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			opts := c.zero.InsertOpts()
			require.Equal(t, c.queue, opts.Queue)
			require.Equal(t, c.riverPriority, opts.Priority)
		})
	}
}

func TestRiverPriorityIsSSOTPlusOne(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, jobargs.RiverPriority(jobargs.PriorityCritical))
	require.Equal(t, 2, jobargs.RiverPriority(jobargs.PriorityHigh))
	require.Equal(t, 3, jobargs.RiverPriority(jobargs.PriorityNormal))
	require.Equal(t, 4, jobargs.RiverPriority(jobargs.PriorityLow))
}

func TestQueuesIncludeEveryDefaultQueue(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		require.Contains(t, jobargs.Queues, c.queue, "queue of %s must be worked", c.kind)
	}
}

func TestDecodeValidPayloadSetsTenant(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			args, err := decode(c.kind, tenant, json.RawMessage(c.valid))
			require.NoError(t, err)
			require.Equal(t, c.kind, args.Kind())
			require.Equal(t, tenant, args.Tenant())

			// The stored args (River's encoded args, the SSOT payload) carry the tenant.
			b, err := json.Marshal(args)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			require.Equal(t, tenant.String(), m["tenant_id"])
			require.Equal(t, idA, m[firstUUIDKey(c)], "payload field kept")
		})
	}
}

// firstUUIDKey is the field that holds idA in the valid payload.
func firstUUIDKey(c kindCase) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(c.valid), &m)
	for k, v := range m {
		if v == idA {
			return k
		}
	}
	return ""
}

func TestDecodeAcceptsMatchingPayloadTenant(t *testing.T) {
	t.Parallel()
	args, err := decode("SIGN_PASSPORT", tenant,
		json.RawMessage(`{"tenant_id":"`+tenant.String()+`","passport_version_id":"`+idA+`"}`))
	require.NoError(t, err)
	require.Equal(t, tenant, args.Tenant())
}

// withField returns the valid payload of c with key set to raw JSON (or removed when raw is "").
func withField(t *testing.T, c kindCase, key, raw string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(c.valid), &m))
	if raw == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(raw)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func requireValidationField(t *testing.T, err error, field string) {
	t.Helper()
	require.Error(t, err)
	e := errcode.As(err)
	require.NotNil(t, e, "typed error expected, got %v", err)
	require.Equal(t, errcode.Validation, e.Code, "%v", err)
	require.Equal(t, field, e.Field, "%v", err)
	require.Equal(t, field, e.Details["field"])
	require.Contains(t, e.Message, field)
}

func TestDecodeRejectsBadUUIDFieldsNamingThem(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			want := "payload." + c.uuidField
			bad := map[string]json.RawMessage{
				"missing":   withField(t, c, c.uuidField, ""),
				"nil uuid":  withField(t, c, c.uuidField, `"00000000-0000-0000-0000-000000000000"`),
				"null":      withField(t, c, c.uuidField, `null`),
				"malformed": withField(t, c, c.uuidField, `"not-a-uuid"`),
				"number":    withField(t, c, c.uuidField, `12345`),
				"object":    withField(t, c, c.uuidField, `{}`),
			}
			for name, payload := range bad {
				_, err := decode(c.kind, tenant, payload)
				require.Error(t, err, name)
				requireValidationField(t, err, want)
			}
		})
	}
}

func TestDecodeRejectsUnknownFieldNamingIt(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		_, err := decode(c.kind, tenant, withField(t, c, "extra_field", `1`))
		requireValidationField(t, err, "payload.extra_field")
	}
	// Field names match exactly, not case-insensitively as encoding/json would.
	_, err := decode("BUILD_SNAPSHOT", tenant, json.RawMessage(`{"Snapshot_ID":"`+idA+`"}`))
	requireValidationField(t, err, "payload.Snapshot_ID")
}

func TestDecodeRejectsPayloadTenantMismatch(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases {
		_, err := decode(c.kind, tenant, withField(t, c, "tenant_id", `"`+idB+`"`))
		requireValidationField(t, err, "payload.tenant_id")
	}
	_, err := decode("PARSE_FACTS", tenant, json.RawMessage(`{"tenant_id":7,"document_version_id":"`+idA+`"}`))
	requireValidationField(t, err, "payload.tenant_id")
}

func TestDecodeRejectsNonObjectPayload(t *testing.T) {
	t.Parallel()
	for _, payload := range []string{`[1,2]`, `"x"`, `42`, `true`, `{"snapshot_id":`} {
		_, err := decode("BUILD_SNAPSHOT", tenant, json.RawMessage(payload))
		requireValidationField(t, err, "payload")
	}
}

func TestDecodeEmptyPayloadReportsFirstRequiredField(t *testing.T) {
	t.Parallel()
	for _, payload := range []string{``, `null`, `{}`, `  `} {
		_, err := decode("BUILD_SNAPSHOT", tenant, json.RawMessage(payload))
		requireValidationField(t, err, "payload.snapshot_id")
	}
}

func TestDecodeRunRuleTestsSeedMustBeInteger(t *testing.T) {
	t.Parallel()
	c := kindCases[7]
	require.Equal(t, "RUN_RULE_TESTS", c.kind)
	for _, raw := range []string{`"7"`, `1.5`, `true`, `[]`} {
		_, err := decode(c.kind, tenant, withField(t, c, "seed", raw))
		requireValidationField(t, err, "payload.seed")
	}
	args, err := decode(c.kind, tenant, withField(t, c, "seed", `-9`))
	require.NoError(t, err)
	require.Equal(t, int64(-9), args.(*jobargs.RunRuleTestsArgs).Seed)
}

func TestDecodeIngestDocument(t *testing.T) {
	t.Parallel()
	doc := `"document_id":"` + idA + `","mime_type":"application/json"`
	tests := []struct {
		name      string
		payload   string
		wantField string // "" means valid
	}{
		{"inline content", `{` + doc + `,"content":"eyJhIjoxfQ=="}`, ""},
		{"content_ref", `{` + doc + `,"content_ref":"bom.json"}`, ""},
		{"content_ref in a subdirectory", `{` + doc + `,"content_ref":"2026/11/./bom..json"}`, ""},
		{"content_ref upwards", `{` + doc + `,"content_ref":"../x"}`, "payload.content_ref"},
		{"content_ref upwards inside", `{` + doc + `,"content_ref":"a/../../x"}`, "payload.content_ref"},
		{"content_ref absolute", `{` + doc + `,"content_ref":"/etc/passwd"}`, "payload.content_ref"},
		{"content_ref with NUL", `{` + doc + `,"content_ref":"bom.json\u0000.txt"}`, "payload.content_ref"},
		{"content_ref URL", `{` + doc + `,"content_ref":"s3://bucket/key.json"}`, "payload.content_ref"},
		{"content_ref too long", `{` + doc + `,"content_ref":"` + strings.Repeat("a", 2049) + `"}`, "payload.content_ref"},
		{"mime with parameters", `{"document_id":"` + idA + `","mime_type":"application/json; charset=utf-8","content":"e30="}`, ""},
		{"neither content nor ref", `{` + doc + `}`, "payload.content"},
		{"both content and ref", `{` + doc + `,"content":"e30=","content_ref":"k.json"}`, "payload.content_ref"},
		{"bad base64", `{` + doc + `,"content":"not base64!"}`, "payload.content"},
		{"unpadded base64", `{` + doc + `,"content":"e30"}`, "payload.content"},
		{"multi-line content_ref", `{` + doc + `,"content_ref":"a\nb"}`, "payload.content_ref"},
		{"content wrong type", `{` + doc + `,"content":5}`, "payload.content"},
		{"bad mime type", `{"document_id":"` + idA + `","mime_type":"json","content":"e30="}`, "payload.mime_type"},
		{"missing mime type", `{"document_id":"` + idA + `","content":"e30="}`, "payload.mime_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, err := decode("INGEST_DOCUMENT", tenant, json.RawMessage(tt.payload))
			if tt.wantField == "" {
				require.NoError(t, err)
				require.Equal(t, tenant, args.Tenant())
				return
			}
			requireValidationField(t, err, tt.wantField)
		})
	}
}

func TestDecodeExportPassportFormat(t *testing.T) {
	t.Parallel()
	c := kindCases[6]
	require.Equal(t, "EXPORT_PASSPORT", c.kind)
	for _, ok := range []string{`"JSON"`, `"json"`, `"PDF"`} {
		_, err := decode(c.kind, tenant, withField(t, c, "format", ok))
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{`"XML"`, `""`, `3`} {
		_, err := decode(c.kind, tenant, withField(t, c, "format", bad))
		requireValidationField(t, err, "payload.format")
	}
	_, err := decode(c.kind, tenant, withField(t, c, "format", ""))
	requireValidationField(t, err, "payload.format")
}

func TestValidateWithoutDecodeNamesBareField(t *testing.T) {
	t.Parallel()
	// Workers call Validate on args River decoded; the field is then unprefixed.
	err := jobargs.CompilePassportArgs{Base: jobargs.Base{TenantID: tenant}}.Validate()
	requireValidationField(t, err, "passport_id")
	err = jobargs.DeliverWebhookArgs{WebhookDeliveryID: uuid.MustParse(idA)}.Validate()
	requireValidationField(t, err, "tenant_id")
}

// FuzzDecode: every job payload decoder takes any bytes without panicking;
// a rejection is a VALIDATION_ERROR naming a field under "payload" (or the
// type), and accepted args validate and carry the request's tenant.
func FuzzDecode(f *testing.F) {
	tenant := uuid.MustParse("00000000-0000-0000-0000-00000000de00")
	for _, kind := range jobargs.Names(workers.Kinds()) {
		for _, p := range []string{`{}`, `null`, `[]`, `{"tenant_id":"x"}`, `{"document_version_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`,
			`{"snapshot_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f","passport_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f","rule_package_version_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`,
			`{"format":"json","passport_version_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`, `{"seed":1e3}`, `{"content":"e30=","mime_type":"application/json"}`} {
			f.Add(kind, []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		args, err := decode(kind, tenant, payload)
		if err != nil {
			e := errcode.As(err)
			require.NotNil(t, e, "untyped error %v", err)
			require.Equal(t, errcode.Validation, e.Code)
			require.True(t, e.Field == "type" || e.Field == "payload" || strings.HasPrefix(e.Field, "payload."), "field %q", e.Field)
			return
		}
		require.Equal(t, kind, args.Kind())
		require.Equal(t, tenant, args.Tenant())
		require.NoError(t, args.Validate())
	})
}

// Every uuid a payload carries, tenant_id aside, is a reference the API
// checks before enqueueing: Refs names each one, with its payload field and
// value, so a new field cannot slip past the check.
func TestRefsNameEveryUUIDField(t *testing.T) {
	for _, kind := range jobargs.Names(workers.Kinds()) {
		var payload map[string]any
		for _, c := range kindCases {
			if c.kind == kind {
				require.NoError(t, json.Unmarshal([]byte(c.valid), &payload))
			}
		}
		require.NotNil(t, payload, "kindCases has no valid payload of %s", kind)
		args, err := decode(kind, tenant, mustJSON(t, payload))
		require.NoError(t, err)
		want := map[string]string{}
		for k, v := range payload {
			if s, ok := v.(string); ok && uuid.Validate(s) == nil {
				want[k] = s
			}
		}
		got := map[string]string{}
		for _, r := range args.Refs() {
			require.Equal(t, tenant, r.TenantID, kind)
			require.NotEmpty(t, r.Entity, kind)
			got[r.Field] = r.ID.String()
		}
		require.Equal(t, want, got, kind)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// decode decodes a payload of the job type named kind, as the admin API
// does with the registry's kinds.
func decode(kind string, tenantID uuid.UUID, payload json.RawMessage) (jobargs.Args, error) {
	k, ok := jobargs.Find(workers.Kinds(), kind)
	if !ok {
		return nil, errcode.Invalid("type", "unknown job type %q", kind)
	}
	return jobargs.Decode(k, tenantID, payload)
}

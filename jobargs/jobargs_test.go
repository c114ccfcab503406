package jobargs_test

import (
	"encoding/json"
	"regexp"
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

// kindCase is one registered job type as its tests see it: its example
// payload (jobargs.Example, without tenant_id) and the payload fields its
// Refs name, every one a required uuid. The cases derive from the
// registry, so a new job type is checked here without an edit here.
type kindCase struct {
	kind      jobargs.Kind
	valid     string
	refFields []string
}

// kindCases returns a case per registered job type, sorted by name.
func kindCases(t testing.TB) []kindCase {
	t.Helper()
	var out []kindCase
	for _, name := range jobargs.Names(workers.Kinds()) {
		k, _ := jobargs.Find(workers.Kinds(), name)
		out = append(out, kindCaseOf(t, k))
	}
	require.NotEmpty(t, out)
	return out
}

// kindCaseOf builds the case of k from its example.
func kindCaseOf(t testing.TB, k jobargs.Kind) kindCase {
	t.Helper()
	example := jobargs.Example(k)
	b, err := json.Marshal(example)
	require.NoError(t, err, k.Name)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), k.Name)
	delete(m, "tenant_id") // the request's tenant fills it
	valid, err := json.Marshal(m)
	require.NoError(t, err, k.Name)
	c := kindCase{kind: k, valid: string(valid)}
	for _, r := range example.Refs() {
		c.refFields = append(c.refFields, r.Field)
	}
	return c
}

// caseOf returns the case of the registered job type named name.
func caseOf(t testing.TB, name string) kindCase {
	t.Helper()
	k, ok := jobargs.Find(workers.Kinds(), name)
	require.True(t, ok, "%s is not registered", name)
	return kindCaseOf(t, k)
}

// ssotTypeName is the form of an SSOT type name (and River kind).
var ssotTypeName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

func TestKindsAreSSOTTypeNamesOncePerTypeSorted(t *testing.T) {
	t.Parallel()
	names := jobargs.Names(workers.Kinds())
	require.True(t, sort.StringsAreSorted(names), "%v", names)
	require.Len(t, names, len(workers.Kinds()))
	for i, name := range names {
		require.Regexp(t, ssotTypeName, name)
		require.True(t, i == 0 || names[i-1] != name, "%s registered twice", name)
		k, known := jobargs.Find(workers.Kinds(), name)
		require.True(t, known, name)
		require.Equal(t, name, k.New().Kind(), "the River kind is the SSOT type name")
		require.Equal(t, name, jobargs.Example(k).Kind())
	}
	for _, name := range []string{"compile_passport", ""} {
		_, known := jobargs.Find(workers.Kinds(), name)
		require.False(t, known, "kinds are case-sensitive: %q", name)
	}
}

// Every job type goes on a queue the service works, at one of the four SSOT
// priorities (as River's, one more). Which queue and priority is the args
// file's to say (SPEC §2), in its InsertOpts.
func TestInsertOptsQueueAndRiverPriority(t *testing.T) {
	t.Parallel()
	riverPriorities := []int{
		jobargs.RiverPriority(jobargs.PriorityCritical), jobargs.RiverPriority(jobargs.PriorityHigh),
		jobargs.RiverPriority(jobargs.PriorityNormal), jobargs.RiverPriority(jobargs.PriorityLow),
	}
	for _, k := range workers.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			opts := k.New().InsertOpts()
			require.Contains(t, jobargs.Queues, opts.Queue, "queue of %s must be worked", k.Name)
			require.Contains(t, riverPriorities, opts.Priority)
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

func TestDecodeValidPayloadSetsTenant(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases(t) {
		t.Run(c.kind.Name, func(t *testing.T) {
			t.Parallel()
			again := kindCaseOf(t, c.kind)
			require.Equal(t, c.valid, again.valid, "the example is the same on every call")
			require.Equal(t, c.refFields, again.refFields)
			args, err := decode(c.kind.Name, tenant, json.RawMessage(c.valid))
			require.NoError(t, err)
			require.Equal(t, c.kind.Name, args.Kind())
			require.Equal(t, tenant, args.Tenant())

			// The stored args (River's encoded args, the SSOT payload) carry
			// the tenant and every payload field.
			b, err := json.Marshal(args)
			require.NoError(t, err)
			var got, sent map[string]any
			require.NoError(t, json.Unmarshal(b, &got))
			require.NoError(t, json.Unmarshal([]byte(c.valid), &sent))
			require.Equal(t, tenant.String(), got["tenant_id"])
			delete(got, "tenant_id")
			require.Equal(t, sent, got, "payload fields kept")
		})
	}
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
	for _, c := range kindCases(t) {
		t.Run(c.kind.Name, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, c.refFields, "every job type names a row")
			for _, field := range c.refFields {
				want := "payload." + field
				bad := map[string]json.RawMessage{
					"missing":   withField(t, c, field, ""),
					"nil uuid":  withField(t, c, field, `"00000000-0000-0000-0000-000000000000"`),
					"null":      withField(t, c, field, `null`),
					"malformed": withField(t, c, field, `"not-a-uuid"`),
					"number":    withField(t, c, field, `12345`),
					"object":    withField(t, c, field, `{}`),
				}
				for name, payload := range bad {
					_, err := decode(c.kind.Name, tenant, payload)
					require.Error(t, err, name)
					requireValidationField(t, err, want)
				}
			}
		})
	}
}

func TestDecodeRejectsUnknownFieldNamingIt(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases(t) {
		_, err := decode(c.kind.Name, tenant, withField(t, c, "extra_field", `1`))
		requireValidationField(t, err, "payload.extra_field")
	}
	// Field names match exactly, not case-insensitively as encoding/json would.
	_, err := decode("BUILD_SNAPSHOT", tenant, json.RawMessage(`{"Snapshot_ID":"`+idA+`"}`))
	requireValidationField(t, err, "payload.Snapshot_ID")
}

func TestDecodeRejectsPayloadTenantMismatch(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases(t) {
		_, err := decode(c.kind.Name, tenant, withField(t, c, "tenant_id", `"`+idB+`"`))
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
	c := caseOf(t, jobargs.KindRunRuleTests)
	for _, raw := range []string{`"7"`, `1.5`, `true`, `[]`} {
		_, err := decode(c.kind.Name, tenant, withField(t, c, "seed", raw))
		requireValidationField(t, err, "payload.seed")
	}
	args, err := decode(c.kind.Name, tenant, withField(t, c, "seed", `-9`))
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
	c := caseOf(t, jobargs.KindExport)
	for _, ok := range []string{`"JSON"`, `"json"`, `"PDF"`} {
		_, err := decode(c.kind.Name, tenant, withField(t, c, "format", ok))
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{`"XML"`, `""`, `3`} {
		_, err := decode(c.kind.Name, tenant, withField(t, c, "format", bad))
		requireValidationField(t, err, "payload.format")
	}
	_, err := decode(c.kind.Name, tenant, withField(t, c, "format", ""))
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
		f.Add(kind, []byte(caseOf(f, kind).valid))
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
// value and an entity the store's check knows, so a new field cannot slip
// past the check.
func TestRefsNameEveryUUIDField(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases(t) {
		var payload map[string]any
		require.NoError(t, json.Unmarshal([]byte(c.valid), &payload))
		args, err := decode(c.kind.Name, tenant, mustJSON(t, payload))
		require.NoError(t, err)
		want := map[string]string{}
		for k, v := range payload {
			if s, ok := v.(string); ok && uuid.Validate(s) == nil {
				want[k] = s
			}
		}
		got := map[string]string{}
		for _, r := range args.Refs() {
			require.Equal(t, tenant, r.TenantID, c.kind.Name)
			require.Contains(t, jobargs.Entities, r.Entity, "%s: %s", c.kind.Name, r.Field)
			got[r.Field] = r.ID.String()
		}
		require.Equal(t, want, got, c.kind.Name)
	}
}

func TestExampleGivesEachUUIDFieldItsOwnID(t *testing.T) {
	t.Parallel()
	for _, c := range kindCases(t) {
		ids := map[uuid.UUID]string{}
		for _, r := range jobargs.Example(c.kind).Refs() {
			require.NotContains(t, ids, r.ID, "%s: %s and %s share an id", c.kind.Name, r.Field, ids[r.ID])
			ids[r.ID] = r.Field
		}
	}
	require.Equal(t, "01010101-0101-4101-8101-010101010101", jobargs.ExampleID(1).String())
	require.Equal(t, uuid.Version(4), jobargs.ExampleID(0x2a).Version())
	require.Equal(t, uuid.RFC4122, jobargs.ExampleID(0xff).Variant())
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

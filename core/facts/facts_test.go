package facts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

const bomDoc = `{
  "document_type": "BOM", "schema_version": 1,
  "battery": {"sku": "SKU-1", "mass_kg": "1.500"},
  "materials": [
    {"name": "Nickel sulphate", "cas": "10101-97-0", "mass_g": "1000.0"},
    {"name": "Electronics (BMS, wiring)", "cas": "", "mass_g": "500.0"}
  ],
  "hazardous_substances": [{"cas": "10101-97-0", "name": "Nickel sulphate"}]
}`

func TestParseBOM(t *testing.T) {
	t.Parallel()
	got, err := Parse(KindBOM, []byte(bomDoc))
	require.NoError(t, err)
	var keys []string
	for _, f := range got {
		keys = append(keys, f.FactType+" "+f.FactKey)
		require.Equal(t, hash.SHA256Hex(f.Payload), f.PayloadHash)
		require.Equal(t, SchemaVersion, f.SchemaVersion)
	}
	require.Equal(t, []string{
		"BOM battery:SKU-1",
		"BOM_HAZARDOUS hazardous:10101-97-0",
		"BOM_MATERIAL material:10101-97-0",
		"BOM_MATERIAL material:electronics",
	}, keys)
	require.Equal(t, `{"mass_kg":"1.500","sku":"SKU-1"}`, string(got[0].Payload), "verbatim and canonical")

	again, err := Parse(KindBOM, []byte(bomDoc))
	require.NoError(t, err)
	require.Equal(t, got, again)
}

func TestParsePCFAndDueDiligence(t *testing.T) {
	t.Parallel()
	got, err := Parse(KindPCF, []byte(`{"schema_version":1,"document_type":"PCF","battery_sku":"S","total_kgco2e_per_kwh":"61.3"}`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "pcf:S", got[0].FactKey)
	require.Equal(t, `{"battery_sku":"S","total_kgco2e_per_kwh":"61.3"}`, string(got[0].Payload))

	got, err = Parse(KindDueDiligence, []byte(`{"schema_version":1,"document_type":"DUE_DILIGENCE","battery_sku":"S",
		"policy":{"title":"p"},"raw_materials":[{"material":"Natural graphite (flake)","risk_level":"high"}]}`))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "DD_MATERIAL", got[0].FactType)
	require.Equal(t, "dd_material:natural-graphite", got[0].FactKey)
	require.Equal(t, "dd:S", got[1].FactKey)
	require.Equal(t, `{"battery_sku":"S","policy":{"title":"p"}}`, string(got[1].Payload))
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, doc, field, msg string
	}{
		{KindBOM, `[1]`, "content", "JSON object"},
		{KindBOM, `{"a":1.5}`, "content", "decimals must travel as strings"},
		{KindBOM, `{"a":1,"a":2}`, "content", "duplicate"},
		{KindBOM, `not json`, "content", "not valid BPC JSON"},
		{KindBOM, `{"schema_version":1}`, "document_type", "is required"},
		{KindBOM, `{"document_type":"PCF","schema_version":1}`, "document_type", "created as BOM"},
		{KindBOM, `{"document_type":"BOM","schema_version":2}`, "schema_version", "must be 1"},
		{KindBOM, `{"document_type":"BOM","schema_version":1}`, "battery", "must be an object"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":""}}`, "battery.sku", "must not be empty"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":{}}`, "materials", "must be an array"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[3]}`, "materials[0]", "must be an object"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[{"cas":7}]}`, "materials[0].cas", "must be a string"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[{"cas":""}]}`, "materials[0].name", "must be a string"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[{"cas":"","name":"(!)"}]}`, "materials[0].name", "no letters"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[{"cas":"1"},{"cas":"1"}]}`, "materials[1]", "again (first from materials[0])"},
		{KindBOM, `{"document_type":"BOM","schema_version":1,"battery":{"sku":"S"},"materials":[],"hazardous_substances":[{}]}`, "hazardous_substances[0].cas", "must be a string"},
		{KindPCF, `{"document_type":"PCF","schema_version":1}`, "battery_sku", "must be a string"},
		{KindDueDiligence, `{"document_type":"DUE_DILIGENCE","schema_version":1,"battery_sku":"S","raw_materials":[{"material":""}]}`, "raw_materials[0].material", "must not be empty"},
		{KindDueDiligence, `{"document_type":"DUE_DILIGENCE","schema_version":1,"battery_sku":"S","raw_materials":[{"material":"-"}]}`, "raw_materials[0].material", "no letters"},
		{KindDueDiligence, `{"document_type":"DUE_DILIGENCE","schema_version":1,"battery_sku":"S","raw_materials":"x"}`, "raw_materials", "must be an array"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.kind, []byte(tc.doc))
		e := errcode.As(err)
		require.NotNil(t, e, tc.doc)
		require.Equal(t, errcode.Validation, e.Code, tc.doc)
		require.Equal(t, tc.field, e.Field, "%s: %v", tc.doc, err)
		require.Contains(t, e.Message, tc.msg, tc.doc)
	}

	_, err := Parse("OTHER", []byte(`{}`))
	require.Equal(t, errcode.UnsupportedFormat, errcode.CodeOf(err))
	_, err = Parse(KindPCF, []byte(`"`+strings.Repeat("x", MaxDocumentBytes)+`"`))
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	_, err = Parse(KindPCF, []byte(`{"document_type":"PCF","schema_version":1,"battery_sku":"`+strings.Repeat("x", 300)+`"}`))
	require.ErrorContains(t, err, "longer than 300 bytes")
}

func FuzzParse(f *testing.F) {
	f.Add(KindBOM, []byte(bomDoc))
	f.Add(KindPCF, []byte(`{"document_type":"PCF","schema_version":1,"battery_sku":"S"}`))
	f.Add(KindDueDiligence, []byte(`{"document_type":"DUE_DILIGENCE","schema_version":1,"battery_sku":"S","raw_materials":[{"material":"x"}]}`))
	f.Fuzz(func(t *testing.T, kind string, doc []byte) {
		got, err := Parse(kind, doc)
		if err != nil {
			require.NotNil(t, errcode.As(err), "every rejection is a typed error: %v", err)
			return
		}
		for _, fact := range got {
			require.Equal(t, hash.SHA256Hex(fact.Payload), fact.PayloadHash)
		}
	})
}

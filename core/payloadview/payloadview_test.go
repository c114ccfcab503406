package payloadview_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/payloadview"
)

func TestLayout(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"compliance":[{"code":"C1","detail":"d","field":"a.b","ok":false}],"fields":{` +
		`"carbon":{"footprint":{"unit":"kgCO2e","value":"12.5"},"stages":[{"a":1}]},` +
		`"general":{"cells":288,"maker":{"name":"M"},"tags":["x","y"],"verified":true,"none":null}}}`)
	v, err := payloadview.Layout(payload, 100)
	require.NoError(t, err)
	require.Equal(t, []payloadview.Compliance{{Code: "C1", Field: "a.b", Detail: "d", OK: false}}, v.Compliance)
	require.Equal(t, []payloadview.Section{
		{Title: "General", Rows: []payloadview.Row{{"Cells", "288"}, {"Maker › Name", "M"}, {"None", "—"}, {"Tags", "x, y"}, {"Verified", "yes"}}},
		{Title: "Carbon", Rows: []payloadview.Row{{"Footprint", "12.5 kgCO2e"}, {"Stages", "1 entries"}}},
	}, v.Sections, "general first, then by key; a quantity is one row")
	require.Zero(t, v.Omitted)

	// A section that would pass the limit is left out whole and counted.
	v, err = payloadview.Layout(payload, 6)
	require.NoError(t, err)
	require.Len(t, v.Sections, 1)
	require.Equal(t, 2, v.Omitted)

	_, err = payloadview.Layout([]byte(`[`), 10)
	require.Error(t, err)
}

func TestDecimalUnitAndLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"452.000000": "452", "4.50": "4.5", "165.93": "165.93", "-0.000": "0", "-1.200": "-1.2",
		"12": "12", "1.2.3": "1.2.3", "v1.0": "v1.0", ".5": ".5", "5.": "5.", "": "",
	} {
		require.Equal(t, want, payloadview.Decimal(in), in)
	}
	require.Equal(t, "%", payloadview.Unit("pct"))
	require.Equal(t, "gCO2e/kWh", payloadview.Unit("gCO2e_per_kWh"))
	require.Equal(t, "kg", payloadview.Unit("kg"))
	require.Equal(t, "EORI", payloadview.Label("eori"))
	require.Equal(t, "Rated charge Ah", payloadview.Label("rated_charge_ah"))
	require.Equal(t, "Rated capacity", payloadview.Label("rated_capacity"))

	v, err := payloadview.Layout([]byte(`{"fields":{"general":{"mass":{"unit":"kg","value":"452.000000"},`+
		`"intensity":{"unit":"gCO2e_per_kWh","value":"61300.000000"},"share":{"unit":"pct","value":"4.000000"},"ratio":1.250}}}`), 10)
	require.NoError(t, err)
	require.Equal(t, []payloadview.Row{{"Intensity", "61300 gCO2e/kWh"}, {"Mass", "452 kg"}, {"Ratio", "1.25"}, {"Share", "4 %"}},
		v.Sections[0].Rows)
}

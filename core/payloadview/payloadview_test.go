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

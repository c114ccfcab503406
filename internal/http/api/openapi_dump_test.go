package api

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestWriteOpenAPIDocument writes the served document (the full admin
// API, every registered kind) to $BPC_OPENAPI_OUT, indented, for the tools
// that lint it (scripts/lint-openapi.sh: Redocly, Spectral) and for people
// who want the file. Without the variable it still checks that the served
// document is one JSON object that names its version.
func TestWriteOpenAPIDocument(t *testing.T) {
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	_, raw := fetchDoc(t, s.Handler())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	out := os.Getenv("BPC_OPENAPI_OUT")
	if out == "" {
		return
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, append(b, '\n'), 0o644))
}

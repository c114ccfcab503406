package cli

import (
	"bytes"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// lastMigration is the newest file in migrations/, read from the directory
// rather than through package migrations.
func lastMigration(t *testing.T) string {
	t.Helper()
	names, err := filepath.Glob("../../migrations/[0-9]*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	sort.Strings(names)
	return strings.TrimSuffix(filepath.Base(names[len(names)-1]), ".sql")
}

func TestVersionReadsLdflagsBuildInfoAndTheSchema(t *testing.T) {
	t.Parallel()
	b, err := buildInfo("", nil)
	require.NoError(t, err)
	require.Equal(t, "dev", b.Version, "no ldflags, no module version")
	require.Equal(t, "unknown", b.Commit)
	require.False(t, b.Dirty)
	require.Equal(t, lastMigration(t), b.Schema)
	require.Positive(t, b.RiverSchema)

	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"},
		{Key: "vcs.time", Value: "2026-11-27T20:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	b, err = buildInfo("", bi)
	require.NoError(t, err)
	require.Equal(t, BuildInfo{Version: "dev", GoVersion: "go1.99.1", Commit: "0123456789abcdef", Dirty: true,
		CommitTime: "2026-11-27T20:00:00Z", Schema: lastMigration(t), RiverSchema: b.RiverSchema}, b)

	bi.Main.Version = "v1.4.0"
	b, _ = buildInfo("", bi)
	require.Equal(t, "v1.4.0", b.Version, "go install …@v1.4.0 records the module version")
	b, _ = buildInfo("v2.0.0-rc1", bi)
	require.Equal(t, "v2.0.0-rc1", b.Version, "ldflags -X wins")
}

// bpc version and bpc --version print without any configuration.
func TestVersionCommandNeedsNoConfiguration(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		var stdout, stderr bytes.Buffer
		require.NoError(t, Run(t.Context(), []string{arg}, func(string) string { return "" }, &stdout, &stderr))
		require.Empty(t, stderr.String())
		require.Regexp(t, `^bpc \S+\ngo:      go\S+\ncommit:  .+\nschema:  `+lastMigration(t)+` \(River migration \d+\)\n$`, stdout.String())
	}
}

package store_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// store is persistence only: what a job is (jobargs) and how one is
// inserted (River's client) belong to the domain package, so no file of
// store may import either, nor insert River's rows by hand. rivertype is
// allowed for reading River's rows.
func TestStoreImportsNoJobArgsNorRiver(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.False(t, forbiddenInStore(path), "%s imports %s", name, path)
		}
		require.NotContains(t, strings.ToLower(string(src)), "insert into river_job", "%s inserts River jobs", name)
		checked++
	}
	require.NotZero(t, checked, "no source file of store found")
}

func forbiddenInStore(path string) bool {
	const river = "github.com/riverqueue/river"
	switch {
	case path == "github.com/bpc-platform/bpc/jobargs", strings.HasPrefix(path, "github.com/bpc-platform/bpc/jobargs/"):
		return true
	case path == river+"/rivertype":
		return false
	}
	return path == river || strings.HasPrefix(path, river+"/")
}

func TestForbiddenInStore(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"github.com/bpc-platform/bpc/jobargs":                true,
		"github.com/riverqueue/river":                        true,
		"github.com/riverqueue/river/riverdriver/riverpgxv5": true,
		"github.com/riverqueue/river/rivertype":              false,
		"github.com/jackc/pgx/v5":                            false,
		"github.com/bpc-platform/bpc/core/errcode":           false,
		"github.com/riverqueue/rivercontrib/otelriver":       false,
		"github.com/bpc-platform/bpc/jobargsextra":           false,
	} {
		require.Equal(t, want, forbiddenInStore(path), path)
	}
}

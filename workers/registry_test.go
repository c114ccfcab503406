package workers

import (
	"testing"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

// The registry pairs args and worker through one type parameter
// (register[A]), so a kind cannot be registered with another kind's worker;
// what is left to check is what the compiler cannot see.
func TestRegistryListsEachKindOnceWithItsDocs(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, registry)
	seen := map[string]bool{}
	for _, r := range registry {
		require.NotEmpty(t, r.Name)
		require.False(t, seen[r.Name], "%s registered twice", r.Name)
		seen[r.Name] = true
		require.NotEmpty(t, r.Summary, "%s has no summary for the docs", r.Name)
		require.Equal(t, r.Name, r.New().Kind(), "New makes the args of %s", r.Name)
		require.NoError(t, r.add(river.NewWorkers(), Deps{}), r.Name)
	}
	require.NotPanics(t, func() { Register(river.NewWorkers(), Deps{}) })
}

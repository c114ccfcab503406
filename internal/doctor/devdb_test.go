package doctor_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/testdb"
)

// nothingListens is an address no Postgres answers on.
const nothingListens = "127.0.0.1:1"

// testServer is the test database's address and name (a Postgres that
// lets user postgres in without a password, as scripts/pg.sh's are).
func testServer(t *testing.T) (addr, db string) {
	t.Helper()
	u, err := url.Parse(testdb.URL())
	require.NoError(t, err)
	return u.Host, strings.TrimPrefix(u.Path, "/")
}

// checkout makes a directory that looks like a checkout to the search
// (scripts/pg.sh), with a private cluster in .pgdata whose postmaster.pid
// names port, or none when port is "".
func checkout(t *testing.T, port string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "scripts", "pg.sh"), []byte("#!/bin/sh\n"), 0o644))
	data := filepath.Join(root, ".pgdata", "data")
	require.NoError(t, os.MkdirAll(data, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("16\n"), 0o600))
	if port != "" {
		pid := "4242\n" + data + "\n1764270000\n" + port + "\n" + root + "/.pgdata/run\n127.0.0.1\n"
		require.NoError(t, os.WriteFile(filepath.Join(data, "postmaster.pid"), []byte(pid), 0o600))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "internal", "cli"), 0o755))
	return root
}

// The shared server on 127.0.0.1:5432 comes first, as in scripts/pg.sh.
func TestFindDevDatabaseTriesTheSharedServerFirst(t *testing.T) {
	t.Parallel()
	addr, db := testServer(t)
	u, how, err := doctor.FindDevDatabase(t.Context(), doctor.DevSearch{Dir: t.TempDir(), Addr: addr, DBName: db})
	require.NoError(t, err)
	require.Equal(t, "Postgres on "+addr+", database "+db, how)
	require.Contains(t, u, "postgres://postgres@"+addr+"/"+db+"?")
}

// Without one, the checkout's private cluster: the port its
// postmaster.pid names, found from a directory inside the checkout.
func TestFindDevDatabaseFindsTheCheckoutsPrivateCluster(t *testing.T) {
	t.Parallel()
	addr, db := testServer(t)
	_, port, ok := strings.Cut(addr, ":")
	require.True(t, ok, addr)
	root := checkout(t, port)
	u, how, err := doctor.FindDevDatabase(t.Context(), doctor.DevSearch{
		Dir: filepath.Join(root, "internal", "cli"), Addr: nothingListens, DBName: db})
	require.NoError(t, err)
	resolved, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	require.Equal(t, "the private cluster in "+filepath.Join(resolved, ".pgdata", "data")+", database "+db, how)
	require.Contains(t, u, "@127.0.0.1:"+port+"/"+db+"?")
}

// Nothing found: the error says what was tried and what to set.
func TestFindDevDatabaseSaysWhatToSet(t *testing.T) {
	t.Parallel()
	addr, _ := testServer(t)
	_, _, err := doctor.FindDevDatabase(t.Context(), doctor.DevSearch{Dir: checkout(t, ""), Addr: nothingListens, DBName: "bpc"})
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "DATABASE_URL is not set and no dev database was found")
	require.Contains(t, msg, "Postgres on "+nothingListens+": ")
	require.Contains(t, msg, "/.pgdata/data is not running (`make run` or `scripts/pg.sh` starts it)")
	require.Contains(t, msg, "Set DATABASE_URL (postgres://user@host:5432/db), or run `make run`")

	_, _, err = doctor.FindDevDatabase(t.Context(), doctor.DevSearch{Dir: t.TempDir(), Addr: addr, DBName: "bpc_no_such_database_here"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Postgres on "+addr+" has no database bpc_no_such_database_here yet (`make run` or `make migrate` creates it)")
	require.Contains(t, err.Error(), "is not inside a checkout")
}

// The private cluster's /tmp home is named as scripts/pg.sh names it: the
// first 12 hex digits of the SHA-1 of the checkout's path.
func TestFindDevDatabaseLooksWherePgShPutsTheClusterInTmp(t *testing.T) {
	t.Parallel()
	root := checkout(t, "")
	require.NoError(t, os.RemoveAll(filepath.Join(root, ".pgdata")))
	resolved, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	out, err := exec.Command("bash", "-c", `printf '%s' "$1" | sha1sum | cut -c1-12`, "bash", resolved).Output()
	require.NoError(t, err)
	tmp := "/tmp/bpc-pgdata-" + strings.TrimSpace(string(out))
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "data"), 0o700))
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "data", "PG_VERSION"), []byte("16\n"), 0o600))
	_, _, err = doctor.FindDevDatabase(t.Context(), doctor.DevSearch{Dir: root, Addr: nothingListens, DBName: "bpc"})
	require.ErrorContains(t, err, "the private cluster in "+filepath.Join(tmp, "data")+" is not running")
}

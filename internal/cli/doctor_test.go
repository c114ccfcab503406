package cli

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/testdb"
)

// bpc doctor without DATABASE_URL in dev finds the dev database as `make
// doctor` does (the search is the doctor package's; here it is pointed at
// a migrated test schema), or says what to set. Not parallel: it sets
// devSearch.
func TestDoctorFindsTheDevDatabaseWithoutDatabaseURL(t *testing.T) {
	schema, schemaURL := testdb.EmptySchema(t)
	var out, errOut bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"migrate"}, func(k string) string {
		return map[string]string{"DATABASE_URL": schemaURL}[k]
	}, &out, &errOut))

	u, err := url.Parse(testdb.URL())
	require.NoError(t, err)
	db := strings.TrimPrefix(u.Path, "/")
	saved := devSearch
	t.Cleanup(func() { devSearch = saved })
	devSearch = func() doctor.DevSearch {
		return doctor.DevSearch{Dir: t.TempDir(), Addr: u.Host, DBName: db, Params: url.Values{"search_path": {schema}}}
	}
	noEnv := func(string) string { return "" }
	out.Reset()
	errOut.Reset()
	require.NoError(t, Run(t.Context(), []string{"doctor"}, noEnv, &out, &errOut))
	require.Equal(t, "doctor: DATABASE_URL is not set; using the dev database: Postgres on "+u.Host+", database "+db+"\n", errOut.String())
	require.Contains(t, out.String(), "schema is current")
	require.Contains(t, out.String(), "\nall good\n")

	devSearch = func() doctor.DevSearch {
		return doctor.DevSearch{Dir: t.TempDir(), Addr: "127.0.0.1:1", DBName: "bpc"}
	}
	err = Run(t.Context(), []string{"doctor"}, func(k string) string { return map[string]string{"BPC_ENV": "dev"}[k] }, &out, &errOut)
	require.ErrorContains(t, err, "DATABASE_URL is not set and no dev database was found")
	require.ErrorContains(t, err, "Set DATABASE_URL")

	// Outside dev nothing is guessed.
	prod := map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"BPC_PUBLIC_BASE_URL": "https://passports.example.com"}
	err = Run(t.Context(), []string{"doctor"}, func(k string) string { return prod[k] }, &out, &errOut)
	require.Equal(t, errcode.ConfigMissing, errcode.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "DATABASE_URL")
}

// bpc doctor in prod refuses to start without the signing variables a
// production run needs (SPEC §16), before it touches the database, naming
// each and never echoing a value.
func TestDoctorRefusesProdWithoutTheSigningVariables(t *testing.T) {
	t.Parallel()
	_, schemaURL := testdb.EmptySchema(t)
	kek := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for name, tc := range map[string]struct {
		vars  map[string]string
		names []string
	}{
		"neither":          {map[string]string{}, []string{"BPC_KEY_ENCRYPTION_KEY", "BPC_PUBLIC_BASE_URL"}},
		"no key":           {map[string]string{"BPC_PUBLIC_BASE_URL": "https://p.example.com"}, []string{"BPC_KEY_ENCRYPTION_KEY"}},
		"no base URL":      {map[string]string{"BPC_KEY_ENCRYPTION_KEY": kek}, []string{"BPC_PUBLIC_BASE_URL"}},
		"a short key":      {map[string]string{"BPC_KEY_ENCRYPTION_KEY": "c2hvcnQtc2VjcmV0", "BPC_PUBLIC_BASE_URL": "https://p.example.com"}, []string{"BPC_KEY_ENCRYPTION_KEY"}},
		"an http base URL": {map[string]string{"BPC_KEY_ENCRYPTION_KEY": kek, "BPC_PUBLIC_BASE_URL": "http://p.example.com"}, []string{"BPC_PUBLIC_BASE_URL"}},
	} {
		vars := map[string]string{"BPC_ENV": "prod", "DATABASE_URL": schemaURL}
		for k, v := range tc.vars {
			vars[k] = v
		}
		var out, errOut bytes.Buffer
		err := Run(t.Context(), []string{"doctor"}, func(k string) string { return vars[k] }, &out, &errOut)
		require.Error(t, err, name)
		for _, n := range tc.names {
			require.ErrorContains(t, err, n, name)
		}
		require.NotContains(t, err.Error(), "c2hvcnQtc2VjcmV0", name)
		require.Empty(t, out.String(), "%s: nothing was checked", name)
	}
}

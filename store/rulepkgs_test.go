package store_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (e env) createRulePackage(t *testing.T, tenantID uuid.UUID, name string) bpctype.RulePackage {
	t.Helper()
	p, err := e.Store.CreateRulePackage(e.Ctx, tenantID, name)
	require.NoError(t, err)
	return p
}

func (e env) createRuleVersion(t *testing.T, tenantID, packageID uuid.UUID, dsl, tests string) (bpctype.RulePackageVersion, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) (bpctype.RulePackageVersion, error) {
		return q.CreateRulePackageVersion(e.Ctx, tenantID, packageID, dsl, tests)
	})
}

func (e env) recordRun(t *testing.T, run bpctype.RuleTestsRun) (bpctype.RuleTestsRun, bool) {
	t.Helper()
	var out bpctype.RuleTestsRun
	var existed bool
	require.NoError(t, e.inTx(func(q *store.Queries) (err error) {
		out, existed, err = passport.StoreRuleTestsRun(e.Ctx, q, run)
		return err
	}))
	return out, existed
}

func (e env) publish(t *testing.T, tenantID, versionID uuid.UUID) (bpctype.RulePackageVersion, bool, error) {
	t.Helper()
	var v bpctype.RulePackageVersion
	var changed bool
	err := e.inTx(func(q *store.Queries) (err error) {
		v, changed, err = passport.MarkRuleVersionPublished(e.Ctx, q, tenantID, versionID)
		return err
	})
	return v, changed, err
}

func (e env) ruleVersion(t *testing.T, tenantID, id uuid.UUID) bpctype.RulePackageVersion {
	t.Helper()
	v, err := e.Store.GetRulePackageVersion(e.Ctx, tenantID, id, false)
	require.NoError(t, err)
	return v
}

// sampleRules stores the sample rule package as a new version, DRAFT.
func (e env) sampleRules(t *testing.T, tenantID uuid.UUID) bpctype.RulePackageVersion {
	t.Helper()
	p := e.createRulePackage(t, tenantID, "eu-battery-"+uuid.NewString()[:8])
	v, err := e.createRuleVersion(t, tenantID, p.RulePackageID, nmc811.Rules(), nmc811.Tests())
	require.NoError(t, err)
	return v
}

// passedRun is a PASSED run of cases cases.
func passedRun(tenantID, versionID uuid.UUID, cases int32) bpctype.RuleTestsRun {
	return bpctype.RuleTestsRun{TenantID: tenantID, RulePackageVersionID: versionID, Seed: 7, Status: "PASSED",
		TotalCases: cases, Passed: cases}
}

func TestCreateRulePackage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)

	p := e.createRulePackage(t, store.DevTenantID, "eu-battery")
	require.Equal(t, "eu-battery", p.Name)
	require.Equal(t, store.DevTenantID, p.TenantID)
	_, err := e.Store.CreateRulePackage(e.Ctx, store.DevTenantID, "eu-battery")
	c := requireCode(t, err, errcode.Conflict)
	require.Contains(t, c.Message, "eu-battery")
	_, err = e.Store.CreateRulePackage(e.Ctx, uuid.New(), "eu-battery")
	requireCode(t, err, errcode.NotFound)
	// Names are unique per tenant only.
	theirs := e.createRulePackage(t, other, "eu-battery")
	require.NotEqual(t, p.RulePackageID, theirs.RulePackageID)
	e.createRulePackage(t, store.DevTenantID, "a-first")

	require.Equal(t, p.Name, getOwn(t, e, e.Store.GetRulePackage, other, p.RulePackageID).Name)

	list, err := e.Store.ListRulePackages(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"a-first", "eu-battery"}, []string{list[0].Name, list[1].Name})
	list, err = e.Store.ListRulePackages(e.Ctx, other)
	require.NoError(t, err)
	require.Len(t, list, 1)
}

func TestCreateRulePackageVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	p := e.createRulePackage(t, store.DevTenantID, "eu-battery")
	dsl, tests := nmc811.Rules(), nmc811.Tests()

	v1, err := e.createRuleVersion(t, store.DevTenantID, p.RulePackageID, dsl, tests)
	require.NoError(t, err)
	require.Equal(t, int32(1), v1.Version)
	require.Equal(t, bpctype.RulesDraft, v1.Status)
	require.Equal(t, p.RulePackageID, v1.RulePackageID)
	require.Equal(t, sha256Hex([]byte(dsl)), v1.DSLSHA256)
	require.Equal(t, sha256Hex([]byte(tests)), v1.TestsSHA256)
	require.Empty(t, v1.DSLSource, "sources are not returned with the metadata")
	require.Empty(t, v1.TestsSource)
	require.Nil(t, v1.ValidatedAt)
	require.Nil(t, v1.PublishedAt)

	v2, err := e.createRuleVersion(t, store.DevTenantID, p.RulePackageID, dsl+"\n", tests)
	require.NoError(t, err)
	require.Equal(t, int32(2), v2.Version)
	require.Equal(t, sha256Hex([]byte(dsl+"\n")), v2.DSLSHA256)
	require.Equal(t, v1.TestsSHA256, v2.TestsSHA256)

	meta := e.ruleVersion(t, store.DevTenantID, v1.RulePackageVersionID)
	require.Empty(t, meta.DSLSource)
	require.Equal(t, v1.DSLSHA256, meta.DSLSHA256)
	b, err := json.Marshal(meta)
	require.NoError(t, err)
	require.NotContains(t, string(b), "dsl_source")
	require.NotContains(t, string(b), "tests_source")

	full, err := e.Store.GetRulePackageVersion(e.Ctx, store.DevTenantID, v1.RulePackageVersionID, true)
	require.NoError(t, err)
	require.Equal(t, dsl, full.DSLSource)
	require.Equal(t, tests, full.TestsSource)
	require.Equal(t, sha256Hex([]byte(full.DSLSource)), full.DSLSHA256)

	list, err := e.Store.ListRulePackageVersions(e.Ctx, store.DevTenantID, p.RulePackageID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []int32{2, 1}, []int32{list[0].Version, list[1].Version})
	require.Empty(t, list[0].DSLSource)

	_, err = e.createRuleVersion(t, store.DevTenantID, uuid.New(), dsl, tests)
	requireCode(t, err, errcode.NotFound)
	_, err = e.createRuleVersion(t, other, p.RulePackageID, dsl, tests)
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.GetRulePackageVersion(e.Ctx, other, v1.RulePackageVersionID, true)
	requireCode(t, err, errcode.NotFound)
	list, err = e.Store.ListRulePackageVersions(e.Ctx, other, p.RulePackageID)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestRuleTestsRunsValidateAndPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.sampleRules(t, store.DevTenantID)
	id := v.RulePackageVersionID

	// A FAILED run keeps the version DRAFT and stores its first failure.
	failure := json.RawMessage(`{"test":"t1","case":3,"inputs":{},"expected":"1","actual":"2"}`)
	failed, existed := e.recordRun(t, bpctype.RuleTestsRun{TenantID: store.DevTenantID, RulePackageVersionID: id, Seed: 1,
		Status: "FAILED", TotalCases: 600, Passed: 599, Failed: 1, FirstFailure: failure, RiverJobID: ptr(int64(11))})
	require.False(t, existed)
	require.Equal(t, "FAILED", failed.Status)
	require.JSONEq(t, string(failure), string(failed.FirstFailure))
	require.Equal(t, int64(11), *failed.RiverJobID)
	require.Equal(t, bpctype.RulesDraft, e.ruleVersion(t, store.DevTenantID, id).Status)

	// A PASSED run with too few cases keeps it DRAFT.
	few, _ := e.recordRun(t, bpctype.RuleTestsRun{TenantID: store.DevTenantID, RulePackageVersionID: id, Seed: 2,
		Status: "PASSED", TotalCases: passport.MinRuleTestCases - 1, Passed: passport.MinRuleTestCases - 1, RiverJobID: ptr(int64(12))})
	require.Empty(t, few.FirstFailure, "no failure is stored as NULL")
	require.Equal(t, bpctype.RulesDraft, e.ruleVersion(t, store.DevTenantID, id).Status)

	_, _, err := e.publish(t, store.DevTenantID, id)
	requireCode(t, err, errcode.RuleTestsFailed)

	// A PASSED run with enough cases validates it.
	run := passedRun(store.DevTenantID, id, passport.MinRuleTestCases)
	run.RiverJobID = ptr(int64(13))
	passed, existed := e.recordRun(t, run)
	require.False(t, existed)
	require.Equal(t, int32(passport.MinRuleTestCases), passed.TotalCases)
	validated := e.ruleVersion(t, store.DevTenantID, id)
	require.Equal(t, bpctype.RulesValidated, validated.Status)
	require.NotNil(t, validated.ValidatedAt)

	// The same River job again returns the stored run and adds no row.
	rerun := run
	rerun.Seed, rerun.Status, rerun.Passed, rerun.Failed = 99, "FAILED", 0, passport.MinRuleTestCases
	again, existed := e.recordRun(t, rerun)
	require.True(t, existed)
	require.Equal(t, passed.RuleTestsRunID, again.RuleTestsRunID)
	require.Equal(t, "PASSED", again.Status)
	require.Equal(t, int64(7), again.Seed)
	require.Equal(t, 3, e.Count(t, `SELECT count(*) FROM rule_tests_runs WHERE rule_package_version_id = $1`, id))

	runs, err := e.Store.ListRuleTestsRuns(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	require.Equal(t, passed.RuleTestsRunID, runs[0].RuleTestsRunID, "newest first")
	runs, err = e.Store.ListRuleTestsRuns(e.Ctx, e.OtherTenant(t), id)
	require.NoError(t, err)
	require.Empty(t, runs)

	pub, changed, err := e.publish(t, store.DevTenantID, id)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, bpctype.RulesPublished, pub.Status)
	require.NotNil(t, pub.PublishedAt)
	require.Empty(t, pub.DSLSource)

	pub2, changed, err := e.publish(t, store.DevTenantID, id)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, bpctype.RulesPublished, pub2.Status)
	require.True(t, pub.PublishedAt.Equal(*pub2.PublishedAt), "publishing again changes nothing")
	require.Empty(t, pub2.DSLSource)

	// A later passing run does not move a PUBLISHED version back.
	e.recordRun(t, passedRun(store.DevTenantID, id, 1000))
	require.Equal(t, bpctype.RulesPublished, e.ruleVersion(t, store.DevTenantID, id).Status)
}

func TestRuleTestsRunsWithoutJobAreNotDeduplicated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.sampleRules(t, store.DevTenantID)
	a, existed := e.recordRun(t, passedRun(store.DevTenantID, v.RulePackageVersionID, 10))
	require.False(t, existed)
	require.Nil(t, a.RiverJobID)
	b, existed := e.recordRun(t, passedRun(store.DevTenantID, v.RulePackageVersionID, 10))
	require.False(t, existed)
	require.NotEqual(t, a.RuleTestsRunID, b.RuleTestsRunID)
	require.Equal(t, bpctype.RulesDraft, e.ruleVersion(t, store.DevTenantID, v.RulePackageVersionID).Status)
}

func TestRuleVersionsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	v := e.sampleRules(t, store.DevTenantID)

	// A run cannot be recorded for another tenant's version (composite foreign key).
	err := e.inTx(func(q *store.Queries) error {
		_, _, err := passport.StoreRuleTestsRun(e.Ctx, q, passedRun(other, v.RulePackageVersionID, passport.MinRuleTestCases))
		return err
	})
	require.Error(t, err)
	require.True(t, store.IsForeignKeyViolation(err), "%v", err)
	require.Equal(t, bpctype.RulesDraft, e.ruleVersion(t, store.DevTenantID, v.RulePackageVersionID).Status)

	e.recordRun(t, passedRun(store.DevTenantID, v.RulePackageVersionID, passport.MinRuleTestCases))
	_, _, err = e.publish(t, other, v.RulePackageVersionID)
	requireCode(t, err, errcode.NotFound)
	require.Equal(t, bpctype.RulesValidated, e.ruleVersion(t, store.DevTenantID, v.RulePackageVersionID).Status)
	err = e.inTx(func(q *store.Queries) error {
		_, err := q.LockRulePackageVersion(e.Ctx, other, v.RulePackageVersionID)
		return err
	})
	requireCode(t, err, errcode.NotFound)
}

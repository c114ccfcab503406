package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

const rulePackageColumns = `rule_package_id, tenant_id, name, created_at`

const rulePackageVersionMeta = `rule_package_version_id, tenant_id, rule_package_id, version, status,
	'' AS dsl_source, dsl_sha256, '' AS tests_source, tests_sha256, created_at, validated_at, published_at`

const rulePackageVersionProgram = `rule_package_version_id, tenant_id, rule_package_id, version, status,
	dsl_source, dsl_sha256, '' AS tests_source, tests_sha256, created_at, validated_at, published_at`

const rulePackageVersionFull = `rule_package_version_id, tenant_id, rule_package_id, version, status,
	dsl_source, dsl_sha256, tests_source, tests_sha256, created_at, validated_at, published_at`

const ruleTestsRunColumns = `rule_tests_run_id, tenant_id, rule_package_version_id, seed, status,
	total_cases, passed, failed, first_failure, river_job_id, created_at`

// CreateRulePackage creates a rule package; names are unique per tenant.
func (q *Queries) CreateRulePackage(ctx context.Context, tenantID uuid.UUID, name string) (bpctype.RulePackage, error) {
	p, err := create[bpctype.RulePackage](ctx, q.db, "rule package", "tenant", tenantID, `INSERT INTO rule_packages
		(rule_package_id, tenant_id, name) VALUES ($1, $2, $3)
		RETURNING `+rulePackageColumns, uuid.New(), tenantID, name)
	if IsUniqueViolation(err, "rule_packages_name_uniq") {
		return bpctype.RulePackage{}, errcode.New(errcode.Conflict, "a rule package named %q exists", name)
	}
	return p, err
}

// GetRulePackage returns the tenant's rule package.
func (q *Queries) GetRulePackage(ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackage, error) {
	return getOne[bpctype.RulePackage](ctx, q.db, "rule package", id,
		`SELECT `+rulePackageColumns+` FROM rule_packages WHERE tenant_id = $1 AND rule_package_id = $2`, tenantID, id)
}

// ListRulePackages returns the tenant's rule packages by name.
func (q *Queries) ListRulePackages(ctx context.Context, tenantID uuid.UUID) ([]bpctype.RulePackage, error) {
	return list[bpctype.RulePackage](ctx, q.db, "rule packages",
		`SELECT `+rulePackageColumns+` FROM rule_packages WHERE tenant_id = $1 ORDER BY name`, tenantID)
}

// CreateRulePackageVersion stores the package's next version as DRAFT. The
// caller checks the sources first (rules.Check, rules.CheckTests).
func (q *Queries) CreateRulePackageVersion(ctx context.Context, tenantID, packageID uuid.UUID, dsl, tests string) (bpctype.RulePackageVersion, error) {
	if err := q.lockParent(ctx, "rule package", tenantID, packageID,
		`SELECT rule_package_id FROM rule_packages WHERE tenant_id = $1 AND rule_package_id = $2 FOR UPDATE`); err != nil {
		return bpctype.RulePackageVersion{}, err
	}
	v, err := queryOne[bpctype.RulePackageVersion](ctx, q.db, `INSERT INTO rule_package_versions
		(rule_package_version_id, tenant_id, rule_package_id, version, dsl_source, dsl_sha256, tests_source, tests_sha256)
		SELECT $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6, $7 FROM rule_package_versions WHERE rule_package_id = $3
		RETURNING `+rulePackageVersionMeta,
		uuid.New(), tenantID, packageID, dsl, hash.SHA256HexString(dsl), tests, hash.SHA256HexString(tests))
	if err != nil {
		return bpctype.RulePackageVersion{}, fmt.Errorf("error creating rule package version: %w", err)
	}
	return v, nil
}

// GetRulePackageVersion returns a version; withSources also loads the DSL
// and tests sources.
func (q *Queries) GetRulePackageVersion(ctx context.Context, tenantID, id uuid.UUID, withSources bool) (bpctype.RulePackageVersion, error) {
	cols := rulePackageVersionMeta
	if withSources {
		cols = rulePackageVersionFull
	}
	return q.rulePackageVersion(ctx, `SELECT `+cols+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_version_id = $2`, tenantID, id)
}

// GetRulePackageProgram returns a version with its DSL source and the
// digests of both sources, but not its tests source: what a compile reads
// (a tests source can be hundreds of KB).
func (q *Queries) GetRulePackageProgram(ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	return q.rulePackageVersion(ctx, getRulePackageProgramSQL, tenantID, id)
}

const getRulePackageProgramSQL = `SELECT ` + rulePackageVersionProgram + ` FROM rule_package_versions
	WHERE tenant_id = $1 AND rule_package_version_id = $2`

// LockRulePackageVersion returns a version with its sources, locked FOR UPDATE.
func (q *Queries) LockRulePackageVersion(ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	return q.rulePackageVersion(ctx, `SELECT `+rulePackageVersionFull+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_version_id = $2 FOR UPDATE`, tenantID, id)
}

func (q *Queries) rulePackageVersion(ctx context.Context, sql string, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	return getOne[bpctype.RulePackageVersion](ctx, q.db, "rule package version", id,
		sql, tenantID, id)
}

// ListRulePackageVersions returns a package's versions, newest first, without sources.
func (q *Queries) ListRulePackageVersions(ctx context.Context, tenantID, packageID uuid.UUID) ([]bpctype.RulePackageVersion, error) {
	return list[bpctype.RulePackageVersion](ctx, q.db, "rule package versions",
		`SELECT `+rulePackageVersionMeta+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_id = $2 ORDER BY version DESC`, tenantID, packageID)
}

// InsertRuleTestsRun stores a run. A run of the same River job stored
// before (a re-run of a completed job) is returned instead, with
// existed = true. The caller decides the run's status and what it does to
// its version (SetRulePackageVersionValidated).
func (q *Queries) InsertRuleTestsRun(ctx context.Context, run bpctype.RuleTestsRun) (bpctype.RuleTestsRun, bool, error) {
	if run.RiverJobID != nil {
		if existing, found, err := findOne[bpctype.RuleTestsRun](ctx, q.db, "the tests run", `SELECT `+ruleTestsRunColumns+`
			FROM rule_tests_runs WHERE river_job_id = $1`, *run.RiverJobID); err != nil || found {
			return existing, found, err
		}
	}
	if run.FirstFailure == nil {
		run.FirstFailure = json.RawMessage("null")
	}
	stored, err := queryOne[bpctype.RuleTestsRun](ctx, q.db, `INSERT INTO rule_tests_runs (rule_tests_run_id, tenant_id, rule_package_version_id, seed,
			status, total_cases, passed, failed, first_failure, river_job_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9::jsonb, 'null'::jsonb), $10)
		RETURNING `+ruleTestsRunColumns,
		uuid.New(), run.TenantID, run.RulePackageVersionID, run.Seed, run.Status, run.TotalCases, run.Passed, run.Failed,
		[]byte(run.FirstFailure), run.RiverJobID)
	if err != nil {
		return bpctype.RuleTestsRun{}, false, fmt.Errorf("error storing the tests run: %w", err)
	}
	return stored, false, nil
}

// SetRulePackageVersionValidated writes a DRAFT version as VALIDATED; a
// version in another state is left as it is.
func (q *Queries) SetRulePackageVersionValidated(ctx context.Context, tenantID, id uuid.UUID) error {
	if _, err := q.db.Exec(ctx, `UPDATE rule_package_versions SET status = 'VALIDATED', validated_at = now()
		WHERE tenant_id = $1 AND rule_package_version_id = $2 AND status = 'DRAFT'`, tenantID, id); err != nil {
		return fmt.Errorf("error validating rule package version: %w", err)
	}
	return nil
}

// ListRuleTestsRuns returns a version's runs, newest first.
func (q *Queries) ListRuleTestsRuns(ctx context.Context, tenantID, versionID uuid.UUID) ([]bpctype.RuleTestsRun, error) {
	return list[bpctype.RuleTestsRun](ctx, q.db, "tests runs",
		`SELECT `+ruleTestsRunColumns+` FROM rule_tests_runs
		WHERE tenant_id = $1 AND rule_package_version_id = $2 ORDER BY created_at DESC, rule_tests_run_id`, tenantID, versionID)
}

// SetRulePackageVersionPublished writes a VALIDATED version as PUBLISHED
// and returns it without its sources; a version in another state is
// ErrStale.
func (q *Queries) SetRulePackageVersionPublished(ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	tag, err := q.db.Exec(ctx, `UPDATE rule_package_versions SET status = 'PUBLISHED', published_at = now()
		WHERE tenant_id = $1 AND rule_package_version_id = $2 AND status = 'VALIDATED'`, tenantID, id)
	switch {
	case err != nil:
		return bpctype.RulePackageVersion{}, fmt.Errorf("error publishing rule package version: %w", err)
	case tag.RowsAffected() == 0:
		return bpctype.RulePackageVersion{}, fmt.Errorf("error publishing rule package version %s: %w", id, ErrStale)
	}
	return q.GetRulePackageVersion(ctx, tenantID, id, false)
}

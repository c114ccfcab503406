package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Rule package version statuses.
const (
	RulesDraft     = "DRAFT"
	RulesValidated = "VALIDATED"
	RulesPublished = "PUBLISHED"
)

// RulePackage is a named, versioned rule package.
type RulePackage struct {
	RulePackageID uuid.UUID `db:"rule_package_id" json:"rule_package_id"`
	TenantID      uuid.UUID `db:"tenant_id" json:"tenant_id"`
	Name          string    `db:"name" json:"name"`
	CreatedAt     time.Time `db:"created_at" json:"created_at"`
}

// RulePackageVersion is one version of a rule package: DSL and tests sources
// with their SHA-256. Sources are omitted from JSON unless loaded.
type RulePackageVersion struct {
	RulePackageVersionID uuid.UUID  `db:"rule_package_version_id" json:"rule_package_version_id"`
	TenantID             uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	RulePackageID        uuid.UUID  `db:"rule_package_id" json:"rule_package_id"`
	Version              int32      `db:"version" json:"version"`
	Status               string     `db:"status" json:"status"`
	DSLSource            string     `db:"dsl_source" json:"dsl_source,omitempty"`
	DSLSHA256            string     `db:"dsl_sha256" json:"dsl_sha256"`
	TestsSource          string     `db:"tests_source" json:"tests_source,omitempty"`
	TestsSHA256          string     `db:"tests_sha256" json:"tests_sha256"`
	CreatedAt            time.Time  `db:"created_at" json:"created_at"`
	ValidatedAt          *time.Time `db:"validated_at" json:"validated_at"`
	PublishedAt          *time.Time `db:"published_at" json:"published_at"`
}

// RuleTestsRun is one run of a version's tests.
type RuleTestsRun struct {
	RuleTestsRunID       uuid.UUID       `db:"rule_tests_run_id" json:"rule_tests_run_id"`
	TenantID             uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	RulePackageVersionID uuid.UUID       `db:"rule_package_version_id" json:"rule_package_version_id"`
	Seed                 int64           `db:"seed" json:"seed"`
	Status               string          `db:"status" json:"status"`
	TotalCases           int32           `db:"total_cases" json:"total_cases"`
	Passed               int32           `db:"passed" json:"passed"`
	Failed               int32           `db:"failed" json:"failed"`
	FirstFailure         json.RawMessage `db:"first_failure" json:"first_failure"`
	RiverJobID           *int64          `db:"river_job_id" json:"river_job_id"`
	CreatedAt            time.Time       `db:"created_at" json:"created_at"`
}

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
func (q *Queries) CreateRulePackage(ctx context.Context, tenantID uuid.UUID, name string) (RulePackage, error) {
	p, err := create[RulePackage](ctx, q.db, "rule package", "tenant", tenantID, `INSERT INTO rule_packages
		(rule_package_id, tenant_id, name) VALUES ($1, $2, $3)
		RETURNING `+rulePackageColumns, uuid.New(), tenantID, name)
	if IsUniqueViolation(err, "rule_packages_name_uniq") {
		return RulePackage{}, errcode.New(errcode.Conflict, "a rule package named %q exists", name)
	}
	return p, err
}

// GetRulePackage returns the tenant's rule package.
func (q *Queries) GetRulePackage(ctx context.Context, tenantID, id uuid.UUID) (RulePackage, error) {
	return getOne[RulePackage](ctx, q.db, "rule package", id,
		`SELECT `+rulePackageColumns+` FROM rule_packages WHERE tenant_id = $1 AND rule_package_id = $2`, tenantID, id)
}

// ListRulePackages returns the tenant's rule packages by name.
func (q *Queries) ListRulePackages(ctx context.Context, tenantID uuid.UUID) ([]RulePackage, error) {
	return list[RulePackage](ctx, q.db, "rule packages",
		`SELECT `+rulePackageColumns+` FROM rule_packages WHERE tenant_id = $1 ORDER BY name`, tenantID)
}

// CreateRulePackageVersion stores the package's next version as DRAFT. The
// caller checks the sources first (rules.Check, rules.CheckTests).
func (q *Queries) CreateRulePackageVersion(ctx context.Context, tenantID, packageID uuid.UUID, dsl, tests string) (RulePackageVersion, error) {
	if err := q.lockParent(ctx, "rule package", tenantID, packageID,
		`SELECT rule_package_id FROM rule_packages WHERE tenant_id = $1 AND rule_package_id = $2 FOR UPDATE`); err != nil {
		return RulePackageVersion{}, err
	}
	v, err := queryOne[RulePackageVersion](ctx, q.db, `INSERT INTO rule_package_versions
		(rule_package_version_id, tenant_id, rule_package_id, version, dsl_source, dsl_sha256, tests_source, tests_sha256)
		SELECT $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6, $7 FROM rule_package_versions WHERE rule_package_id = $3
		RETURNING `+rulePackageVersionMeta,
		uuid.New(), tenantID, packageID, dsl, hash.SHA256HexString(dsl), tests, hash.SHA256HexString(tests))
	if err != nil {
		return RulePackageVersion{}, fmt.Errorf("error creating rule package version: %w", err)
	}
	return v, nil
}

// GetRulePackageVersion returns a version; withSources also loads the DSL
// and tests sources.
func (q *Queries) GetRulePackageVersion(ctx context.Context, tenantID, id uuid.UUID, withSources bool) (RulePackageVersion, error) {
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
func (q *Queries) GetRulePackageProgram(ctx context.Context, tenantID, id uuid.UUID) (RulePackageVersion, error) {
	return q.rulePackageVersion(ctx, `SELECT `+rulePackageVersionProgram+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_version_id = $2`, tenantID, id)
}

// LockRulePackageVersion returns a version with its sources, locked FOR UPDATE.
func (q *Queries) LockRulePackageVersion(ctx context.Context, tenantID, id uuid.UUID) (RulePackageVersion, error) {
	return q.rulePackageVersion(ctx, `SELECT `+rulePackageVersionFull+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_version_id = $2 FOR UPDATE`, tenantID, id)
}

func (q *Queries) rulePackageVersion(ctx context.Context, sql string, tenantID, id uuid.UUID) (RulePackageVersion, error) {
	return getOne[RulePackageVersion](ctx, q.db, "rule package version", id,
		sql, tenantID, id)
}

// ListRulePackageVersions returns a package's versions, newest first, without sources.
func (q *Queries) ListRulePackageVersions(ctx context.Context, tenantID, packageID uuid.UUID) ([]RulePackageVersion, error) {
	return list[RulePackageVersion](ctx, q.db, "rule package versions",
		`SELECT `+rulePackageVersionMeta+` FROM rule_package_versions
		WHERE tenant_id = $1 AND rule_package_id = $2 ORDER BY version DESC`, tenantID, packageID)
}

// InsertRuleTestsRun stores a run. A run of the same River job stored
// before (a re-run of a completed job) is returned instead, with
// existed = true. The caller decides the run's status and what it does to
// its version (SetRulePackageVersionValidated).
func (q *Queries) InsertRuleTestsRun(ctx context.Context, run RuleTestsRun) (RuleTestsRun, bool, error) {
	if run.RiverJobID != nil {
		if existing, found, err := findOne[RuleTestsRun](ctx, q.db, "the tests run", `SELECT `+ruleTestsRunColumns+`
			FROM rule_tests_runs WHERE river_job_id = $1`, *run.RiverJobID); err != nil || found {
			return existing, found, err
		}
	}
	if run.FirstFailure == nil {
		run.FirstFailure = json.RawMessage("null")
	}
	stored, err := queryOne[RuleTestsRun](ctx, q.db, `INSERT INTO rule_tests_runs (rule_tests_run_id, tenant_id, rule_package_version_id, seed,
			status, total_cases, passed, failed, first_failure, river_job_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9::jsonb, 'null'::jsonb), $10)
		RETURNING `+ruleTestsRunColumns,
		uuid.New(), run.TenantID, run.RulePackageVersionID, run.Seed, run.Status, run.TotalCases, run.Passed, run.Failed,
		[]byte(run.FirstFailure), run.RiverJobID)
	if err != nil {
		return RuleTestsRun{}, false, fmt.Errorf("error storing the tests run: %w", err)
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
func (q *Queries) ListRuleTestsRuns(ctx context.Context, tenantID, versionID uuid.UUID) ([]RuleTestsRun, error) {
	return list[RuleTestsRun](ctx, q.db, "tests runs",
		`SELECT `+ruleTestsRunColumns+` FROM rule_tests_runs
		WHERE tenant_id = $1 AND rule_package_version_id = $2 ORDER BY created_at DESC, rule_tests_run_id`, tenantID, versionID)
}

// SetRulePackageVersionPublished writes a VALIDATED version as PUBLISHED
// and returns it without its sources; a version in another state is
// ErrStale.
func (q *Queries) SetRulePackageVersionPublished(ctx context.Context, tenantID, id uuid.UUID) (RulePackageVersion, error) {
	tag, err := q.db.Exec(ctx, `UPDATE rule_package_versions SET status = 'PUBLISHED', published_at = now()
		WHERE tenant_id = $1 AND rule_package_version_id = $2 AND status = 'VALIDATED'`, tenantID, id)
	switch {
	case err != nil:
		return RulePackageVersion{}, fmt.Errorf("error publishing rule package version: %w", err)
	case tag.RowsAffected() == 0:
		return RulePackageVersion{}, fmt.Errorf("error publishing rule package version %s: %w", id, ErrStale)
	}
	return q.GetRulePackageVersion(ctx, tenantID, id, false)
}

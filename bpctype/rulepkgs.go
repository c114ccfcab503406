package bpctype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Rule package version statuses.
const (
	RulesDraft     = "DRAFT"
	RulesValidated = "VALIDATED"
	RulesPublished = "PUBLISHED"
)

// RuleVersionStatuses lists every rule package version status, in order.
var RuleVersionStatuses = []string{RulesDraft, RulesValidated, RulesPublished}

// Rule test run statuses.
const (
	RuleTestsPassed = "PASSED"
	RuleTestsFailed = "FAILED"
)

// RuleTestsStatuses lists every rule test run status.
var RuleTestsStatuses = []string{RuleTestsPassed, RuleTestsFailed}

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

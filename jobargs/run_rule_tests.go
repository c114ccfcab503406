package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindRunRuleTests is the SSOT type name and River kind of RunRuleTestsArgs.
const KindRunRuleTests = "RUN_RULE_TESTS"

// RunRuleTestsArgs runs a rule package version's example and property tests.
type RunRuleTestsArgs struct {
	Base
	RulePackageVersionID uuid.UUID `json:"rule_package_version_id"`
	// Seed makes property-test generation reproducible.
	Seed int64 `json:"seed"`
}

// Kind returns "RUN_RULE_TESTS".
func (RunRuleTestsArgs) Kind() string { return KindRunRuleTests }

// InsertOpts puts the job on the QueueRules queue at PriorityNormal priority.
func (RunRuleTestsArgs) InsertOpts() river.InsertOpts { return insertOpts(QueueRules, PriorityNormal) }

// Validate requires tenant_id and rule_package_version_id.
func (a RunRuleTestsArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (rule_package_version_id).
func (a RunRuleTestsArgs) Refs() []Ref {
	return []Ref{
		a.ref("rule_package_version_id", EntityRulePackageVersion, a.RulePackageVersionID),
	}
}

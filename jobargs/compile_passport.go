package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindCompile is the SSOT type name and River kind of CompilePassportArgs.
const KindCompile = "COMPILE_PASSPORT"

// CompilePassportArgs compiles a sealed snapshot with a published rule package into a passport version.
type CompilePassportArgs struct {
	Base
	PassportID           uuid.UUID `json:"passport_id"`
	SnapshotID           uuid.UUID `json:"snapshot_id"`
	RulePackageVersionID uuid.UUID `json:"rule_package_version_id"`
}

// Kind returns "COMPILE_PASSPORT".
func (CompilePassportArgs) Kind() string { return KindCompile }

// InsertOpts puts the job on the QueuePipeline queue at PriorityHigh priority.
func (CompilePassportArgs) InsertOpts() river.InsertOpts {
	return insertOpts(QueuePipeline, PriorityHigh)
}

// Validate requires tenant_id, passport_id, snapshot_id and rule_package_version_id.
func (a CompilePassportArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (passport_id, snapshot_id, rule_package_version_id).
func (a CompilePassportArgs) Refs() []Ref {
	return []Ref{
		a.ref("passport_id", EntityPassport, a.PassportID),
		a.ref("snapshot_id", EntitySnapshot, a.SnapshotID),
		a.ref("rule_package_version_id", EntityRulePackageVersion, a.RulePackageVersionID),
	}
}

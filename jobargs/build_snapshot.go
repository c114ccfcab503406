package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindBuildSnapshot is the SSOT type name and River kind of BuildSnapshotArgs.
const KindBuildSnapshot = "BUILD_SNAPSHOT"

// BuildSnapshotArgs moves a snapshot from BUILDING to READY.
type BuildSnapshotArgs struct {
	Base
	SnapshotID uuid.UUID `json:"snapshot_id"`
}

// Kind returns "BUILD_SNAPSHOT".
func (BuildSnapshotArgs) Kind() string { return KindBuildSnapshot }

// InsertOpts puts the job on the QueuePipeline queue at PriorityNormal priority.
func (BuildSnapshotArgs) InsertOpts() river.InsertOpts {
	return insertOpts(QueuePipeline, PriorityNormal)
}

// Validate requires tenant_id and snapshot_id.
func (a BuildSnapshotArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (snapshot_id).
func (a BuildSnapshotArgs) Refs() []Ref {
	return []Ref{
		a.ref("snapshot_id", EntitySnapshot, a.SnapshotID),
	}
}

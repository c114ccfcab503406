package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindSign is the SSOT type name and River kind of SignPassportArgs.
const KindSign = "SIGN_PASSPORT"

// SignPassportArgs signs a compiled passport version's receipt with Ed25519.
type SignPassportArgs struct {
	Base
	PassportVersionID uuid.UUID `json:"passport_version_id"`
}

// Kind returns "SIGN_PASSPORT".
func (SignPassportArgs) Kind() string { return KindSign }

// InsertOpts puts the job on the QueuePipeline queue at PriorityHigh priority.
func (SignPassportArgs) InsertOpts() river.InsertOpts { return insertOpts(QueuePipeline, PriorityHigh) }

// Validate requires tenant_id and passport_version_id.
func (a SignPassportArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (passport_version_id).
func (a SignPassportArgs) Refs() []Ref {
	return []Ref{
		a.ref("passport_version_id", EntityPassportVersion, a.PassportVersionID),
	}
}

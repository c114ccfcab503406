package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindGenerateQR is the SSOT type name and River kind of GenerateQRArgs.
const KindGenerateQR = "GENERATE_QR"

// GenerateQRArgs renders the QR code of a signed passport version: the
// BPC-QR-2 link to its public page.
type GenerateQRArgs struct {
	Base
	PassportVersionID uuid.UUID `json:"passport_version_id"`
}

// Kind returns "GENERATE_QR".
func (GenerateQRArgs) Kind() string { return KindGenerateQR }

// InsertOpts puts the job on the QueuePipeline queue at PriorityNormal priority.
func (GenerateQRArgs) InsertOpts() river.InsertOpts { return insertOpts(QueuePipeline, PriorityNormal) }

// Validate requires tenant_id and passport_version_id.
func (a GenerateQRArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (passport_version_id).
func (a GenerateQRArgs) Refs() []Ref {
	return []Ref{
		a.ref("passport_version_id", EntityPassportVersion, a.PassportVersionID),
	}
}

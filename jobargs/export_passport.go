package jobargs

import (
	"strings"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
)

// KindExport is the SSOT type name and River kind of ExportPassportArgs.
const KindExport = "EXPORT_PASSPORT"

// ExportPassportArgs writes an ACTIVE passport version to an export file.
type ExportPassportArgs struct {
	Base
	PassportVersionID uuid.UUID `json:"passport_version_id"`
	// Format is JSON (BPC-EXPORT-1, for verification) or PDF (for people).
	Format string `json:"format"`
}

// Kind returns "EXPORT_PASSPORT".
func (ExportPassportArgs) Kind() string { return KindExport }

// InsertOpts puts the job on the QueueExports queue at PriorityLow priority.
func (ExportPassportArgs) InsertOpts() river.InsertOpts { return insertOpts(QueueExports, PriorityLow) }

// Validate requires tenant_id and passport_version_id, and a format of JSON or PDF.
func (a ExportPassportArgs) Validate() error {
	if err := a.validate(a.Refs()); err != nil {
		return err
	}
	switch strings.ToUpper(a.Format) {
	case ExportFormatJSON, ExportFormatPDF:
		return nil
	case "":
		return errcode.Invalid("format", "is required (JSON or PDF)")
	default:
		return errcode.Invalid("format", "must be JSON or PDF, got %q", a.Format)
	}
}

// Export formats.
const (
	ExportFormatJSON = "JSON"
	ExportFormatPDF  = "PDF"
)

// Refs returns the rows the payload names (passport_version_id).
func (a ExportPassportArgs) Refs() []Ref {
	return []Ref{
		a.ref("passport_version_id", EntityPassportVersion, a.PassportVersionID),
	}
}

// Example returns a JSON export.
func (ExportPassportArgs) Example() Args {
	return &ExportPassportArgs{PassportVersionID: ExampleID(1), Format: ExportFormatJSON}
}

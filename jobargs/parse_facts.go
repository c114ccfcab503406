package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindParseFacts is the SSOT type name and River kind of ParseFactsArgs.
const KindParseFacts = "PARSE_FACTS"

// ParseFactsArgs parses an uploaded document version into facts.
type ParseFactsArgs struct {
	Base
	DocumentVersionID uuid.UUID `json:"document_version_id"`
}

// Kind returns "PARSE_FACTS".
func (ParseFactsArgs) Kind() string { return KindParseFacts }

// InsertOpts puts the job on the QueuePipeline queue at PriorityNormal priority.
func (ParseFactsArgs) InsertOpts() river.InsertOpts { return insertOpts(QueuePipeline, PriorityNormal) }

// Validate requires tenant_id and document_version_id.
func (a ParseFactsArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (document_version_id).
func (a ParseFactsArgs) Refs() []Ref {
	return []Ref{
		a.ref("document_version_id", EntityDocumentVersion, a.DocumentVersionID),
	}
}

package passport

// Aggregate types of the audit events the pipeline appends.
const (
	AggregateDocumentVersion    = "DocumentVersion"
	AggregateSnapshot           = "DataSnapshot"
	AggregateRulePackageVersion = "RulePackageVersion"
	AggregatePassportVersion    = "PassportVersion"
)

// Event types the pipeline appends (SPEC §7); webhook subscriptions name them.
const (
	EventDocumentUploaded   = "document.uploaded"
	EventFactsParsed        = "document.facts_parsed"
	EventDocumentRejected   = "document.rejected"
	EventSnapshotReady      = "snapshot.ready"
	EventSnapshotSealed     = "snapshot.sealed"
	EventTestsRun           = "rules.tests_run"
	EventRulesPublished     = "rules.published"
	EventCompiled           = "passport.compiled"
	EventSigned             = "passport.signed"
	EventQRGenerated        = "passport.qr_generated"
	EventPassportActivated  = "passport.activated"
	EventPassportSuperseded = "passport.superseded"
	EventExported           = "passport.exported"
)

// IsSystemEvent reports whether an aggregate type or event type is one the
// service itself appends: a custom event (POST /v1/events) may use
// neither, so that no client can write into the chain of a document,
// snapshot, rule package, passport or API key, nor send its subscribers an
// event that looks like the pipeline's.
func IsSystemEvent(aggregateType, eventType string) bool {
	switch aggregateType {
	case AggregateDocumentVersion, AggregateSnapshot, AggregateRulePackageVersion, AggregatePassportVersion, AggregateAPIKey:
		return true
	}
	switch eventType {
	case EventDocumentUploaded, EventFactsParsed, EventDocumentRejected, EventSnapshotReady, EventSnapshotSealed,
		EventTestsRun, EventRulesPublished, EventCompiled, EventSigned, EventQRGenerated, EventPassportActivated,
		EventPassportSuperseded, EventExported, EventKeyCreated, EventKeyRevoked:
		return true
	}
	return false
}

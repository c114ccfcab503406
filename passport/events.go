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

// IsSystemAggregate reports whether an aggregate type is one whose chain
// the service itself appends to (a document version's, a snapshot's, a rule
// package version's, a passport version's, an API key's, a tenant's).
func IsSystemAggregate(aggregateType string) bool {
	switch aggregateType {
	case AggregateDocumentVersion, AggregateSnapshot, AggregateRulePackageVersion, AggregatePassportVersion, AggregateAPIKey, AggregateTenant:
		return true
	}
	return false
}

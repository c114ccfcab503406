// Package passport holds the domain operations of the Battery Passport
// Compiler: every state change of a document version, snapshot, rule
// package version or passport version, written once and called by both the
// admin API and the River workers.
//
// An operation takes the transaction it runs in (Tx). Inside it, it writes
// the domain rows through the store, appends the audit event (whose
// subscribers get their webhook deliveries in the same transaction) and
// enqueues the next job of the pipeline under an idempotency key derived
// from what it is about, so that running it twice — an API retry, a River
// retry of a job whose completion was lost — has no second effect. The
// event names, aggregate types and idempotency keys of the pipeline are
// declared here and nowhere else.
//
// What an operation does not do is decide how its transaction ends: an API
// handler commits it; a worker also fences its lease and completes its River
// job in it (river.JobCompleteTx), which is why operations never see River's
// job context. Work that must not hold a transaction open — compiling,
// running rule tests, rendering a QR code, writing an export file — is a
// separate, pure step whose result the recording operation takes.
//
// Every job is enqueued here: POST /v1/jobs through Enqueue, operations
// through Tx.Enqueue (Tx.EnqueueChecked for ids a request named), all with
// one existence check of tenants and named ids, one set of idempotency
// rules and one retry of a transaction that lost a race on a key. The
// rules a product person would state — a snapshot takes items only while
// BUILDING, a document is at most facts.MaxDocumentBytes, a rule version
// needs MinRuleTestCases passing cases — are written here too; the store
// runs the SQL they decide on, at most with a WHERE guard.
//
// The pipeline (SPEC §2):
//
//	upload ─► PARSE_FACTS ─► (add items) ─► BUILD_SNAPSHOT ─► seal
//	rule version ─► RUN_RULE_TESTS ─► publish
//	COMPILE_PASSPORT ─► SIGN_PASSPORT ─► GENERATE_QR ─► activate ─► EXPORT_PASSPORT
package passport

package passport_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// env is a migrated schema of its own and an insert-only River client: the
// operations run in real transactions; no job is worked.
type env struct{ teststore.Env }

func newEnv(t *testing.T) env {
	t.Helper()
	return env{teststore.New(t)}
}

// run runs fn as the admin API does: in a transaction it commits.
func (e env) run(t *testing.T, fn func(t passport.Tx) error) error {
	t.Helper()
	return passport.InTx(e.Ctx, e.Store, e.River, "test", fn)
}

func (e env) events(t *testing.T, eventType string, aggregateID uuid.UUID) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM events WHERE event_type = $1 AND aggregate_id = $2`, eventType, aggregateID)
}

// bomDocument creates a BOM document of the dev tenant.
func (e env) bomDocument(t *testing.T, name string) bpctype.Document {
	t.Helper()
	doc, err := e.Store.CreateDocument(e.Ctx, store.DevTenantID, "BOM", name)
	require.NoError(t, err)
	return doc
}

func (e env) upload(t *testing.T, documentID uuid.UUID, content []byte) passport.Uploaded {
	t.Helper()
	var up passport.Uploaded
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		var err error
		up, err = passport.UploadDocumentVersion(e.Ctx, tx, passport.Upload{
			TenantID: store.DevTenantID, DocumentID: documentID, MimeType: passport.MIMEJSON, Content: content})
		return err
	}))
	return up
}

func TestUploadIsIdempotentByContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.bomDocument(t, "pack bom")

	first := e.upload(t, doc.DocumentID, bom(t))
	require.False(t, first.Existed)
	require.False(t, first.ParseJob.Existing)
	require.Equal(t, jobargs.KindParseFacts, first.ParseJob.Job.Type)
	require.Equal(t, "parse:"+first.Version.DocumentVersionID.String(), *first.ParseJob.Job.IdempotencyKey)
	require.Equal(t, 1, e.events(t, passport.EventDocumentUploaded, first.Version.DocumentVersionID))

	again := e.upload(t, doc.DocumentID, bom(t))
	require.True(t, again.Existed, "the same bytes are the same version")
	require.Equal(t, first.Version.DocumentVersionID, again.Version.DocumentVersionID)
	require.True(t, again.ParseJob.Existing)
	require.Equal(t, first.ParseJob.Job.JobID, again.ParseJob.Job.JobID, "and the same PARSE_FACTS job")
	require.Equal(t, 1, e.events(t, passport.EventDocumentUploaded, first.Version.DocumentVersionID), "no second event")
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM jobs WHERE type = 'PARSE_FACTS'`))
}

func TestParseFactsCommitsARejectionOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.bomDocument(t, "broken bom")
	up := e.upload(t, doc.DocumentID, []byte(`{"not":"a bom"}`))
	id := up.Version.DocumentVersionID

	parse := func() *errcode.Error {
		var rejected *errcode.Error
		require.NoError(t, e.run(t, func(tx passport.Tx) error {
			var err error
			rejected, err = passport.ParseFacts(e.Ctx, tx, store.DevTenantID, id)
			return err
		}))
		return rejected
	}
	first := parse()
	require.NotNil(t, first, "the parser refuses the document")
	require.False(t, first.Code.Retryable())
	v, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, bpctype.DocRejected, v.Status, "the rejection is committed with the transaction")
	require.Equal(t, 1, e.events(t, passport.EventDocumentRejected, id))

	require.NotNil(t, parse(), "parsing a rejected version again still fails")
	require.Equal(t, 1, e.events(t, passport.EventDocumentRejected, id), "without a second event")
	require.Zero(t, e.Count(t, `SELECT count(*) FROM facts WHERE source_document_version_id = $1`, id))
}

func TestParseFactsOfAnotherTenantsVersionIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.bomDocument(t, "bom")
	up := e.upload(t, doc.DocumentID, bom(t))
	other := e.OtherTenant(t)
	err := e.run(t, func(tx passport.Tx) error {
		_, err := passport.ParseFacts(e.Ctx, tx, other, up.Version.DocumentVersionID)
		return err
	})
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
}

func TestCheckRuleSourcesNamesTheSource(t *testing.T) {
	t.Parallel()
	limits := rules.Limits{}
	_, err := passport.CheckRuleSources(limits, passport.RuleSources{DSL: nmc811.Rules(), Tests: nmc811.Tests()})
	require.NoError(t, err, "the sample package checks")

	for _, tc := range []struct {
		name   string
		src    passport.RuleSources
		field  string
		source string
	}{
		{"no dsl", passport.RuleSources{Tests: nmc811.Tests()}, "dsl_source", ""},
		{"no tests", passport.RuleSources{DSL: nmc811.Rules()}, "tests_source", ""},
		{"dsl does not parse", passport.RuleSources{DSL: "field x: Int = (", Tests: nmc811.Tests()}, "", "dsl_source"},
		{"tests do not parse", passport.RuleSources{DSL: nmc811.Rules(), Tests: "example ("}, "", "tests_source"},
	} {
		_, err := passport.CheckRuleSources(limits, tc.src)
		e := errcode.As(err)
		require.NotNil(t, e, tc.name)
		if tc.field != "" {
			require.Equal(t, errcode.Validation, e.Code, tc.name)
			require.Equal(t, tc.field, e.Details["field"], tc.name)
		} else {
			require.Equal(t, tc.source, e.Details["source"], tc.name)
			require.Contains(t, e.Message, tc.source+": ", tc.name)
		}
	}
}

func TestEnqueueFingerprintsTheRequest(t *testing.T) {
	t.Parallel()
	args := jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: uuid.New()}
	plain, err := passport.RequestHash(args, passport.EnqueueOptions{})
	require.NoError(t, err)
	again, err := passport.RequestHash(args, passport.EnqueueOptions{})
	require.NoError(t, err)
	require.Equal(t, plain, again)
	priority := 0
	urgent, err := passport.RequestHash(args, passport.EnqueueOptions{Priority: &priority})
	require.NoError(t, err)
	require.NotEqual(t, plain, urgent, "an option set is part of what was asked for")
	other := args
	other.SnapshotID = uuid.New()
	otherHash, err := passport.RequestHash(other, passport.EnqueueOptions{})
	require.NoError(t, err)
	require.NotEqual(t, plain, otherHash)
}

func bom(t *testing.T) []byte {
	t.Helper()
	b, err := nmc811.Document("bom.json")
	require.NoError(t, err)
	return b
}

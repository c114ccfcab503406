package workers_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// The tests here are of what a handler does (its rows, its audit event, the
// next job, the River outcome of its error), so they run it once with
// rivertest.Worker, inside a transaction rolled back at the end, instead of
// through a live client that polls for it. The handler's own transaction is
// then a savepoint of the test's (store.Queries.InTx on a transaction), and
// its lease fence holds honestly: rivertest sets the job running with a
// fresh attempted_at, from which the SSOT row's triggers derive a live lease
// for that attempt, exactly as when River's producer fetches it.

// testBundle is what a handler test has besides the worker.
type testBundle struct {
	ctx context.Context
	// tx is the test's transaction, rolled back when the test ends.
	tx pgx.Tx
	// st runs on tx; the handler's store is the same.
	st   *store.Queries
	keys *passport.Keyring
}

// setupBundle begins the transaction on a test schema.
func setupBundle(t *testing.T) *testBundle {
	t.Helper()
	ctx := t.Context()
	tx, err := testdb.New(t).Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return &testBundle{ctx: ctx, tx: tx, st: store.New(tx), keys: fixture.Keyring(t, nil)}
}

// newTestWorker wraps w in a rivertest.Worker configured as the service's
// client is where it matters to a handler: the Observer middleware, which
// turns a permanent error into a cancel and records the attempt's error.
// Its driver has no pool: everything runs in the bundle's transaction.
func newTestWorker[A river.JobArgs](t *testing.T, w river.Worker[A]) *rivertest.Worker[A, pgx.Tx] {
	t.Helper()
	observer := &jobrun.Observer{Logger: slog.New(slog.DiscardHandler), Metrics: workers.NewMetrics(prometheus.NewRegistry())}
	return rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{ID: "rivertest", Middleware: []rivertype.Middleware{observer}}, w)
}

// ssotJob is the SSOT row of a River job.
func (b *testBundle) ssotJob(t *testing.T, riverJobID int64) bpctype.Job {
	t.Helper()
	j, err := b.st.JobByRiverID(b.ctx, riverJobID)
	require.NoError(t, err)
	return j
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.tx.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func (b *testBundle) events(t *testing.T, eventType string, aggregateID uuid.UUID) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM events WHERE tenant_id = $1 AND event_type = $2 AND aggregate_id = $3`,
		pipeTenant, eventType, aggregateID)
}

// requireCompleted asserts River completed the job and the mirror says
// SUCCEEDED.
func (b *testBundle) requireCompleted(t *testing.T, res *rivertest.WorkResult, err error) {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "errors %+v", res.Job.Errors)
	require.Equal(t, rivertype.JobStateCompleted, res.Job.State)
	requireSucceeded(t, b.ssotJob(t, res.Job.ID))
}

// requireCancelled asserts River cancelled the job at its first attempt for
// an error of code (a permanent error is not retried) and returns the
// mirror's last_error. (rivertest returns no error for a cancel: River
// acted on it as it should.)
func (b *testBundle) requireCancelled(t *testing.T, res *rivertest.WorkResult, err error, code string) jobError {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCancelled, res.EventKind)
	require.Equal(t, rivertype.JobStateCancelled, res.Job.State)
	return requireFailed(t, b.ssotJob(t, res.Job.ID), code)
}

func TestBuildSnapshotWorkerTx(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) (*rivertest.Worker[jobargs.BuildSnapshotArgs, pgx.Tx], *testBundle) {
		t.Helper()
		b := setupBundle(t)
		return newTestWorker[jobargs.BuildSnapshotArgs](t, &workers.BuildSnapshotWorker{Completer: workers.Completer{Store: b.st}}), b
	}

	t.Run("a BUILDING snapshot becomes READY once", func(t *testing.T) {
		t.Parallel()
		w, b := setup(t)
		sn, err := b.st.CreateSnapshot(b.ctx, pipeTenant)
		require.NoError(t, err)
		args := jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: pipeTenant}, SnapshotID: sn.SnapshotID}

		res, err := w.Work(b.ctx, t, b.tx, args, nil)
		b.requireCompleted(t, res, err)
		got, err := b.st.GetSnapshot(b.ctx, pipeTenant, sn.SnapshotID)
		require.NoError(t, err)
		require.Equal(t, bpctype.SnapshotReady, got.Status)
		require.NotNil(t, got.ReadyAt)
		require.Nil(t, got.SnapshotHash, "building does not seal")
		require.Equal(t, 1, b.events(t, passport.EventSnapshotReady, sn.SnapshotID))

		res, err = w.Work(b.ctx, t, b.tx, args, nil)
		le := b.requireCancelled(t, res, err, "INVALID_STATE")
		require.Contains(t, le.Message, "READY")
		require.Equal(t, 1, b.events(t, passport.EventSnapshotReady, sn.SnapshotID))
		testriver.RequireConsistent(t, b.st)
	})

	t.Run("an attempt past its lease is fenced and its effects rolled back", func(t *testing.T) {
		t.Parallel()
		w, b := setup(t)
		sn, err := b.st.CreateSnapshot(b.ctx, pipeTenant)
		require.NoError(t, err)
		// A zero lease TTL: the attempt's lease has expired by the time
		// the handler fences it.
		_, err = b.tx.Exec(b.ctx, `SELECT set_config('bpc.lease_seconds', '0', true)`)
		require.NoError(t, err)

		res, err := w.Work(b.ctx, t, b.tx, jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: pipeTenant}, SnapshotID: sn.SnapshotID}, nil)
		require.Error(t, err)
		require.Equal(t, "LEASE_EXPIRED", string(errcode.CodeOf(err)))
		require.Equal(t, river.EventKindJobFailed, res.EventKind, "a lost lease is retried")
		require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable}, res.Job.State)
		got, err := b.st.GetSnapshot(b.ctx, pipeTenant, sn.SnapshotID)
		require.NoError(t, err)
		require.Equal(t, bpctype.SnapshotBuilding, got.Status)
		require.Zero(t, b.events(t, passport.EventSnapshotReady, sn.SnapshotID))
	})

	t.Run("an unknown snapshot is NOT_FOUND", func(t *testing.T) {
		t.Parallel()
		w, b := setup(t)
		res, err := w.Work(b.ctx, t, b.tx, jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: pipeTenant}, SnapshotID: uuid.New()}, nil)
		b.requireCancelled(t, res, err, "NOT_FOUND")
	})
}

func TestParseFactsWorkerTx(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) (*rivertest.Worker[jobargs.ParseFactsArgs, pgx.Tx], *testBundle) {
		t.Helper()
		b := setupBundle(t)
		return newTestWorker[jobargs.ParseFactsArgs](t, &workers.ParseFactsWorker{Completer: workers.Completer{Store: b.st}}), b
	}
	// upload stores content as a new UPLOADED version of a new BOM document.
	upload := func(t *testing.T, b *testBundle, content []byte) bpctype.DocumentVersion {
		t.Helper()
		doc, err := b.st.CreateDocument(b.ctx, pipeTenant, facts.KindBOM, "bom-"+uuid.NewString()[:8])
		require.NoError(t, err)
		v, _, err := b.st.CreateDocumentVersion(b.ctx, pipeTenant, doc.DocumentID, "application/json", content)
		require.NoError(t, err)
		return v
	}

	t.Run("the BOM's facts are stored with their event", func(t *testing.T) {
		t.Parallel()
		w, b := setup(t)
		v := upload(t, b, nmcDocument(t, nmc811.DocBOM))

		res, err := w.Work(b.ctx, t, b.tx, *parseArgs(v.DocumentVersionID), nil)
		b.requireCompleted(t, res, err)
		got, err := b.st.GetDocumentVersion(b.ctx, pipeTenant, v.DocumentVersionID)
		require.NoError(t, err)
		require.Equal(t, bpctype.DocValidated, got.Status)
		require.Equal(t, int32(17), *got.FactCount)
		fs, err := b.st.ListFacts(b.ctx, store.FactFilter{TenantID: pipeTenant, DocumentVersionID: v.DocumentVersionID})
		require.NoError(t, err)
		requireBOMFacts(t, fs)
		require.Equal(t, 1, b.events(t, passport.EventFactsParsed, v.DocumentVersionID))

		// A second job on the same version changes nothing.
		res, err = w.Work(b.ctx, t, b.tx, *parseArgs(v.DocumentVersionID), nil)
		b.requireCompleted(t, res, err)
		require.Equal(t, 17, b.count(t, `SELECT count(*) FROM facts WHERE tenant_id = $1`, pipeTenant))
		require.Equal(t, 1, b.events(t, passport.EventFactsParsed, v.DocumentVersionID))
	})

	t.Run("an invalid document is rejected and the rejection kept", func(t *testing.T) {
		t.Parallel()
		w, b := setup(t)
		v := upload(t, b, []byte(`{"document_type":"BOM","schema_version":1,"battery":{"model":"no sku"},"materials":[]}`))

		res, err := w.Work(b.ctx, t, b.tx, *parseArgs(v.DocumentVersionID), nil)
		le := b.requireCancelled(t, res, err, "VALIDATION_ERROR")
		require.Contains(t, le.Message, "battery.sku")
		// The rejection is committed by the handler although the job
		// fails: it is not fenced and not completed with it.
		got, err := b.st.GetDocumentVersion(b.ctx, pipeTenant, v.DocumentVersionID)
		require.NoError(t, err)
		require.Equal(t, bpctype.DocRejected, got.Status)
		require.Equal(t, 1, b.events(t, passport.EventDocumentRejected, v.DocumentVersionID))
	})
}

// TestCompileSignQRWorkersTx runs the passport chain one handler at a time:
// each job is the one its predecessor inserted in its transaction.
func TestCompileSignQRWorkersTx(t *testing.T) {
	t.Parallel()
	b := setupBundle(t)
	completer := workers.Completer{Store: b.st}
	compile := newTestWorker[jobargs.CompilePassportArgs](t, &workers.CompilePassportWorker{Store: b.st, CompilerBuildID: pipeBuildID,
		Keys: b.keys, Metrics: workers.NewMetrics(prometheus.NewRegistry()), Completer: completer})
	sign := newTestWorker[jobargs.SignPassportArgs](t, &workers.SignPassportWorker{Keys: b.keys, Completer: completer})
	base := "https://passports.example.com"
	qr := newTestWorker[jobargs.GenerateQRArgs](t, &workers.GenerateQRWorker{Store: b.st,
		PublicBaseURL: func() string { return base }, Completer: completer})

	fx := fixture.NMC811(t, b.st, pipeTenant, "rules-"+uuid.NewString()[:8])
	p, err := b.st.CreateBatteryProduct(b.ctx, pipeTenant, "SKU-"+uuid.NewString()[:8], "Voltaris EV Pack 75")
	require.NoError(t, err)
	pp, err := b.st.CreatePassport(b.ctx, pipeTenant, p.BatteryProductID)
	require.NoError(t, err)

	res, err := compile.Work(b.ctx, t, b.tx, *compileArgs(pp.PassportID, fx), nil)
	b.requireCompleted(t, res, err)
	vs, err := b.st.ListPassportVersions(b.ctx, pipeTenant, pp.PassportID)
	require.NoError(t, err)
	require.Len(t, vs, 1)
	v := vs[0]
	require.Equal(t, bpctype.PassportCompiling, v.Status)
	require.Equal(t, res.Job.ID, *v.CompileRiverJobID)

	signJob := rivertest.RequireInsertedTx[*riverpgxv5.Driver](b.ctx, t, b.tx, signArgsFor(v.PassportVersionID), nil)
	require.Equal(t, v.PassportVersionID, signJob.Args.PassportVersionID)
	res, err = sign.WorkJob(b.ctx, t, b.tx, signJob.JobRow)
	b.requireCompleted(t, res, err)
	v, err = b.st.GetPassportVersion(b.ctx, pipeTenant, v.PassportVersionID)
	require.NoError(t, err)
	require.Equal(t, bpctype.PassportSigned, v.Status)
	k, err := b.st.GetSigningKey(b.ctx, pipeKeyID)
	require.NoError(t, err)
	require.Equal(t, k.PublicKeyBase64, *v.SigningPublicKey)

	qrJob := rivertest.RequireInsertedTx[*riverpgxv5.Driver](b.ctx, t, b.tx, &jobargs.GenerateQRArgs{}, nil)
	require.Equal(t, v.PassportVersionID, qrJob.Args.PassportVersionID)
	res, err = qr.WorkJob(b.ctx, t, b.tx, qrJob.JobRow)
	b.requireCompleted(t, res, err)
	v, err = b.st.GetPassportVersion(b.ctx, pipeTenant, v.PassportVersionID)
	require.NoError(t, err)
	require.NotNil(t, v.QRGeneratedAt)
	require.Equal(t, base+"/p/"+v.PassportVersionID.String()+"?ph=", (*v.QRPayload)[:len(base)+len("/p/")+36+len("?ph=")])
	testriver.RequireConsistent(t, b.st)
}

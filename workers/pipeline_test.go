package workers_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/pdftest"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

var pipeTenant = store.DevTenantID

const (
	// pipeKeyID is the first key of pipeTenant (the dev tenant, slug dev),
	// created by its first compile.
	pipeKeyID   = "dev-k1"
	pipeBuildID = "bpc-pipeline-test"
)

// pipeOptions configure newPipeEnv.
type pipeOptions struct {
	// maxAttempts is the client's default (3 when zero).
	maxAttempts int
	// keys are the workers' signing keys; a keyring under
	// passport.TestKeyEncryptionKey without a legacy key when nil.
	keys *passport.Keyring
	// exportDir is EXPORT_PASSPORT's directory; a temp dir when empty.
	exportDir string
	// uploadsDir is INGEST_DOCUMENT's content_ref directory; a temp dir
	// when empty.
	uploadsDir   string
	beforeCommit func(ctx context.Context, job *rivertype.JobRow) error
	// register adds the workers; workers.Register when nil.
	register func(w *river.Workers, d workers.Deps)
}

// pipeEnv is a River client working every queue over a per-test schema,
// with the pipeline's dependencies (keys, export dir, build id).
type pipeEnv struct {
	env
	reg        *prometheus.Registry
	metrics    *workers.Metrics
	exportDir  string
	uploadsDir string

	// finished records the River attempts River has finalized (its
	// completer persisted them), by {river job id, attempt}.
	mu       sync.Mutex
	finished map[[2]int64]bool
}

func newPipeEnv(t *testing.T, o pipeOptions) *pipeEnv {
	t.Helper()
	reg := prometheus.NewRegistry()
	if o.maxAttempts == 0 {
		o.maxAttempts = 3
	}
	if o.exportDir == "" {
		o.exportDir = t.TempDir()
	}
	if o.uploadsDir == "" {
		o.uploadsDir = t.TempDir()
	}
	client, d := testriver.Start(t, testdb.New(t), testriver.Options{
		Client:   jobrun.ClientOptions{ID: "pipeline-test", MaxAttempts: o.maxAttempts},
		Register: o.register,
		Deps: workers.Deps{Metrics: workers.NewMetrics(reg), CompilerBuildID: pipeBuildID, Keys: o.keys,
			ExportDir: o.exportDir, UploadsDir: o.uploadsDir, BeforeCommit: o.beforeCommit},
	})
	e := &pipeEnv{env: env{Ctx: t.Context(), Store: d.Store, Client: client}, reg: reg, metrics: d.Metrics, exportDir: o.exportDir,
		uploadsDir: o.uploadsDir, finished: map[[2]int64]bool{}}
	events, unsubscribe := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	stop, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-stop:
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				e.mu.Lock()
				e.finished[[2]int64{ev.Job.ID, int64(ev.Job.Attempt)}] = true
				e.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-drained
		unsubscribe()
	})
	return e
}

// waitFinalized waits until River has finalized the attempt of a job. A
// handler completes its job in its own transaction (JobCompleteTx), so the
// SSOT row says SUCCEEDED before River's completer has recorded the attempt.
func (e *pipeEnv) waitFinalized(t *testing.T, riverJobID int64, attempt int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.finished[[2]int64{riverJobID, int64(attempt)}]
	}, 15*time.Second, 5*time.Millisecond, "River job %d attempt %d never finalized", riverJobID, attempt)
}

// publicKey is the registered public key of keyID.
func (e *pipeEnv) publicKey(t *testing.T, keyID string) string {
	t.Helper()
	k, err := e.Store.GetSigningKey(e.Ctx, keyID)
	require.NoError(t, err)
	return k.PublicKeyBase64
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return key
}

// run enqueues a job and waits for it to finish.
func (e *pipeEnv) run(t *testing.T, args jobargs.Args) bpctype.Job {
	t.Helper()
	return e.Wait(t, e.Enqueue(t, args, "").JobID)
}

// rerun retries a finished job in River (as River UI can) and waits for
// the extra attempt to finish.
//
// It first waits for River to finalize the attempt: River's completer sets
// a job's state without looking at the attempt, so a retry issued before
// it ran would let it mark the new attempt completed while it still runs.
func (e *pipeEnv) rerun(t *testing.T, job bpctype.Job) bpctype.Job {
	t.Helper()
	e.waitFinalized(t, job.RiverJobID, job.Attempts)
	_, err := e.Client.JobRetry(e.Ctx, job.RiverJobID)
	require.NoError(t, err)
	e.waitFinalized(t, job.RiverJobID, job.Attempts+1)
	return e.WaitUntil(t, job.JobID, func(j bpctype.Job) bool {
		return j.Attempts > job.Attempts && bpctype.IsTerminal(j.Status)
	})
}

// jobByKey returns the job of kind enqueued with an idempotency key.
func (e *pipeEnv) jobByKey(t *testing.T, kind, key string) bpctype.Job {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT job_id FROM jobs WHERE tenant_id = $1 AND type = $2 AND idempotency_key = $3`,
		pipeTenant, kind, key).Scan(&id), "no %s job with key %s", kind, key)
	job, err := e.Store.GetJob(e.Ctx, pipeTenant, id)
	require.NoError(t, err)
	return job
}

func (e *pipeEnv) jobsOfType(t *testing.T, kind string) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM jobs WHERE tenant_id = $1 AND type = $2`, pipeTenant, kind)
}

func (e *pipeEnv) events(t *testing.T, eventType string, aggregateID uuid.UUID) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM events WHERE tenant_id = $1 AND event_type = $2 AND aggregate_id = $3`,
		pipeTenant, eventType, aggregateID)
}

// requireFailed asserts a job failed permanently at its first attempt with code.
func requireFailed(t *testing.T, job bpctype.Job, code string) jobError {
	t.Helper()
	require.Equal(t, bpctype.StatusFailed, job.Status, "last_error %s", job.LastError)
	require.Equal(t, int32(1), job.Attempts, "a permanent error is not retried")
	le := lastJobError(t, job)
	require.Equal(t, code, le.Code, "last_error %s", job.LastError)
	return le
}

func requireSucceeded(t *testing.T, job bpctype.Job) {
	t.Helper()
	require.Equal(t, bpctype.StatusSucceeded, job.Status, "last_error %s", job.LastError)
}

func nmcDocument(t *testing.T, name string) []byte {
	t.Helper()
	b, err := nmc811.Document(name)
	require.NoError(t, err)
	return b
}

// newDocument creates a document of kind.
func (e *pipeEnv) newDocument(t *testing.T, kind string) bpctype.Document {
	t.Helper()
	d, err := e.Store.CreateDocument(e.Ctx, pipeTenant, kind, kind+"-"+uuid.NewString()[:8])
	require.NoError(t, err)
	return d
}

// uploadVersion stores content as a new UPLOADED version of a new document.
func (e *pipeEnv) uploadVersion(t *testing.T, kind string, content []byte) bpctype.DocumentVersion {
	t.Helper()
	doc := e.newDocument(t, kind)
	var v bpctype.DocumentVersion
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		var err error
		v, _, err = e.Store.WithTx(tx).CreateDocumentVersion(e.Ctx, pipeTenant, doc.DocumentID, "application/json", content)
		return err
	}))
	require.Equal(t, bpctype.DocUploaded, v.Status)
	return v
}

func (e *pipeEnv) docVersion(t *testing.T, id uuid.UUID) bpctype.DocumentVersion {
	t.Helper()
	v, err := e.Store.GetDocumentVersion(e.Ctx, pipeTenant, id)
	require.NoError(t, err)
	return v
}

func (e *pipeEnv) factsOf(t *testing.T, versionID uuid.UUID) []bpctype.Fact {
	t.Helper()
	fs, err := e.Store.ListFacts(e.Ctx, store.FactFilter{TenantID: pipeTenant, DocumentVersionID: versionID})
	require.NoError(t, err)
	return fs
}

func parseArgs(versionID uuid.UUID) *jobargs.ParseFactsArgs {
	return &jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: pipeTenant}, DocumentVersionID: versionID}
}

func refArgs(documentID uuid.UUID, ref string) *jobargs.IngestDocumentArgs {
	return &jobargs.IngestDocumentArgs{Base: jobargs.Base{TenantID: pipeTenant}, DocumentID: documentID,
		ContentRef: ref, MimeType: "application/json"}
}

// factIdentities are facts as what identifies them: type, key, canonical
// payload and its hash.
func factIdentities(fs []bpctype.Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.FactType + "|" + f.FactKey + "|" + f.PayloadHash + "|" + string(f.Payload)
	}
	slices.Sort(out)
	return out
}

func ingestArgs(documentID uuid.UUID, content []byte, mimeType string) *jobargs.IngestDocumentArgs {
	return &jobargs.IngestDocumentArgs{Base: jobargs.Base{TenantID: pipeTenant}, DocumentID: documentID,
		Content: base64.StdEncoding.EncodeToString(content), MimeType: mimeType}
}

// requireBOMFacts asserts the facts of the nmc811 BOM: 1 battery, 13
// materials and 3 hazardous substances.
func requireBOMFacts(t *testing.T, fs []bpctype.Fact) {
	t.Helper()
	require.Len(t, fs, 17)
	byType := map[string]int{}
	for _, f := range fs {
		byType[f.FactType]++
		require.Equal(t, hash.SHA256Hex(f.Payload), f.PayloadHash, "fact (%s, %s)", f.FactType, f.FactKey)
	}
	require.Equal(t, map[string]int{"BOM": 1, "BOM_MATERIAL": 13, "BOM_HAZARDOUS": 3}, byType)
}

func TestIngestDocumentWorker(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	bom := nmcDocument(t, nmc811.DocBOM)

	t.Run("base64 content becomes a version that is then parsed", func(t *testing.T) {
		doc := e.newDocument(t, facts.KindBOM)
		job := e.run(t, ingestArgs(doc.DocumentID, bom, "application/json; charset=utf-8"))
		requireSucceeded(t, job)
		versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1)
		v := versions[0]
		require.Equal(t, int32(1), v.Version)
		require.Equal(t, hash.SHA256Hex(bom), v.ContentSHA256)
		require.Equal(t, int32(len(bom)), v.SizeBytes)
		require.Equal(t, 1, e.events(t, passport.EventDocumentUploaded, v.DocumentVersionID))

		parse := e.Wait(t, e.jobByKey(t, jobargs.KindParseFacts, "parse:"+v.DocumentVersionID.String()).JobID)
		requireSucceeded(t, parse)
		v = e.docVersion(t, v.DocumentVersionID)
		require.Equal(t, bpctype.DocValidated, v.Status)
		require.NotNil(t, v.FactCount)
		require.Equal(t, int32(17), *v.FactCount)
		require.NotNil(t, v.ProcessedAt)
		requireBOMFacts(t, e.factsOf(t, v.DocumentVersionID))

		// The same content again finds the same version and parse job.
		again := e.run(t, ingestArgs(doc.DocumentID, bom, "application/json"))
		requireSucceeded(t, again)
		versions, err = e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1)
		require.Equal(t, 1, e.jobsOfType(t, jobargs.KindParseFacts))
		require.Equal(t, 1, e.events(t, passport.EventDocumentUploaded, v.DocumentVersionID))
	})

	t.Run("content_ref ingests the file's bytes as inline content would", func(t *testing.T) {
		// A tenant's content_ref names a file in its own directory.
		tenantDir := filepath.Join(e.uploadsDir, pipeTenant.String())
		require.NoError(t, os.MkdirAll(filepath.Join(tenantDir, "2026"), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(tenantDir, "2026", "bom.json"), bom, 0o600))
		byRef := e.newDocument(t, facts.KindBOM)
		job := e.run(t, refArgs(byRef.DocumentID, "2026/bom.json"))
		requireSucceeded(t, job)
		versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, byRef.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1)
		v := versions[0]
		require.Equal(t, hash.SHA256Hex(bom), v.ContentSHA256)
		require.Equal(t, int32(len(bom)), v.SizeBytes)
		requireSucceeded(t, e.Wait(t, e.jobByKey(t, jobargs.KindParseFacts, "parse:"+v.DocumentVersionID.String()).JobID))
		require.Equal(t, bpctype.DocValidated, e.docVersion(t, v.DocumentVersionID).Status)

		// The same bytes inline: the same facts, canonical bytes and hashes
		// alike; and into the same document, the same version.
		inline := e.newDocument(t, facts.KindBOM)
		requireSucceeded(t, e.run(t, ingestArgs(inline.DocumentID, bom, "application/json")))
		inlineVersions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, inline.DocumentID)
		require.NoError(t, err)
		require.Len(t, inlineVersions, 1)
		iv := inlineVersions[0]
		requireSucceeded(t, e.Wait(t, e.jobByKey(t, jobargs.KindParseFacts, "parse:"+iv.DocumentVersionID.String()).JobID))
		require.Equal(t, v.ContentSHA256, iv.ContentSHA256)
		refFacts, inlineFacts := e.factsOf(t, v.DocumentVersionID), e.factsOf(t, iv.DocumentVersionID)
		requireBOMFacts(t, refFacts)
		require.Equal(t, factIdentities(refFacts), factIdentities(inlineFacts))
		requireSucceeded(t, e.run(t, ingestArgs(byRef.DocumentID, bom, "application/json")))
		versions, err = e.Store.ListDocumentVersions(e.Ctx, pipeTenant, byRef.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1, "the inline upload of the same bytes is the content_ref's version")
	})

	t.Run("content_ref refuses what is not a regular file inside the uploads directory", func(t *testing.T) {
		dir := filepath.Join(e.uploadsDir, pipeTenant.String())
		outside := filepath.Join(t.TempDir(), "secret.json")
		require.NoError(t, os.WriteFile(outside, bom, 0o600))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, "outside.json")))
		require.NoError(t, os.Symlink("2026/bom.json", filepath.Join(dir, "inside.json")))
		// os.Root refuses a link that leaves the directory, even to come back.
		require.NoError(t, os.Symlink("../"+filepath.Base(dir)+"/2026/bom.json", filepath.Join(dir, "out-and-back.json")))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "folder.json"), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, compiler.DefaultPayloadMaxBytes+1), 0o600))
		parses := e.jobsOfType(t, jobargs.KindParseFacts)
		for ref, reason := range map[string]string{
			"outside.json":      "path escapes",
			"out-and-back.json": "path escapes",
			"fifo.json":         "not a regular file (a FIFO)",
			"folder.json":       "not a regular file (a directory)",
			"big.json":          "limit is 131072",
			"missing.json":      "no file",
		} {
			doc := e.newDocument(t, facts.KindBOM)
			le := requireFailed(t, e.run(t, refArgs(doc.DocumentID, ref)), "VALIDATION_ERROR")
			require.Contains(t, le.Message, "content_ref", ref)
			require.Contains(t, le.Message, reason, ref)
			versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
			require.NoError(t, err)
			require.Empty(t, versions, ref)
		}
		require.Equal(t, parses, e.jobsOfType(t, jobargs.KindParseFacts), "refused ingests enqueue nothing")

		// A link that stays inside the directory is followed.
		doc := e.newDocument(t, facts.KindBOM)
		requireSucceeded(t, e.run(t, refArgs(doc.DocumentID, "inside.json")))
		versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1)
		require.Equal(t, hash.SHA256Hex(bom), versions[0].ContentSHA256)
	})

	t.Run("content_ref without an uploads directory", func(t *testing.T) {
		w := &workers.IngestDocumentWorker{}
		err := w.Work(e.Ctx, &river.Job[jobargs.IngestDocumentArgs]{JobRow: &rivertype.JobRow{}, Args: *refArgs(uuid.New(), "bom.json")})
		require.Equal(t, errcode.Validation, errcode.CodeOf(err))
		require.ErrorContains(t, err, "content_ref: uploads are not configured on this service (BPC_UPLOADS_DIR is unset)")
	})

	t.Run("a mime type other than JSON is not supported", func(t *testing.T) {
		doc := e.newDocument(t, facts.KindBOM)
		job := e.run(t, ingestArgs(doc.DocumentID, []byte("a,b\n1,2\n"), "text/csv"))
		le := requireFailed(t, job, "UNSUPPORTED_FORMAT")
		require.Contains(t, le.Message, "text/csv")
		versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
		require.NoError(t, err)
		require.Empty(t, versions)
	})

	t.Run("an unknown document is NOT_FOUND", func(t *testing.T) {
		job := e.run(t, ingestArgs(uuid.New(), bom, "application/json"))
		requireFailed(t, job, "NOT_FOUND")
	})

	// One per version: the first upload, the content_ref and inline pair,
	// the link inside; failed ingests enqueue nothing.
	require.Equal(t, 4, e.jobsOfType(t, jobargs.KindParseFacts))
	e.Consistent(t)
}

func TestParseFactsWorker(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})

	t.Run("parses the BOM once", func(t *testing.T) {
		v := e.uploadVersion(t, facts.KindBOM, nmcDocument(t, nmc811.DocBOM))
		job := e.run(t, parseArgs(v.DocumentVersionID))
		requireSucceeded(t, job)
		got := e.docVersion(t, v.DocumentVersionID)
		require.Equal(t, bpctype.DocValidated, got.Status)
		require.Equal(t, int32(17), *got.FactCount)
		require.Empty(t, got.Error)
		fs := e.factsOf(t, v.DocumentVersionID)
		requireBOMFacts(t, fs)
		// The stored facts are the parser's, byte for byte.
		want, err := facts.Parse(facts.KindBOM, nmcDocument(t, nmc811.DocBOM))
		require.NoError(t, err)
		wantHashes := map[string]string{}
		for _, f := range want {
			wantHashes[f.FactType+"|"+f.FactKey] = f.PayloadHash
		}
		for _, f := range fs {
			require.Equal(t, wantHashes[f.FactType+"|"+f.FactKey], f.PayloadHash)
			require.Equal(t, v.DocumentVersionID, f.SourceDocumentVersionID)
		}
		require.Equal(t, 1, e.events(t, passport.EventFactsParsed, v.DocumentVersionID))

		// A second job on the same version succeeds without new facts.
		second := e.run(t, parseArgs(v.DocumentVersionID))
		requireSucceeded(t, second)
		require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM facts WHERE tenant_id = $1`, pipeTenant))
		require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM document_version_facts WHERE document_version_id = $1`, v.DocumentVersionID))
		require.Equal(t, 1, e.events(t, passport.EventFactsParsed, v.DocumentVersionID), "nothing happened the second time")

		// Re-running the completed job adds nothing either.
		rerun := e.rerun(t, job)
		requireSucceeded(t, rerun)
		require.Equal(t, int32(2), rerun.Attempts)
		require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM facts WHERE tenant_id = $1`, pipeTenant))
		require.Equal(t, 1, e.events(t, passport.EventFactsParsed, v.DocumentVersionID))
	})

	t.Run("an invalid document is rejected", func(t *testing.T) {
		bad := []byte(`{"document_type":"BOM","schema_version":1,"battery":{"model":"no sku"},"materials":[]}`)
		v := e.uploadVersion(t, facts.KindBOM, bad)
		job := e.run(t, parseArgs(v.DocumentVersionID))
		le := requireFailed(t, job, "VALIDATION_ERROR")
		require.Contains(t, le.Message, "battery.sku")

		got := e.docVersion(t, v.DocumentVersionID)
		require.Equal(t, bpctype.DocRejected, got.Status)
		require.Nil(t, got.FactCount)
		require.NotNil(t, got.ProcessedAt)
		var detail struct {
			Code    string `json:"code"`
			Field   string `json:"field"`
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal(got.Error, &detail), "error %s", got.Error)
		require.Equal(t, "VALIDATION_ERROR", detail.Code)
		require.Equal(t, "battery.sku", detail.Field)
		require.NotEmpty(t, detail.Message)
		require.Empty(t, e.factsOf(t, v.DocumentVersionID))
		require.Equal(t, 1, e.events(t, passport.EventDocumentRejected, v.DocumentVersionID))

		// A second job on the rejected version fails the same way, and
		// records nothing more.
		second := e.run(t, parseArgs(v.DocumentVersionID))
		le = requireFailed(t, second, "VALIDATION_ERROR")
		require.Contains(t, le.Message, "rejected")
		require.Equal(t, bpctype.DocRejected, e.docVersion(t, v.DocumentVersionID).Status)
		require.Equal(t, 1, e.events(t, passport.EventDocumentRejected, v.DocumentVersionID))
	})

	t.Run("a document of another kind is rejected", func(t *testing.T) {
		v := e.uploadVersion(t, facts.KindBOM, nmcDocument(t, nmc811.DocPCF))
		requireFailed(t, e.run(t, parseArgs(v.DocumentVersionID)), "VALIDATION_ERROR")
		var field string
		require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT error->>'field' FROM document_versions WHERE document_version_id = $1`,
			v.DocumentVersionID).Scan(&field))
		require.Equal(t, "document_type", field)
	})

	t.Run("an unknown version is NOT_FOUND", func(t *testing.T) {
		requireFailed(t, e.run(t, parseArgs(uuid.New())), "NOT_FOUND")
	})
	e.Consistent(t)
}

// fixture is a sealed snapshot of the nmc811 documents and a published
// rule package version, set up through the store.
func (e *pipeEnv) fixture(t *testing.T) fixture.Compilable {
	t.Helper()
	return fixture.NMC811(t, e.Store, pipeTenant, "rules-"+uuid.NewString()[:8])
}

// ruleVersion creates a DRAFT version in a new package.
func (e *pipeEnv) ruleVersion(tx pgx.Tx, dsl, tests string) (bpctype.RulePackageVersion, error) {
	pkg, err := e.Store.WithTx(tx).CreateRulePackage(e.Ctx, pipeTenant, "rules-"+uuid.NewString()[:8])
	if err != nil {
		return bpctype.RulePackageVersion{}, err
	}
	return e.Store.WithTx(tx).CreateRulePackageVersion(e.Ctx, pipeTenant, pkg.RulePackageID, dsl, tests)
}

func (e *pipeEnv) draftRules(t *testing.T, dsl, tests string) bpctype.RulePackageVersion {
	t.Helper()
	var rv bpctype.RulePackageVersion
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		var err error
		rv, err = e.ruleVersion(tx, dsl, tests)
		return err
	}))
	require.Equal(t, bpctype.RulesDraft, rv.Status)
	return rv
}

// passport creates a battery product and its passport.
func (e *pipeEnv) passport(t *testing.T) bpctype.Passport {
	t.Helper()
	p, err := e.Store.CreateBatteryProduct(e.Ctx, pipeTenant, "SKU-"+uuid.NewString()[:8], "Voltaris EV Pack 75")
	require.NoError(t, err)
	pp, err := e.Store.CreatePassport(e.Ctx, pipeTenant, p.BatteryProductID)
	require.NoError(t, err)
	return pp
}

func compileArgs(passportID uuid.UUID, fx fixture.Compilable) *jobargs.CompilePassportArgs {
	return &jobargs.CompilePassportArgs{Base: jobargs.Base{TenantID: pipeTenant},
		PassportID: passportID, SnapshotID: fx.SnapshotID, RulePackageVersionID: fx.RulesID}
}

func signArgsFor(versionID uuid.UUID) *jobargs.SignPassportArgs {
	return &jobargs.SignPassportArgs{Base: jobargs.Base{TenantID: pipeTenant}, PassportVersionID: versionID}
}

func (e *pipeEnv) version(t *testing.T, id uuid.UUID) bpctype.PassportVersion {
	t.Helper()
	v, err := e.Store.GetPassportVersion(e.Ctx, pipeTenant, id)
	require.NoError(t, err)
	return v
}

func (e *pipeEnv) versions(t *testing.T, passportID uuid.UUID) []bpctype.PassportVersion {
	t.Helper()
	vs, err := e.Store.ListPassportVersions(e.Ctx, pipeTenant, passportID)
	require.NoError(t, err)
	return vs
}

// chain is one passport run through COMPILE_PASSPORT, SIGN_PASSPORT and
// GENERATE_QR.
type chain struct {
	compile, sign, qr bpctype.Job
	version           bpctype.PassportVersion
}

// compileChain compiles a new passport and waits for its QR code.
func (e *pipeEnv) compileChain(t *testing.T, fx fixture.Compilable) chain {
	t.Helper()
	pp := e.passport(t)
	var c chain
	c.compile = e.run(t, compileArgs(pp.PassportID, fx))
	requireSucceeded(t, c.compile)
	vs := e.versions(t, pp.PassportID)
	require.Len(t, vs, 1)
	id := vs[0].PassportVersionID
	c.sign = e.Wait(t, e.jobByKey(t, jobargs.KindSign, "sign:"+id.String()).JobID)
	requireSucceeded(t, c.sign)
	c.qr = e.Wait(t, e.jobByKey(t, jobargs.KindGenerateQR, "qr:"+id.String()).JobID)
	requireSucceeded(t, c.qr)
	c.version = e.version(t, id)
	return c
}

// activate makes a signed version with its QR code ACTIVE.
func (e *pipeEnv) activate(t *testing.T, id uuid.UUID) bpctype.PassportVersion {
	t.Helper()
	var v bpctype.PassportVersion
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		var err error
		v, _, _, err = passport.MarkPassportVersionActive(e.Ctx, e.Store.WithTx(tx), pipeTenant, id)
		return err
	}))
	require.Equal(t, bpctype.PassportActive, v.Status)
	return v
}

// histogramCount is the number of observations of a histogram in the registry.
func (e *pipeEnv) histogramCount(t *testing.T, name string) uint64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}

func TestCompileSignQRChain(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	fx := e.fixture(t)
	c := e.compileChain(t, fx)
	v := c.version

	t.Run("the version is signed with a QR code", func(t *testing.T) {
		require.Equal(t, bpctype.PassportSigned, v.Status)
		require.Equal(t, int32(1), v.Version)
		require.Equal(t, pipeBuildID, v.CompilerBuildID)
		require.Equal(t, pipeKeyID, v.SigningKeyID)
		require.Equal(t, fx.SnapshotID, v.SnapshotID)
		require.Equal(t, fx.RulesID, v.RulePackageVersionID)
		require.NotNil(t, v.CompileRiverJobID)
		require.Equal(t, c.compile.RiverJobID, *v.CompileRiverJobID)
		require.NotNil(t, v.SignedAt)
		require.NotNil(t, v.QRGeneratedAt)
		require.Nil(t, v.ActivatedAt)

		art, err := e.Store.LoadPassportArtifacts(e.Ctx, pipeTenant, v.PassportVersionID)
		require.NoError(t, err)
		require.Equal(t, hash.SHA256Hex(art.Payload), v.PayloadHash)
		require.Equal(t, int32(len(art.Payload)), v.PayloadBytes)

		// The signature verifies over the hash of the stored unsigned receipt.
		r, err := receipt.Parse(art.Receipt)
		require.NoError(t, err)
		require.Empty(t, r.Signature)
		require.Equal(t, pipeKeyID, r.SigningKeyID)
		require.Equal(t, pipeBuildID, r.CompilerBuildID)
		require.Equal(t, v.PassportVersionID.String(), r.PassportVersionID)
		hexHash, raw, err := receipt.Hash(r)
		require.NoError(t, err)
		require.Equal(t, v.ReceiptHash, hexHash)
		require.NotNil(t, v.Signature)
		require.NotNil(t, v.SigningPublicKey)
		require.Equal(t, e.publicKey(t, pipeKeyID), *v.SigningPublicKey)
		pub, err := sign.ParsePublicKey(*v.SigningPublicKey)
		require.NoError(t, err)
		sig, err := sign.ParseSignature(*v.Signature)
		require.NoError(t, err)
		require.NoError(t, sign.Verify(pub, raw, sig))
		// Another key does not verify it.
		otherPub := newKey(t).Public().(ed25519.PublicKey)
		require.Error(t, sign.Verify(otherPub, raw, sig))

		// The signed receipt is the unsigned one plus the signature.
		signed, err := receipt.Parse(art.ReceiptSigned)
		require.NoError(t, err)
		require.Equal(t, *v.Signature, signed.Signature)
		signed.Signature = ""
		require.Equal(t, r, signed)

		// The QR payload is the link to the version's page, carrying its
		// three hashes.
		require.NotNil(t, v.QRPayload)
		fields, err := qr.Parse(*v.QRPayload)
		require.NoError(t, err)
		require.Equal(t, qr.Fields{Format: qr.FormatQR2, BaseURL: testriver.PublicBaseURL,
			PassportVersionID: v.PassportVersionID.String(), PayloadHash: v.PayloadHash,
			ProofRootHash: v.ProofRootHash, ReceiptHash: v.ReceiptHash}, fields)
		require.True(t, bytes.HasPrefix(art.QRPNG, []byte("\x89PNG")), "qr_png is a PNG")

		for _, ev := range []string{passport.EventCompiled, passport.EventSigned, passport.EventQRGenerated} {
			require.Equal(t, 1, e.events(t, ev, v.PassportVersionID), ev)
		}
		rep, err := passport.Replay(e.Ctx, e.Store, compiler.Limits{}, pipeTenant, v.PassportVersionID)
		require.NoError(t, err)
		require.True(t, rep.Match, "replay mismatches: %v", rep.Mismatches)
		require.True(t, rep.SignatureValid)
	})

	t.Run("compile metrics are observed", func(t *testing.T) {
		require.Equal(t, 1, testutil.CollectAndCount(e.metrics.CompileDuration))
		for _, name := range []string{"bpc_compile_duration_seconds", "bpc_payload_bytes", "bpc_proof_bytes", "bpc_receipt_bytes"} {
			require.Equal(t, uint64(1), e.histogramCount(t, name), name)
		}
		// The middleware counts a job after its handler returns, which is
		// after the handler's transaction completed it.
		for _, kind := range []string{jobargs.KindCompile, jobargs.KindSign, jobargs.KindGenerateQR} {
			require.Eventually(t, func() bool {
				return testutil.ToFloat64(e.metrics.JobsCompleted.WithLabelValues(kind, bpctype.StatusSucceeded)) == 1
			}, 5*time.Second, 10*time.Millisecond, kind)
		}
	})

	t.Run("re-running the completed compile job adds nothing", func(t *testing.T) {
		rerun := e.rerun(t, c.compile)
		requireSucceeded(t, rerun)
		require.Equal(t, int32(2), rerun.Attempts)
		vs := e.versions(t, v.PassportID)
		require.Len(t, vs, 1)
		require.Equal(t, v.PassportVersionID, vs[0].PassportVersionID)
		require.Equal(t, 1, e.jobsOfType(t, jobargs.KindSign))
		require.Equal(t, 1, e.events(t, passport.EventCompiled, v.PassportVersionID))
		require.Equal(t, uint64(1), e.histogramCount(t, "bpc_compile_duration_seconds"), "nothing was compiled again")
	})

	t.Run("re-running the completed sign job adds nothing", func(t *testing.T) {
		rerun := e.rerun(t, c.sign)
		requireSucceeded(t, rerun)
		got := e.version(t, v.PassportVersionID)
		require.Equal(t, bpctype.PassportSigned, got.Status)
		require.Equal(t, *v.Signature, *got.Signature)
		require.Equal(t, v.SignedAt, got.SignedAt)
		require.Equal(t, 1, e.jobsOfType(t, jobargs.KindGenerateQR))
		require.Equal(t, 1, e.events(t, passport.EventSigned, v.PassportVersionID))
	})

	t.Run("re-running the completed QR job adds nothing", func(t *testing.T) {
		rerun := e.rerun(t, c.qr)
		requireSucceeded(t, rerun)
		got := e.version(t, v.PassportVersionID)
		require.Equal(t, *v.QRPayload, *got.QRPayload)
		require.Equal(t, v.QRGeneratedAt, got.QRGeneratedAt)
		require.Equal(t, 1, e.events(t, passport.EventQRGenerated, v.PassportVersionID))
	})

	t.Run("a version issued with a BPC-QR-1 code keeps it", func(t *testing.T) {
		// Printed on batteries before links: re-running GENERATE_QR never
		// renders it again.
		one, err := qr.Payload(v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
		require.NoError(t, err)
		onePNG, err := qr.PNG(one)
		require.NoError(t, err)
		require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(e.Ctx, `UPDATE passport_versions SET qr_payload = $1, qr_png = $2 WHERE passport_version_id = $3`,
				one, onePNG, v.PassportVersionID)
			return err
		}))
		requireSucceeded(t, e.rerun(t, c.qr))
		got := e.version(t, v.PassportVersionID)
		require.Equal(t, one, *got.QRPayload)
		art, err := e.Store.LoadPassportArtifacts(e.Ctx, pipeTenant, v.PassportVersionID)
		require.NoError(t, err)
		require.Equal(t, onePNG, art.QRPNG)
		require.Equal(t, 1, e.events(t, passport.EventQRGenerated, v.PassportVersionID))
	})

	t.Run("a second compile of the passport is its version 2", func(t *testing.T) {
		job := e.run(t, compileArgs(v.PassportID, fx))
		requireSucceeded(t, job)
		vs := e.versions(t, v.PassportID)
		require.Len(t, vs, 2)
		require.Equal(t, int32(2), vs[0].Version)
		require.NotEqual(t, v.PassportVersionID, vs[0].PassportVersionID)
		requireSucceeded(t, e.Wait(t, e.jobByKey(t, jobargs.KindSign, "sign:"+vs[0].PassportVersionID.String()).JobID))
		requireSucceeded(t, e.Wait(t, e.jobByKey(t, jobargs.KindGenerateQR, "qr:"+vs[0].PassportVersionID.String()).JobID))
		require.Equal(t, 2, e.jobsOfType(t, jobargs.KindSign))
	})
	e.Consistent(t)
}

func TestCompilePassportWorkerRejectsUnreadyInputs(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	fx := e.fixture(t)
	pp := e.passport(t)

	building, err := e.Store.CreateSnapshot(e.Ctx, pipeTenant)
	require.NoError(t, err)
	le := requireFailed(t, e.run(t, compileArgs(pp.PassportID, fixture.Compilable{SnapshotID: building.SnapshotID, RulesID: fx.RulesID})), "SNAPSHOT_NOT_READY")
	require.Contains(t, le.Message, "BUILDING")

	ready, err := e.Store.CreateSnapshot(e.Ctx, pipeTenant)
	require.NoError(t, err)
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		_, err := passport.MarkSnapshotReady(e.Ctx, e.Store.WithTx(tx), pipeTenant, ready.SnapshotID)
		return err
	}))
	requireFailed(t, e.run(t, compileArgs(pp.PassportID, fixture.Compilable{SnapshotID: ready.SnapshotID, RulesID: fx.RulesID})), "SNAPSHOT_NOT_READY")

	draft := e.draftRules(t, nmc811.Rules(), nmc811.Tests())
	le = requireFailed(t, e.run(t, compileArgs(pp.PassportID, fixture.Compilable{SnapshotID: fx.SnapshotID, RulesID: draft.RulePackageVersionID})), "RULE_PKG_NOT_PUBLISHED")
	require.Contains(t, le.Message, "DRAFT")

	requireFailed(t, e.run(t, compileArgs(uuid.New(), fx)), "NOT_FOUND")

	require.Empty(t, e.versions(t, pp.PassportID))
	require.Equal(t, 0, e.jobsOfType(t, jobargs.KindSign))
	require.Equal(t, uint64(0), e.histogramCount(t, "bpc_compile_duration_seconds"))

	// The later steps of an unknown version fail the same way.
	unknown := uuid.New()
	requireFailed(t, e.run(t, signArgsFor(unknown)), "NOT_FOUND")
	requireFailed(t, e.run(t, &jobargs.GenerateQRArgs{Base: jobargs.Base{TenantID: pipeTenant}, PassportVersionID: unknown}), "NOT_FOUND")
	requireFailed(t, e.run(t, exportArgs(unknown, "JSON")), "NOT_FOUND")
	e.Consistent(t)
}

// TestSignPassportWorkerWrongKeyEncryptionKey: the sign worker's key
// encryption key is not the one the tenant's key was stored under (a
// changed BPC_KEY_ENCRYPTION_KEY): the job fails SIGNING_KEY_MISSING naming
// the variable, permanently, and nothing is signed.
func TestSignPassportWorkerWrongKeyEncryptionKey(t *testing.T) {
	t.Parallel()
	wrong, err := passport.NewKeyring(bytes.Repeat([]byte{7}, passport.KeyEncryptionKeySize), nil)
	require.NoError(t, err)
	e := newPipeEnv(t, pipeOptions{register: func(w *river.Workers, d workers.Deps) {
		c := workers.Completer{Store: d.Store, BeforeCommit: d.BeforeCommit}
		river.AddWorker(w, &workers.CompilePassportWorker{Store: d.Store, CompilerBuildID: d.CompilerBuildID, Keys: d.Keys,
			Limits: d.Limits, Metrics: d.Metrics, Completer: c})
		river.AddWorker(w, &workers.SignPassportWorker{Keys: wrong, Completer: c})
		river.AddWorker(w, &workers.GenerateQRWorker{Store: d.Store, PublicBaseURL: func() string { return "https://passports.example.com" }, Completer: c})
		river.AddWorker(w, &workers.ExportPassportWorker{Store: d.Store, ExportDir: d.ExportDir, Completer: c})
	}})
	fx := e.fixture(t)
	pp := e.passport(t)

	requireSucceeded(t, e.run(t, compileArgs(pp.PassportID, fx)))
	vs := e.versions(t, pp.PassportID)
	require.Len(t, vs, 1)
	id := vs[0].PassportVersionID
	require.Equal(t, pipeKeyID, vs[0].SigningKeyID, "the receipt names the tenant's key")

	sign := e.Wait(t, e.jobByKey(t, jobargs.KindSign, "sign:"+id.String()).JobID)
	le := requireFailed(t, sign, "SIGNING_KEY_MISSING")
	require.Contains(t, le.Message, "BPC_KEY_ENCRYPTION_KEY")
	require.Contains(t, le.Message, pipeKeyID)
	v := e.version(t, id)
	require.Equal(t, bpctype.PassportCompiling, v.Status)
	require.Nil(t, v.Signature)
	require.Nil(t, v.SigningPublicKey)
	require.Equal(t, 0, e.jobsOfType(t, jobargs.KindGenerateQR))
	require.Equal(t, 0, e.events(t, passport.EventSigned, id))

	t.Run("GENERATE_QR on a COMPILING version is INVALID_STATE", func(t *testing.T) {
		job := e.run(t, &jobargs.GenerateQRArgs{Base: jobargs.Base{TenantID: pipeTenant}, PassportVersionID: id})
		le := requireFailed(t, job, "INVALID_STATE")
		require.Contains(t, le.Message, "COMPILING")
		v := e.version(t, id)
		require.Nil(t, v.QRPayload)
		require.Equal(t, bpctype.PassportCompiling, v.Status)
	})

	t.Run("EXPORT_PASSPORT of a COMPILING version is INVALID_STATE", func(t *testing.T) {
		job := e.run(t, &jobargs.ExportPassportArgs{Base: jobargs.Base{TenantID: pipeTenant}, PassportVersionID: id, Format: "json"})
		requireFailed(t, job, "INVALID_STATE")
	})
	e.Consistent(t)
}

// TestSignPassportWorkerRevokedKey: a version compiled for a key revoked
// before its sign job ran fails KEY_REVOKED, permanently (one attempt).
func TestSignPassportWorkerRevokedKey(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := newPipeEnv(t, pipeOptions{register: func(w *river.Workers, d workers.Deps) {
		c := workers.Completer{Store: d.Store, BeforeCommit: d.BeforeCommit}
		river.AddWorker(w, &workers.CompilePassportWorker{Store: d.Store, CompilerBuildID: d.CompilerBuildID, Keys: d.Keys,
			Limits: d.Limits, Metrics: d.Metrics, Completer: c})
		river.AddWorker(w, &heldSignWorker{SignPassportWorker: workers.SignPassportWorker{Keys: d.Keys, Completer: c}, release: release})
		river.AddWorker(w, &workers.GenerateQRWorker{Store: d.Store, PublicBaseURL: func() string { return "https://passports.example.com" }, Completer: c})
	}})
	fx := e.fixture(t)
	pp := e.passport(t)
	requireSucceeded(t, e.run(t, compileArgs(pp.PassportID, fx)))
	vs := e.versions(t, pp.PassportID)
	require.Len(t, vs, 1)
	require.Equal(t, pipeKeyID, vs[0].SigningKeyID)

	require.NoError(t, passport.InTx(e.Ctx, e.Store, e.Client, "test", func(tx passport.Tx) error {
		_, err := passport.RevokeSigningKey(e.Ctx, tx, pipeTenant, pipeKeyID, passport.Revocation{Reason: "test: the key leaked"}, time.Now())
		return err
	}))
	close(release)
	sign := e.Wait(t, e.jobByKey(t, jobargs.KindSign, "sign:"+vs[0].PassportVersionID.String()).JobID)
	le := requireFailed(t, sign, "KEY_REVOKED")
	require.Contains(t, le.Message, pipeKeyID)
	require.Equal(t, int32(1), sign.Attempts, "KEY_REVOKED is permanent: no retry")
	v := e.version(t, vs[0].PassportVersionID)
	require.Equal(t, bpctype.PassportCompiling, v.Status)
	require.Nil(t, v.Signature)
}

// heldSignWorker waits for release before signing.
type heldSignWorker struct {
	workers.SignPassportWorker
	release chan struct{}
}

func (w *heldSignWorker) Work(ctx context.Context, job *river.Job[jobargs.SignPassportArgs]) error {
	select {
	case <-w.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return w.SignPassportWorker.Work(ctx, job)
}

func exportArgs(versionID uuid.UUID, format string) *jobargs.ExportPassportArgs {
	return &jobargs.ExportPassportArgs{Base: jobargs.Base{TenantID: pipeTenant}, PassportVersionID: versionID, Format: format}
}

func TestExportPassportWorker(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	fx := e.fixture(t)
	c := e.compileChain(t, fx)
	id := c.version.PassportVersionID

	t.Run("a SIGNED version is not exported", func(t *testing.T) {
		le := requireFailed(t, e.run(t, exportArgs(id, "JSON")), "INVALID_STATE")
		require.Contains(t, le.Message, "SIGNED")
		require.NoDirExists(t, filepath.Join(e.exportDir, pipeTenant.String()))
	})

	v := e.activate(t, id)

	t.Run("an ACTIVE version is written atomically", func(t *testing.T) {
		job := e.run(t, exportArgs(id, "json"))
		requireSucceeded(t, job)
		path := filepath.Join(e.exportDir, pipeTenant.String(), id.String()+".json")
		b, err := os.ReadFile(path)
		require.NoError(t, err)

		exports, err := e.Store.ListPassportExports(e.Ctx, pipeTenant, id)
		require.NoError(t, err)
		require.Len(t, exports, 1)
		ex := exports[0]
		require.Equal(t, path, ex.Path)
		require.Equal(t, "JSON", ex.Format)
		require.Equal(t, hash.SHA256Hex(b), ex.SHA256)
		require.Equal(t, int64(len(b)), ex.SizeBytes)
		require.NotNil(t, ex.RiverJobID)
		require.Equal(t, job.RiverJobID, *ex.RiverJobID)

		canonical, err := canonjson.Canonicalize(b)
		require.NoError(t, err)
		require.Equal(t, canonical, b, "the export is canonical JSON")
		art, err := e.Store.LoadPassportArtifacts(e.Ctx, pipeTenant, id)
		require.NoError(t, err)
		for name, part := range map[string][]byte{"payload": art.Payload, "proof": art.Proof, "signed receipt": art.ReceiptSigned} {
			require.True(t, bytes.Contains(b, part), "the export embeds the %s bytes", name)
		}
		want, err := passport.ExportDocument(v, art)
		require.NoError(t, err)
		require.Equal(t, want, b)

		var doc struct {
			ExportFormat      string          `json:"export_format"`
			PassportVersionID string          `json:"passport_version_id"`
			Status            string          `json:"status"`
			QRPayload         string          `json:"qr_payload"`
			Payload           json.RawMessage `json:"payload"`
			SigningKey        struct {
				KeyID     string `json:"key_id"`
				PublicKey string `json:"public_key_base64"`
			} `json:"signing_key"`
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		require.Equal(t, passport.ExportFormat, doc.ExportFormat)
		require.Equal(t, id.String(), doc.PassportVersionID)
		require.Equal(t, bpctype.PassportActive, doc.Status)
		require.Equal(t, *v.QRPayload, doc.QRPayload)
		require.Equal(t, art.Payload, []byte(doc.Payload))
		require.Equal(t, pipeKeyID, doc.SigningKey.KeyID)
		require.Equal(t, e.publicKey(t, pipeKeyID), doc.SigningKey.PublicKey)

		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temporary file is left")
		require.Equal(t, id.String()+".json", entries[0].Name())
		require.Equal(t, 1, e.events(t, passport.EventExported, id))

		// Re-running the completed job rewrites the same file and keeps
		// one export row.
		rerun := e.rerun(t, job)
		requireSucceeded(t, rerun)
		again, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, b, again)
		exports, err = e.Store.ListPassportExports(e.Ctx, pipeTenant, id)
		require.NoError(t, err)
		require.Len(t, exports, 1)
		require.Equal(t, ex.PassportExportID, exports[0].PassportExportID)
		entries, err = os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, 1, e.events(t, passport.EventExported, id), "a re-run appends no second event")
	})

	t.Run("a PDF beside the JSON", func(t *testing.T) {
		job := e.run(t, exportArgs(id, "pdf"))
		requireSucceeded(t, job)
		path := filepath.Join(e.exportDir, pipeTenant.String(), id.String()+".pdf")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, []byte("%PDF-")))
		exports, err := e.Store.ListPassportExports(e.Ctx, pipeTenant, id)
		require.NoError(t, err)
		require.Len(t, exports, 2)
		ex := exports[0]
		require.Equal(t, "PDF", ex.Format, "newest first")
		require.Equal(t, path, ex.Path)
		require.Equal(t, hash.SHA256Hex(b), ex.SHA256)
		require.Equal(t, int64(len(b)), ex.SizeBytes)
		require.Equal(t, job.RiverJobID, *ex.RiverJobID)
		require.Equal(t, *v.QRPayload, pdftest.PageQR(t, path, 1))
		require.Equal(t, 2, e.events(t, passport.EventExported, id))

		rerun := e.rerun(t, job)
		requireSucceeded(t, rerun)
		again, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, b, again, "the same bytes")
		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		require.Len(t, entries, 2, "the JSON and the PDF, no temporary file")
	})
	e.Consistent(t)
}

func TestExportPassportWorkerIOError(t *testing.T) {
	t.Parallel()
	// The export dir is a regular file, so the tenant directory cannot be made.
	notADir := filepath.Join(t.TempDir(), "exports")
	require.NoError(t, os.WriteFile(notADir, []byte("not a directory"), 0o600))
	e := newPipeEnv(t, pipeOptions{maxAttempts: 1, exportDir: notADir})
	c := e.compileChain(t, e.fixture(t))
	id := c.version.PassportVersionID
	e.activate(t, id)

	job := e.run(t, exportArgs(id, "JSON"))
	require.Equal(t, bpctype.StatusDeadLetter, job.Status, "IO_ERROR is retryable: the last attempt dead-letters; last_error %s", job.LastError)
	require.Equal(t, int32(1), job.Attempts)
	le := lastJobError(t, job)
	require.Equal(t, "IO_ERROR", le.Code)
	require.Contains(t, le.Message, "mkdir")
	exports, err := e.Store.ListPassportExports(e.Ctx, pipeTenant, id)
	require.NoError(t, err)
	require.Empty(t, exports)
	require.Equal(t, 0, e.events(t, passport.EventExported, id))
	require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.DeadLetter.WithLabelValues(jobargs.KindExport)))
	e.Consistent(t)
}

func rulesArgs(versionID uuid.UUID, seed int64) *jobargs.RunRuleTestsArgs {
	return &jobargs.RunRuleTestsArgs{Base: jobargs.Base{TenantID: pipeTenant}, RulePackageVersionID: versionID, Seed: seed}
}

func (e *pipeEnv) runs(t *testing.T, versionID uuid.UUID) []bpctype.RuleTestsRun {
	t.Helper()
	runs, err := e.Store.ListRuleTestsRuns(e.Ctx, pipeTenant, versionID)
	require.NoError(t, err)
	return runs
}

func (e *pipeEnv) ruleStatus(t *testing.T, versionID uuid.UUID) string {
	t.Helper()
	rv, err := e.Store.GetRulePackageVersion(e.Ctx, pipeTenant, versionID, false)
	require.NoError(t, err)
	return rv.Status
}

func TestRunRuleTestsWorker(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})

	t.Run("the nmc811 suite passes and validates the version", func(t *testing.T) {
		rv := e.draftRules(t, nmc811.Rules(), nmc811.Tests())
		job := e.run(t, rulesArgs(rv.RulePackageVersionID, 42))
		requireSucceeded(t, job)
		runs := e.runs(t, rv.RulePackageVersionID)
		require.Len(t, runs, 1)
		run := runs[0]
		require.Equal(t, "PASSED", run.Status)
		require.Equal(t, int32(766), run.TotalCases)
		require.Equal(t, int32(766), run.Passed)
		require.Equal(t, int32(0), run.Failed)
		require.Equal(t, int64(42), run.Seed)
		require.Empty(t, run.FirstFailure)
		require.NotNil(t, run.RiverJobID)
		require.Equal(t, job.RiverJobID, *run.RiverJobID)
		require.Equal(t, bpctype.RulesValidated, e.ruleStatus(t, rv.RulePackageVersionID))
		require.Equal(t, 1, e.events(t, passport.EventTestsRun, rv.RulePackageVersionID))

		// Re-running the completed job records no second run.
		rerun := e.rerun(t, job)
		requireSucceeded(t, rerun)
		require.Equal(t, int32(2), rerun.Attempts)
		require.Len(t, e.runs(t, rv.RulePackageVersionID), 1)
		require.Equal(t, 1, e.events(t, passport.EventTestsRun, rv.RulePackageVersionID))
	})

	t.Run("too few cases fail the run and keep the version DRAFT", func(t *testing.T) {
		rv := e.draftRules(t, "field a : Int = 1;", "example one: { } => expect(a, ==, 1);")
		requireSucceeded(t, e.run(t, rulesArgs(rv.RulePackageVersionID, 1)))
		runs := e.runs(t, rv.RulePackageVersionID)
		require.Len(t, runs, 1)
		require.Equal(t, "FAILED", runs[0].Status)
		require.Equal(t, int32(1), runs[0].TotalCases)
		require.Equal(t, int32(1), runs[0].Passed)
		require.Equal(t, int32(0), runs[0].Failed)
		require.Contains(t, string(runs[0].FirstFailure), "at least 500")
		require.Equal(t, bpctype.RulesDraft, e.ruleStatus(t, rv.RulePackageVersionID))
	})

	t.Run("a failing case fails the run with the first failure", func(t *testing.T) {
		rv := e.draftRules(t, "field a : Int = 1;",
			"example one: { } => expect(a, ==, 2);\nproperty p: cases(600) seed(1) => forall x: Int. implies(true, x == x);")
		requireSucceeded(t, e.run(t, rulesArgs(rv.RulePackageVersionID, 7)))
		runs := e.runs(t, rv.RulePackageVersionID)
		require.Len(t, runs, 1)
		require.Equal(t, "FAILED", runs[0].Status)
		require.Equal(t, int32(601), runs[0].TotalCases)
		require.Equal(t, int32(1), runs[0].Failed)
		require.Contains(t, string(runs[0].FirstFailure), "one")
		require.Equal(t, bpctype.RulesDraft, e.ruleStatus(t, rv.RulePackageVersionID))
	})

	t.Run("an unknown version is NOT_FOUND", func(t *testing.T) {
		requireFailed(t, e.run(t, rulesArgs(uuid.New(), 1)), "NOT_FOUND")
	})
	e.Consistent(t)
}

func TestPipelineCrashBeforeCommit(t *testing.T) {
	t.Parallel()
	// Every pipeline job "crashes" once after its effects, before its commit.
	var crashes atomic.Int32
	e := newPipeEnv(t, pipeOptions{beforeCommit: func(_ context.Context, job *rivertype.JobRow) error {
		if job.Attempt == 1 {
			crashes.Add(1)
			return errors.New("simulated crash before commit")
		}
		return nil
	}})

	t.Run("PARSE_FACTS", func(t *testing.T) {
		v := e.uploadVersion(t, facts.KindBOM, nmcDocument(t, nmc811.DocBOM))
		job := e.run(t, parseArgs(v.DocumentVersionID))
		requireSucceeded(t, job)
		require.Equal(t, int32(2), job.Attempts)
		require.Equal(t, "INTERNAL_ERROR", lastJobError(t, job).Code, "the first attempt's error stays on record")
		require.Equal(t, bpctype.DocValidated, e.docVersion(t, v.DocumentVersionID).Status)
		requireBOMFacts(t, e.factsOf(t, v.DocumentVersionID))
		require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM facts WHERE tenant_id = $1`, pipeTenant))
		require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM document_version_facts WHERE document_version_id = $1`, v.DocumentVersionID))
		require.Equal(t, 1, e.events(t, passport.EventFactsParsed, v.DocumentVersionID))
	})

	t.Run("INGEST_DOCUMENT", func(t *testing.T) {
		doc := e.newDocument(t, facts.KindPCF)
		job := e.run(t, ingestArgs(doc.DocumentID, nmcDocument(t, nmc811.DocPCF), "application/json"))
		requireSucceeded(t, job)
		require.Equal(t, int32(2), job.Attempts)
		versions, err := e.Store.ListDocumentVersions(e.Ctx, pipeTenant, doc.DocumentID)
		require.NoError(t, err)
		require.Len(t, versions, 1, "the rolled-back version was not kept")
		require.Equal(t, int32(1), versions[0].Version)
		parse := e.Wait(t, e.jobByKey(t, jobargs.KindParseFacts, "parse:"+versions[0].DocumentVersionID.String()).JobID)
		requireSucceeded(t, parse)
		require.Equal(t, int32(2), parse.Attempts)
		require.Equal(t, 1, e.events(t, passport.EventDocumentUploaded, versions[0].DocumentVersionID))
	})

	t.Run("COMPILE_PASSPORT, SIGN_PASSPORT, GENERATE_QR", func(t *testing.T) {
		c := e.compileChain(t, e.fixture(t))
		for _, j := range []bpctype.Job{c.compile, c.sign, c.qr} {
			require.Equal(t, int32(2), j.Attempts, j.Type)
		}
		require.Len(t, e.versions(t, c.version.PassportID), 1, "the first attempt's version was rolled back")
		require.Equal(t, 1, e.jobsOfType(t, jobargs.KindSign))
		require.Equal(t, 1, e.jobsOfType(t, jobargs.KindGenerateQR))
		for _, ev := range []string{passport.EventCompiled, passport.EventSigned, passport.EventQRGenerated} {
			require.Equal(t, 1, e.events(t, ev, c.version.PassportVersionID), ev)
		}
		require.NotNil(t, c.version.QRPayload)
	})
	require.GreaterOrEqual(t, crashes.Load(), int32(6))
	e.Consistent(t)
}

func TestExportDocumentRequiresASignedVersion(t *testing.T) {
	t.Parallel()
	_, err := passport.ExportDocument(bpctype.PassportVersion{PassportVersionID: uuid.New(), Status: bpctype.PassportCompiling}, bpctype.PassportArtifacts{})
	require.Equal(t, errcode.InvalidState, errcode.CodeOf(err))
}

// A step's next job goes in unread (not read back from the SSOT): the
// worker's transaction checks its SSOT row with the lease fence, so a next
// job the mirror did not write fails the step before it commits — nothing
// of the step is kept, the next job neither. Here the SSOT drops the sign
// jobs' rows (a BEFORE INSERT trigger on jobs_live_fixed), as a missing mirror
// trigger would.
func TestPipelineStepFailsWhenItsNextJobIsNotMirrored(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{maxAttempts: 1})
	fx := e.fixture(t)
	pp := e.passport(t)
	exec := func(sql string) {
		_, err := e.Store.DB().Exec(e.Ctx, sql)
		require.NoError(t, err)
	}
	exec(`CREATE FUNCTION drop_sign_rows() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RETURN CASE WHEN NEW.type = 'SIGN_PASSPORT' THEN NULL ELSE NEW END; END $$`)
	exec(`CREATE TRIGGER drop_sign_rows BEFORE INSERT ON jobs_live_fixed FOR EACH ROW EXECUTE FUNCTION drop_sign_rows()`)

	job := e.run(t, compileArgs(pp.PassportID, fx))
	require.Equal(t, bpctype.StatusDeadLetter, job.Status)
	require.Equal(t, "INTERNAL_ERROR", lastJobError(t, job).Code, "last_error %s", job.LastError)
	require.Empty(t, e.versions(t, pp.PassportID), "the compile rolled back")
	require.Zero(t, e.Count(t, `SELECT count(*) FROM river_job WHERE kind = $1`, jobargs.KindSign), "the sign job rolled back with it")
}

package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// ExportFormat is the format name of a JSON export file.
const ExportFormat = "BPC-EXPORT-1"

// ExportPassportWorker writes an ACTIVE version to an export file — the
// payload, proof and signed receipt exactly as stored, with the public key
// and QR payload: everything a third party needs to verify it offline. The
// file is written atomically (temp file, fsync, size check, rename) under
// BPC_EXPORT_DIR/<tenant>/, then recorded with the job's completion; its
// path, size and SHA-256 are the job's output.
type ExportPassportWorker struct {
	river.WorkerDefaults[jobargs.ExportPassportArgs]
	Deps
}

// Work exports.
func (w *ExportPassportWorker) Work(ctx context.Context, job *river.Job[jobargs.ExportPassportArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	format := strings.ToUpper(a.Format)
	if format != jobargs.ExportFormatJSON {
		return errcode.New(errcode.UnsupportedFormat, "export format %s is not implemented; use JSON", format)
	}
	v, err := w.Store.GetPassportVersion(ctx, w.Store.Pool, a.TenantID, a.PassportVersionID)
	if err != nil {
		return err
	}
	if v.Status != store.PassportActive {
		return errcode.New(errcode.InvalidState, "passport version %s is %s; only an ACTIVE version is exported", v.PassportVersionID, v.Status)
	}
	art, err := w.Store.LoadPassportArtifacts(ctx, w.Store.Pool, a.TenantID, a.PassportVersionID)
	if err != nil {
		return err
	}
	doc, err := ExportDocument(v, art)
	if err != nil {
		return err
	}
	path := filepath.Join(w.ExportDir, a.TenantID.String(), v.PassportVersionID.String()+".json")
	if err := writeFileAtomic(path, doc); err != nil {
		return err
	}
	sum := hash.SHA256Hex(doc)
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		// A re-run of a completed export job rewrote the same file; its row
		// is updated in place and its event is not appended again.
		before, err := s.d.Store.ListPassportExports(ctx, s.tx, a.TenantID, v.PassportVersionID)
		if err != nil {
			return false, err
		}
		rerun := slices.ContainsFunc(before, func(e store.PassportExport) bool {
			return e.RiverJobID != nil && *e.RiverJobID == job.ID
		})
		e, err := s.d.Store.RecordPassportExport(ctx, s.tx, store.PassportExport{
			TenantID: a.TenantID, PassportVersionID: v.PassportVersionID, Format: format,
			Path: path, SizeBytes: int64(len(doc)), SHA256: sum, RiverJobID: &job.ID,
		})
		if err != nil {
			return false, err
		}
		if !rerun {
			if err := s.event(ctx, a.TenantID, AggregatePassportVersion, v.PassportVersionID, EventExported,
				map[string]any{"format": format, "sha256": sum, "size_bytes": len(doc)}); err != nil {
				return false, err
			}
		}
		if err := river.RecordOutput(ctx, map[string]any{"passport_export_id": e.PassportExportID, "path": path,
			"format": format, "size_bytes": len(doc), "sha256": sum}); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "error recording job output: %s", err.Error())
		}
		return true, nil
	})
}

// ExportDocument is the canonical BPC-EXPORT-1 document of a signed version:
// {export_format, passport_version_id, passport_id, version, status,
// payload, proof, receipt (signed), hashes, signing_key, qr_payload}, with
// payload, proof and receipt embedded as the very JSON that was hashed (they
// are canonical, so the embedding keeps their bytes).
func ExportDocument(v store.PassportVersion, art store.PassportArtifacts) ([]byte, error) {
	if v.Signature == nil || v.SigningPublicKey == nil || art.ReceiptSigned == nil {
		return nil, errcode.New(errcode.InvalidState, "passport version %s is not signed", v.PassportVersionID)
	}
	doc := map[string]any{
		"export_format":       ExportFormat,
		"passport_version_id": v.PassportVersionID.String(),
		"passport_id":         v.PassportID.String(),
		"version":             int(v.Version),
		"status":              v.Status,
		"payload":             json.RawMessage(art.Payload),
		"proof":               json.RawMessage(art.Proof),
		"receipt":             json.RawMessage(art.ReceiptSigned),
		"hashes": map[string]any{
			"payload_sha256":  v.PayloadHash,
			"proof_root_hash": v.ProofRootHash,
			"receipt_hash":    v.ReceiptHash,
		},
		"signing_key": map[string]any{"key_id": v.SigningKeyID, "alg": "ED25519", "public_key_base64": *v.SigningPublicKey},
		"qr_payload":  v.QRPayload,
	}
	b, err := canonjson.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding the export: %s", err.Error())
	}
	return b, nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory: written, synced, checked for size, renamed over path, and the
// directory synced, so a reader sees the old file or the whole new one.
func writeFileAtomic(path string, b []byte) (err error) {
	if len(b) == 0 {
		return errcode.New(errcode.Internal, "refusing to write an empty export")
	}
	ioErr := func(op string, err error) error {
		return errcode.Wrap(errcode.IOError, err, "export %s: %s", op, err.Error())
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ioErr("mkdir", err)
	}
	tmp, err := os.CreateTemp(dir, ".export-*.tmp")
	if err != nil {
		return ioErr("create", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	// Readable by the group: exports are handed on to other processes.
	if err := tmp.Chmod(0o640); err != nil {
		_ = tmp.Close()
		return ioErr("chmod", err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return ioErr("write", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return ioErr("sync", err)
	}
	if err := tmp.Close(); err != nil {
		return ioErr("close", err)
	}
	if st, err := os.Stat(tmp.Name()); err != nil || st.Size() != int64(len(b)) {
		return errcode.New(errcode.IOError, "export %s: size check failed", path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return ioErr("rename", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// RunRuleTestsWorker runs a rule package version's example and property
// tests with the job's seed and records the run; a run with no failure and
// at least store.MinRuleTestCases cases moves a DRAFT version to VALIDATED,
// any other run leaves it DRAFT with the first failure recorded. The job
// succeeds either way: it ran the tests.
//
// A run that cannot start or finish records no run and fails the job: a
// source beyond the rule limits (Deps.Limits.Rules: RULE_PARSE_ERROR, or
// VALIDATION_ERROR naming BPC_RULES_MAX_CASES when the tests ask for more
// cases in total), or a run stopped by the job timeout (RULE_TESTS_FAILED;
// the run is deterministic, so a retry would time out again). The run
// follows the job's context: an operator's cancel, a lost lease or a
// shutdown stops it within milliseconds, and River records that outcome.
type RunRuleTestsWorker struct {
	river.WorkerDefaults[jobargs.RunRuleTestsArgs]
	Deps
}

// Work runs the tests.
func (w *RunRuleTestsWorker) Work(ctx context.Context, job *river.Job[jobargs.RunRuleTestsArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	rv, err := w.Store.GetRulePackageVersion(ctx, w.Store.Pool, a.TenantID, a.RulePackageVersionID, true)
	if err != nil {
		return err
	}
	limits := w.Limits.Rules
	prog, err := limits.Check(rv.DSLSource)
	if err != nil {
		return err
	}
	start := time.Now()
	report, err := limits.RunTests(ctx, prog, rv.TestsSource, uint64(a.Seed))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errcode.New(errcode.RuleTestsFailed, "the tests run was stopped by the job timeout after %s; "+
				"a run is deterministic, so it is not retried: ask for fewer or cheaper cases", time.Since(start).Round(time.Second))
		}
		return err
	}
	status := "FAILED"
	if report.Failed == 0 && report.TotalCases >= store.MinRuleTestCases {
		status = "PASSED"
	}
	var first json.RawMessage
	switch {
	case report.FirstFailure != nil:
		if first, err = json.Marshal(report.FirstFailure); err != nil {
			return errcode.Wrap(errcode.Internal, err, "error encoding the first failure: %s", err.Error())
		}
	case status == "FAILED":
		first, _ = json.Marshal(map[string]any{"message": fmt.Sprintf("only %d cases; at least %d are required", report.TotalCases, store.MinRuleTestCases)})
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		run, existed, err := s.d.Store.RecordRuleTestsRun(ctx, s.tx, store.RuleTestsRun{
			TenantID: a.TenantID, RulePackageVersionID: a.RulePackageVersionID, Seed: a.Seed, Status: status,
			TotalCases: int32(report.TotalCases), Passed: int32(report.Passed), Failed: int32(report.Failed),
			FirstFailure: first, RiverJobID: &job.ID,
		})
		if err != nil || existed {
			return err == nil, err
		}
		if err := river.RecordOutput(ctx, map[string]any{"rule_tests_run_id": run.RuleTestsRunID, "status": status,
			"total_cases": report.TotalCases, "passed": report.Passed, "failed": report.Failed}); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "error recording job output: %s", err.Error())
		}
		return true, s.event(ctx, a.TenantID, AggregateRulePackageVersion, a.RulePackageVersionID, EventTestsRun,
			map[string]any{"rule_tests_run_id": run.RuleTestsRunID, "status": status, "seed": a.Seed,
				"total_cases": report.TotalCases, "passed": report.Passed, "failed": report.Failed})
	})
}

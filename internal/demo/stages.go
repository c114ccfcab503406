package demo

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bpc-platform/bpc/apiclient"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

// The API shapes the stages read (the members they use).

type documentVersion struct {
	DocumentVersionID string          `json:"document_version_id"`
	Status            string          `json:"status"`
	FactCount         int             `json:"fact_count"`
	Error             json.RawMessage `json:"error"`
}

type passportVersion struct {
	PassportVersionID string  `json:"passport_version_id"`
	PassportID        string  `json:"passport_id"`
	Version           int     `json:"version"`
	Status            string  `json:"status"`
	PayloadHash       string  `json:"payload_hash"`
	ProofRootHash     string  `json:"proof_root_hash"`
	ReceiptHash       string  `json:"receipt_hash"`
	Signature         string  `json:"signature"`
	SigningKeyID      string  `json:"signing_key_id"`
	SigningPublicKey  string  `json:"signing_public_key"`
	QRPayload         *string `json:"qr_payload"`
}

type passportExport struct {
	PassportExportID string `json:"passport_export_id"`
	Format           string `json:"format"`
	Path             string `json:"path"`
	SizeBytes        int64  `json:"size_bytes"`
	SHA256           string `json:"sha256"`
}

// body is a request body for the walk's tenant with the key/value pairs kv.
func (d *walk) body(kv ...any) map[string]any {
	m := map[string]any{"tenant_id": d.c.TenantID}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// get fetches path for the walk's tenant into out.
func (d *walk) get(ctx context.Context, path string, out any, kv ...string) error {
	return d.c.Do(ctx, http.MethodGet, d.c.TenantPath(path, kv...), nil, out)
}

func jobSummary(j *apiclient.Job) string {
	return fmt.Sprintf("job %s %s %s (attempts %d)", j.JobID, j.Type, j.Status, j.Attempts)
}

func (d *walk) ready(ctx context.Context) (string, error) {
	// The platform token also learns the service's environment, which
	// decides whether the demo may set up its issuer.
	var ready struct {
		Environment string `json:"environment"`
	}
	if err := d.c.Do(ctx, http.MethodGet, "/v1/health/ready", nil, &ready); err != nil {
		if apiclient.IsStatus(err, http.StatusUnauthorized) || apiclient.IsStatus(err, http.StatusTooManyRequests) {
			// Readiness authenticates the token it is sent: the service
			// is up, the token is not its own.
			return "", err
		}
		return "", fmt.Errorf("the service is not ready at %s (start it with `make run`): %w", d.c.BaseURL, err)
	}
	d.env = ready.Environment
	if d.env == "" {
		return "ready", nil
	}
	return "ready (" + d.env + ")", nil
}

func (d *walk) upload(ctx context.Context, kind, file string) (string, error) {
	content, err := nmc811.Document(file)
	if err != nil {
		return "", err
	}
	var doc struct {
		DocumentID string `json:"document_id"`
	}
	if err := d.c.Do(ctx, http.MethodPost, "/v1/documents", d.body("kind", kind, "name", "NMC811 "+file), &doc); err != nil {
		return "", err
	}
	if doc.DocumentID == "" {
		return "", errors.New("POST /v1/documents returned no document_id")
	}
	var up struct {
		DocumentVersion documentVersion `json:"document_version"`
		Job             *apiclient.Job  `json:"job"`
	}
	err = d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/documents", doc.DocumentID, "versions"),
		d.body("mime_type", "application/json", "content", base64.StdEncoding.EncodeToString(content)), &up)
	if err != nil {
		return "", err
	}
	dvID := up.DocumentVersion.DocumentVersionID
	if dvID == "" {
		return "", errors.New("the upload response carried no document_version.document_version_id")
	}
	jobNote := "already uploaded, no new job"
	if up.Job != nil {
		job, err := d.c.WaitJob(ctx, up.Job)
		if err != nil {
			return "", err
		}
		jobNote = fmt.Sprintf("%s %s", job.Type, job.Status)
	}
	var dv documentVersion
	err = d.c.Poll(ctx, "document version "+dvID+" to be VALIDATED", func() (bool, string, error) {
		if err := d.get(ctx, apiclient.Path("/v1/document-versions", dvID), &dv); err != nil {
			return false, "", err
		}
		switch dv.Status {
		case "VALIDATED":
			return true, dv.Status, nil
		case "REJECTED":
			return false, dv.Status, fmt.Errorf("document version %s was REJECTED: %s", dvID, apiclient.Snippet(dv.Error))
		}
		return false, dv.Status, nil
	})
	if err != nil {
		return "", err
	}
	d.docVersionIDs = append(d.docVersionIDs, dvID)
	return fmt.Sprintf("document %s version %s VALIDATED, %d facts (%s)", doc.DocumentID, dvID, dv.FactCount, jobNote), nil
}

func (d *walk) snapshotCreate(ctx context.Context) (string, error) {
	var snap struct {
		SnapshotID string `json:"snapshot_id"`
		Status     string `json:"status"`
	}
	if err := d.c.Do(ctx, http.MethodPost, "/v1/snapshots", d.body(), &snap); err != nil {
		return "", err
	}
	if snap.SnapshotID == "" {
		return "", errors.New("POST /v1/snapshots returned no snapshot_id")
	}
	d.snapshotID = snap.SnapshotID
	var items struct {
		Snapshot struct {
			ItemCount int `json:"item_count"`
		} `json:"snapshot"`
		Added json.RawMessage `json:"added"`
	}
	err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/snapshots", d.snapshotID, "items"),
		d.body("document_version_ids", d.docVersionIDs), &items)
	if err != nil {
		return "", err
	}
	if items.Snapshot.ItemCount == 0 {
		return "", fmt.Errorf("snapshot %s has no items after adding %d document versions", d.snapshotID, len(d.docVersionIDs))
	}
	return fmt.Sprintf("snapshot %s %s, %d items (added %s)", d.snapshotID, snap.Status, items.Snapshot.ItemCount, apiclient.Snippet(items.Added)), nil
}

func (d *walk) snapshotBuild(ctx context.Context) (string, error) {
	job, err := d.c.RunJob(ctx, apiclient.Path("/v1/snapshots", d.snapshotID, "build"), d.body())
	if err != nil {
		return "", err
	}
	return jobSummary(job), nil
}

func (d *walk) snapshotSeal(ctx context.Context) (string, error) {
	var s struct {
		Status       string `json:"status"`
		SnapshotHash string `json:"snapshot_hash"`
	}
	if err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/snapshots", d.snapshotID, "seal"), d.body(), &s); err != nil {
		return "", err
	}
	if s.Status != "SEALED" || s.SnapshotHash == "" {
		return "", fmt.Errorf("snapshot %s is %q with hash %q after sealing, want SEALED with a hash", d.snapshotID, s.Status, s.SnapshotHash)
	}
	return "SEALED, snapshot_hash " + s.SnapshotHash, nil
}

func (d *walk) rulePackage(ctx context.Context) (string, error) {
	var pkg struct {
		RulePackageID string `json:"rule_package_id"`
	}
	// Names are unique per tenant: a repeat within the same second gets a suffix.
	base := fmt.Sprintf("nmc811-demo-%d", time.Now().Unix())
	name := base
	for i := 2; ; i++ {
		err := d.c.Do(ctx, http.MethodPost, "/v1/rule-packages", d.body("name", name), &pkg)
		if err == nil {
			break
		}
		if !apiclient.IsStatus(err, http.StatusConflict) || i > 5 {
			return "", err
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
	if pkg.RulePackageID == "" {
		return "", errors.New("POST /v1/rule-packages returned no rule_package_id")
	}
	var ver struct {
		RulePackageVersionID string `json:"rule_package_version_id"`
		Status               string `json:"status"`
	}
	err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/rule-packages", pkg.RulePackageID, "versions"),
		d.body("dsl_source", nmc811.Rules(), "tests_source", nmc811.Tests()), &ver)
	if err != nil {
		return "", err
	}
	if ver.RulePackageVersionID == "" {
		return "", errors.New("the rule package version response carried no rule_package_version_id")
	}
	d.rulePkgVerID = ver.RulePackageVersionID
	return fmt.Sprintf("package %s (%s), version %s %s", pkg.RulePackageID, name, ver.RulePackageVersionID, ver.Status), nil
}

func (d *walk) ruleTests(ctx context.Context) (string, error) {
	job, err := d.c.RunJob(ctx, apiclient.Path("/v1/rule-package-versions", d.rulePkgVerID, "test"), d.body("seed", 42))
	if err != nil {
		return "", err
	}
	var runs struct {
		Items []struct {
			Status       string          `json:"status"`
			TotalCases   int             `json:"total_cases"`
			Passed       int             `json:"passed"`
			Failed       int             `json:"failed"`
			FirstFailure json.RawMessage `json:"first_failure"`
		} `json:"items"`
	}
	if err := d.get(ctx, apiclient.Path("/v1/rule-package-versions", d.rulePkgVerID, "test-runs"), &runs); err != nil {
		return "", err
	}
	if len(runs.Items) == 0 {
		return "", fmt.Errorf("%s succeeded but rule package version %s lists no test run", job.Type, d.rulePkgVerID)
	}
	run := runs.Items[0]
	if run.Failed > 0 || run.TotalCases == 0 || run.Passed != run.TotalCases {
		return "", fmt.Errorf("rule tests %s: %d/%d passed, %d failed; first failure: %s",
			run.Status, run.Passed, run.TotalCases, run.Failed, apiclient.Snippet(run.FirstFailure))
	}
	var ver struct {
		Status string `json:"status"`
	}
	if err := d.get(ctx, apiclient.Path("/v1/rule-package-versions", d.rulePkgVerID), &ver); err != nil {
		return "", err
	}
	if ver.Status != "VALIDATED" {
		return "", fmt.Errorf("rule package version %s is %q after its tests passed, want VALIDATED", d.rulePkgVerID, ver.Status)
	}
	return fmt.Sprintf("%d/%d cases passed (%s), version VALIDATED", run.Passed, run.TotalCases, run.Status), nil
}

func (d *walk) rulePublish(ctx context.Context) (string, error) {
	var ver struct {
		Status string `json:"status"`
	}
	err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/rule-package-versions", d.rulePkgVerID, "publish"), d.body(), &ver)
	if err != nil {
		return "", err
	}
	if ver.Status != "PUBLISHED" {
		return "", fmt.Errorf("rule package version %s is %q after publishing", d.rulePkgVerID, ver.Status)
	}
	return "version " + d.rulePkgVerID + " PUBLISHED", nil
}

func (d *walk) batteryProduct(ctx context.Context) (string, error) {
	var p struct {
		BatteryProductID string `json:"battery_product_id"`
	}
	err := d.c.Do(ctx, http.MethodPost, "/v1/battery-products",
		d.body("sku", nmc811.BatterySKU, "name", "NMC811 75 kWh EV battery pack (demo)"), &p)
	switch {
	case err == nil:
		if p.BatteryProductID == "" {
			return "", errors.New("POST /v1/battery-products returned no battery_product_id")
		}
		d.productID = p.BatteryProductID
		return fmt.Sprintf("%s created (sku %s)", d.productID, nmc811.BatterySKU), nil
	case apiclient.IsStatus(err, http.StatusConflict):
		var list struct {
			Items []struct {
				BatteryProductID string `json:"battery_product_id"`
				SKU              string `json:"sku"`
			} `json:"items"`
		}
		if err := d.get(ctx, "/v1/battery-products", &list); err != nil {
			return "", err
		}
		for _, it := range list.Items {
			if it.SKU == nmc811.BatterySKU && it.BatteryProductID != "" {
				d.productID = it.BatteryProductID
				return fmt.Sprintf("%s reused (sku %s)", d.productID, nmc811.BatterySKU), nil
			}
		}
		return "", fmt.Errorf("sku %s exists (409) but GET /v1/battery-products does not list it", nmc811.BatterySKU)
	default:
		return "", err
	}
}

func (d *walk) passport(ctx context.Context) (string, error) {
	var p struct {
		PassportID string `json:"passport_id"`
	}
	if err := d.c.Do(ctx, http.MethodPost, "/v1/passports", d.body("battery_product_id", d.productID), &p); err != nil {
		return "", err
	}
	if p.PassportID == "" {
		return "", errors.New("POST /v1/passports returned no passport_id")
	}
	d.passportID = p.PassportID
	return "passport " + d.passportID, nil
}

func (d *walk) compile(ctx context.Context) (string, error) {
	job, err := d.c.RunJob(ctx, apiclient.Path("/v1/passports", d.passportID, "compile"),
		d.body("snapshot_id", d.snapshotID, "rule_package_version_id", d.rulePkgVerID))
	if err != nil {
		return "", err
	}
	var p struct {
		Versions []passportVersion `json:"versions"`
	}
	if err := d.get(ctx, apiclient.Path("/v1/passports", d.passportID), &p); err != nil {
		return "", err
	}
	if len(p.Versions) == 0 {
		return "", fmt.Errorf("%s succeeded but passport %s has no version", job.Type, d.passportID)
	}
	newest := slices.MaxFunc(p.Versions, func(a, b passportVersion) int { return a.Version - b.Version })
	if newest.PassportVersionID == "" {
		return "", fmt.Errorf("passport %s lists a version without passport_version_id", d.passportID)
	}
	d.version = newest
	return fmt.Sprintf("%s, passport version %s (v%d, %s)", jobSummary(job), newest.PassportVersionID, newest.Version, newest.Status), nil
}

// signAndQR waits for the follow-up jobs (SIGN_PASSPORT, then GENERATE_QR):
// the version must become SIGNED with a QR payload. A follow-up job of this
// version that fails ends the wait at once.
func (d *walk) signAndQR(ctx context.Context) (string, error) {
	id := d.version.PassportVersionID
	var v passportVersion
	err := d.c.Poll(ctx, "passport version "+id+" to be SIGNED with a QR payload", func() (bool, string, error) {
		if err := d.get(ctx, apiclient.Path("/v1/passport-versions", id), &v); err != nil {
			return false, "", err
		}
		state := fmt.Sprintf("status %s, qr_payload %v", v.Status, v.QRPayload != nil)
		if (v.Status == "SIGNED" || v.Status == "ACTIVE") && v.QRPayload != nil && *v.QRPayload != "" {
			return true, state, nil
		}
		if err := d.followUpFailed(ctx, id); err != nil {
			return false, state, err
		}
		return false, state, nil
	})
	if err != nil {
		return "", err
	}
	d.version = v
	return fmt.Sprintf("%s by key %s, receipt_hash %s", v.Status, v.SigningKeyID, v.ReceiptHash), nil
}

// followUpFailed looks for a SIGN_PASSPORT or GENERATE_QR job of the passport
// version that ended without success. Listing is best effort: an error there
// only means the wait goes on.
func (d *walk) followUpFailed(ctx context.Context, versionID string) error {
	for _, typ := range []string{"SIGN_PASSPORT", "GENERATE_QR"} {
		var page struct {
			Items []apiclient.Job `json:"items"`
		}
		if d.get(ctx, "/v1/jobs", &page, "type", typ, "limit", "50") != nil {
			continue
		}
		for _, j := range page.Items {
			var p struct {
				PassportVersionID string `json:"passport_version_id"`
			}
			if json.Unmarshal(j.Payload, &p) != nil || p.PassportVersionID != versionID {
				continue
			}
			if apiclient.IsTerminal(j.Status) && j.Status != apiclient.StatusSucceeded {
				return &apiclient.JobFailedError{Job: j}
			}
		}
	}
	return nil
}

func (d *walk) activate(ctx context.Context) (string, error) {
	var r struct {
		Status string `json:"status"`
	}
	err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/passport-versions", d.version.PassportVersionID, "activate"), d.body(), &r)
	if err != nil {
		return "", err
	}
	if r.Status != "ACTIVE" {
		return "", fmt.Errorf("passport version is %q after activation, want ACTIVE", r.Status)
	}
	return "version " + d.version.PassportVersionID + " ACTIVE", nil
}

// export runs EXPORT_PASSPORT in format, checks the file the service
// serves against its export record and writes it to file.
func (d *walk) export(ctx context.Context, format, file string) (string, error) {
	id := d.version.PassportVersionID
	job, err := d.c.RunJob(ctx, apiclient.Path("/v1/passport-versions", id, "export"), d.body("format", format))
	if err != nil {
		return "", err
	}
	var list struct {
		Items []passportExport `json:"items"`
	}
	if err := d.get(ctx, apiclient.Path("/v1/passport-versions", id, "exports"), &list); err != nil {
		return "", err
	}
	i := slices.IndexFunc(list.Items, func(e passportExport) bool { return e.Format == format })
	if i < 0 {
		return "", fmt.Errorf("%s succeeded but the version lists no %s export", job.Type, format)
	}
	exp := list.Items[i]
	var body []byte
	if err := d.get(ctx, apiclient.Path("/v1/passport-versions", id, "export-file"), &body, "format", format); err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	if exp.SHA256 != "" && !strings.EqualFold(exp.SHA256, hex.EncodeToString(sum[:])) {
		return "", fmt.Errorf("export file has SHA-256 %x, the export record says %s", sum, exp.SHA256)
	}
	if exp.SizeBytes != 0 && exp.SizeBytes != int64(len(body)) {
		return "", fmt.Errorf("export file has %d bytes, the export record says %d", len(body), exp.SizeBytes)
	}
	if err := os.WriteFile(filepath.Join(d.out, file), body, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("export %s, %d bytes, sha256 %x → %s", exp.PassportExportID, len(body), sum, file), nil
}

func (d *walk) replay(ctx context.Context) (string, error) {
	var r struct {
		Match *bool `json:"match"`
	}
	err := d.c.Do(ctx, http.MethodPost, apiclient.Path("/v1/passport-versions", d.version.PassportVersionID, "replay"), d.body(), &r)
	if err != nil {
		if apiclient.HasCode(err, "REPLAY_MISMATCH") {
			return "", fmt.Errorf("the replay did not reproduce the passport: %w", err)
		}
		return "", err
	}
	if r.Match == nil || !*r.Match {
		return "", errors.New("the replay answered without match: true")
	}
	return "recompiled from the sealed snapshot: byte-identical (match: true)", nil
}

// artifacts downloads the version's stored bytes, cross-checks its signing
// key against /v1/signing-keys and writes the artifact directory.
func (d *walk) artifacts(ctx context.Context) (string, error) {
	v := d.version
	id := v.PassportVersionID
	var a verify.Artifacts
	for _, part := range []struct {
		what string
		data *[]byte
	}{{"payload", &a.Payload}, {"proof", &a.Proof}, {"receipt", &a.Receipt}, {"qr.png", &a.QRPNG}} {
		if err := d.get(ctx, apiclient.Path("/v1/passport-versions", id, part.what), part.data); err != nil {
			return "", err
		}
	}
	if v.QRPayload == nil {
		return "", errors.New("the passport version has no qr_payload")
	}
	a.QRPayload = *v.QRPayload

	// The version's key, cross-checked against the service's key list.
	pub, err := base64.StdEncoding.DecodeString(v.SigningPublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("signing_public_key of the version is not base64 of %d bytes", ed25519.PublicKeySize)
	}
	var keys struct {
		Items []struct {
			KeyID           string `json:"key_id"`
			Alg             string `json:"alg"`
			PublicKeyBase64 string `json:"public_key_base64"`
		} `json:"items"`
	}
	if err := d.c.Do(ctx, http.MethodGet, "/v1/signing-keys", nil, &keys); err != nil {
		return "", err
	}
	found := false
	for _, k := range keys.Items {
		if k.KeyID != v.SigningKeyID {
			continue
		}
		listed, err := base64.StdEncoding.DecodeString(k.PublicKeyBase64)
		if err != nil || !bytes.Equal(listed, pub) {
			return "", fmt.Errorf("key %s: /v1/signing-keys lists another public key than the version carries", k.KeyID)
		}
		if k.Alg != "" && k.Alg != receipt.SignatureAlg {
			return "", fmt.Errorf("key %s: /v1/signing-keys says alg %q, want %s", k.KeyID, k.Alg, receipt.SignatureAlg)
		}
		found = true
	}
	if !found {
		return "", fmt.Errorf("signing key %q of the version is not listed by /v1/signing-keys", v.SigningKeyID)
	}
	d.publicKey = ed25519.PublicKey(pub)
	a.SigningKey = verify.KeyDocument(v.SigningKeyID, d.publicKey)
	detachErr := a.Detach()
	// Written even when the receipt is unusable, for a look at what is wrong.
	if err := d.write(a); err != nil {
		return "", err
	}
	if detachErr != nil {
		return "", fmt.Errorf("the served artifacts: %w", detachErr)
	}
	return fmt.Sprintf("payload %d B, proof %d B, receipt %d B, qr.png %d B → %s/", len(a.Payload), len(a.Proof), len(a.Receipt), len(a.QRPNG), d.out), nil
}

// write writes the artifact directory's files to the output directory.
func (d *walk) write(a verify.Artifacts) error {
	for _, f := range a.Files() {
		if err := os.WriteFile(filepath.Join(d.out, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

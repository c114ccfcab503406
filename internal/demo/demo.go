package demo

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bpc-platform/bpc/apiclient"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

// The files the exports are written to, beside the artifact directory's
// files: the JSON export (BPC-EXPORT-1) and the PDF.
const (
	FileExport    = "export.json"
	FileExportPDF = "passport.pdf"
)

// Run walks the sample through the service c calls, for c's tenant, writing
// the artifacts to the directory out (created if needed) and the stage lines
// to w. The error names the stage that failed.
func Run(ctx context.Context, c *apiclient.Client, out string, w io.Writer) error {
	d := &walk{c: c, platform: c, out: out, w: w}
	return d.run(ctx)
}

// walk is one run: the client, where the output goes and what the stages
// produced so far.
type walk struct {
	// c calls the API: with the platform token until the walk has a
	// tenant writer key (platform), then with the key (keyID).
	c        *apiclient.Client
	platform *apiclient.Client
	keyID    string
	// env is the service's environment (BPC_ENV) as readiness tells the
	// platform token; "" when it does not.
	env string
	out string
	w   io.Writer

	total time.Duration

	docVersionIDs []string
	snapshotID    string
	rulePkgVerID  string
	productID     string
	passportID    string
	version       passportVersion
	publicKey     ed25519.PublicKey
}

// step is a stage of the walk: its name and what it does.
type step struct {
	name string
	fn   func(context.Context) (string, error)
}

// stage runs fn, printing one line with the stage name, its duration and
// fn's short result. Errors are prefixed with the stage name.
func (d *walk) stage(name string, fn func() (string, error)) error {
	start := time.Now()
	res, err := fn()
	took := time.Since(start)
	d.total += took
	if err != nil {
		fmt.Fprintf(d.w, "  %-22s %7d ms  FAILED\n", name, took.Milliseconds())
		return fmt.Errorf("stage %q: %w", name, err)
	}
	fmt.Fprintf(d.w, "  %-22s %7d ms  %s\n", name, took.Milliseconds(), res)
	return nil
}

func (d *walk) run(ctx context.Context) error {
	fmt.Fprintf(d.w, "BPC demo: NMC811 sample (%s) via %s, tenant %s, artifacts in %s/\n\n",
		nmc811.BatterySKU, d.c.BaseURL, d.c.TenantID, d.out)
	if err := os.MkdirAll(d.out, 0o755); err != nil {
		return fmt.Errorf("demo: error creating the output directory: %w", err)
	}
	docs := []struct{ kind, file string }{
		{"BOM", nmc811.DocBOM},
		{"PCF", nmc811.DocPCF},
		{"DUE_DILIGENCE", nmc811.DocDueDiligence},
	}
	steps := []step{{"service ready", d.ready}, {"issuer", d.issuer}, {"tenant key", d.writerKey}}
	for _, doc := range docs {
		steps = append(steps, step{"upload " + doc.kind, func(ctx context.Context) (string, error) {
			return d.upload(ctx, doc.kind, doc.file)
		}})
	}
	steps = append(steps, []step{
		{"snapshot create+items", d.snapshotCreate},
		{"snapshot build", d.snapshotBuild},
		{"snapshot seal", d.snapshotSeal},
		{"rule package", d.rulePackage},
		{"rule tests", d.ruleTests},
		{"rule publish", d.rulePublish},
		{"battery product", d.batteryProduct},
		{"passport", d.passport},
		{"compile", d.compile},
		{"sign + QR", d.signAndQR},
		{"activate", d.activate},
		{"export JSON", func(ctx context.Context) (string, error) { return d.export(ctx, "JSON", FileExport) }},
		{"export PDF", func(ctx context.Context) (string, error) { return d.export(ctx, "PDF", FileExportPDF) }},
		{"replay", d.replay},
		{"artifacts", d.artifacts},
		{"public verification", d.publicPage},
		{"revoke key", d.revokeKey},
	}...)
	for _, s := range steps {
		if err := d.stage(s.name, func() (string, error) { return s.fn(ctx) }); err != nil {
			return err
		}
	}

	var rep verify.Report
	err := d.stage("verify offline", func() (string, error) {
		a, err := verify.ReadDir(os.DirFS(d.out))
		if err != nil {
			return "", err
		}
		rep, err = verify.Verify(a, d.expect())
		return fmt.Sprintf("%d checks", len(rep.Checks)), err
	})
	if len(rep.Checks) > 0 {
		fmt.Fprintf(d.w, "\nOffline verification of %s/:\n", d.out)
		for _, c := range rep.Checks {
			fmt.Fprintln(d.w, " ", c)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "\nVerify the signature with openssl (3.x):\n  openssl pkeyutl -verify -pubin -inkey %s -rawin -in %s -sigfile %s\n",
		filepath.Join(d.out, verify.FilePublicKeyPEM), filepath.Join(d.out, verify.FileReceiptHash), filepath.Join(d.out, verify.FileSignature))
	fmt.Fprintf(d.w, "\nWhoever scans the QR code lands on its public page (no credentials; JSON for Accept: application/json):\n  %s%s\n",
		d.platform.BaseURL, d.publicPath())
	fmt.Fprintf(d.w, "\n  %-22s %7d ms  passport version %s ACTIVE and verified\n", "total", d.total.Milliseconds(), d.version.PassportVersionID)
	return nil
}

// expect is what the API said about the passport version, for the offline
// verification.
func (d *walk) expect() verify.Expect {
	return verify.Expect{
		PassportVersionID: d.version.PassportVersionID,
		PayloadHash:       d.version.PayloadHash,
		ProofRootHash:     d.version.ProofRootHash,
		ReceiptHash:       d.version.ReceiptHash,
		Signature:         d.version.Signature,
		SigningKeyID:      d.version.SigningKeyID,
		PublicKey:         d.publicKey,
		From:              "the API",
	}
}

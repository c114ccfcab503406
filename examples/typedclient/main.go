// Command typedclient is a battery maker's integration written against a
// client that oapi-codegen generated from the service's OpenAPI document
// (package client, default configuration): with a tenant's API key — not
// the platform token — it uploads the NMC811 sample documents, waits for
// their facts, builds and seals a snapshot, creates, tests and publishes
// the rule package, creates the product and its passport, compiles it,
// waits for the signed version, activates it and verifies it publicly.
//
//	BPC_URL=http://127.0.0.1:8080 BPC_API_KEY=bpc_... go run .
//
// No request names a tenant: the key implies it. The last line printed is
// the result as JSON.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/bpc-platform/bpc/examples/typedclient/client"
)

// sku is the sample battery's SKU (examples/nmc811).
const sku = "EVB-NMC811-75"

func main() {
	data := flag.String("data", "../nmc811", "directory of the NMC811 sample (bom.json, pcf.json, due_diligence.json, rules.bpc, tests.bpc)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long the whole flow may take")
	flag.Parse()
	base, key := os.Getenv("BPC_URL"), os.Getenv("BPC_API_KEY")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	if key == "" {
		fmt.Fprintln(os.Stderr, "typedclient: set BPC_API_KEY to a tenant's writer key")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := client.NewClientWithResponses(base, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		fail(err)
	}
	f := &flow{c: c, data: *data}
	result, err := f.run(ctx)
	if err != nil {
		fail(err)
	}
	line, _ := json.Marshal(result)
	fmt.Println(string(line))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "typedclient:", err)
	os.Exit(1)
}

// Result is what the example reports on its last line.
type Result struct {
	PassportVersionID string `json:"passport_version_id"`
	Status            string `json:"status"`
	Verified          bool   `json:"verified"`
}

type flow struct {
	c    *client.ClientWithResponses
	data string
}

// check turns a response without the expected body into an error naming
// the status and the service's answer.
func check(what string, ok bool, resp *http.Response, body []byte, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !ok {
		return fmt.Errorf("%s: %s: %s", what, resp.Status, body)
	}
	return nil
}

func step(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func (f *flow) run(ctx context.Context) (*Result, error) {
	// Upload the three source documents; each is parsed into facts.
	var versions []openapi_types.UUID
	for _, doc := range []struct {
		kind client.CreateDocumentInputKind
		file string
	}{
		{client.CreateDocumentInputKindBOM, "bom.json"}, {client.CreateDocumentInputKindPCF, "pcf.json"},
		{client.CreateDocumentInputKindDUEDILIGENCE, "due_diligence.json"},
	} {
		content, err := os.ReadFile(filepath.Join(f.data, doc.file))
		if err != nil {
			return nil, err
		}
		d, err := f.c.CreateDocumentWithResponse(ctx, client.CreateDocumentJSONRequestBody{
			Kind: doc.kind, Name: "NMC811 " + doc.file})
		if err := check("create document", err == nil && d.JSON201 != nil, d.HTTPResponse, d.Body, err); err != nil {
			return nil, err
		}
		up, err := f.c.UploadDocumentVersionWithResponse(ctx, d.JSON201.DocumentId, client.UploadDocumentVersionJSONRequestBody{
			MimeType: "application/json", Content: base64.StdEncoding.EncodeToString(content)})
		if err := check("upload "+doc.file, err == nil && up.JSON201 != nil, up.HTTPResponse, up.Body, err); err != nil {
			return nil, err
		}
		id := up.JSON201.DocumentVersion.DocumentVersionId
		if err := f.poll(ctx, "document version "+id.String()+" VALIDATED", func() (bool, error) {
			v, err := f.c.GetDocumentVersionWithResponse(ctx, id, nil)
			if err := check("get document version", err == nil && v.JSON200 != nil, v.HTTPResponse, v.Body, err); err != nil {
				return false, err
			}
			if v.JSON200.Status == "REJECTED" {
				return false, fmt.Errorf("document version %s was REJECTED: %v", id, v.JSON200.Error)
			}
			return v.JSON200.Status == "VALIDATED", nil
		}); err != nil {
			return nil, err
		}
		step("uploaded %s: document version %s VALIDATED", doc.file, id)
		versions = append(versions, id)
	}

	// Snapshot of those versions' facts: create, add, build, seal.
	s, err := f.c.CreateSnapshotWithResponse(ctx, client.CreateSnapshotJSONRequestBody{})
	if err := check("create snapshot", err == nil && s.JSON201 != nil, s.HTTPResponse, s.Body, err); err != nil {
		return nil, err
	}
	snapshot := s.JSON201.SnapshotId
	items, err := f.c.AddSnapshotItemsWithResponse(ctx, snapshot, client.AddSnapshotItemsJSONRequestBody{
		DocumentVersionIds: &versions})
	if err := check("add snapshot items", err == nil && items.JSON200 != nil, items.HTTPResponse, items.Body, err); err != nil {
		return nil, err
	}
	b, err := f.c.BuildSnapshotWithResponse(ctx, snapshot, nil, client.BuildSnapshotJSONRequestBody{})
	if err := check("build snapshot", err == nil && b.JSON202 != nil, b.HTTPResponse, b.Body, err); err != nil {
		return nil, err
	}
	if err := f.waitJob(ctx, b.JSON202.Job); err != nil {
		return nil, err
	}
	sealed, err := f.c.SealSnapshotWithResponse(ctx, snapshot, client.SealSnapshotJSONRequestBody{})
	if err := check("seal snapshot", err == nil && sealed.JSON200 != nil, sealed.HTTPResponse, sealed.Body, err); err != nil {
		return nil, err
	}
	step("snapshot %s %s, %d items", snapshot, sealed.JSON200.Status, sealed.JSON200.ItemCount)

	// The rule package: a version, its tests, published.
	rules, err := os.ReadFile(filepath.Join(f.data, "rules.bpc"))
	if err != nil {
		return nil, err
	}
	tests, err := os.ReadFile(filepath.Join(f.data, "tests.bpc"))
	if err != nil {
		return nil, err
	}
	pkg, err := f.c.CreateRulePackageWithResponse(ctx, client.CreateRulePackageJSONRequestBody{
		Name: fmt.Sprintf("nmc811-typed-%d", time.Now().UnixNano())})
	if err := check("create rule package", err == nil && pkg.JSON201 != nil, pkg.HTTPResponse, pkg.Body, err); err != nil {
		return nil, err
	}
	ver, err := f.c.CreateRulePackageVersionWithResponse(ctx, pkg.JSON201.RulePackageId, client.CreateRulePackageVersionJSONRequestBody{
		DslSource: string(rules), TestsSource: string(tests)})
	if err := check("create rule package version", err == nil && ver.JSON201 != nil, ver.HTTPResponse, ver.Body, err); err != nil {
		return nil, err
	}
	rpv := ver.JSON201.RulePackageVersionId
	seed := int64(42)
	run, err := f.c.RunRuleTestsWithResponse(ctx, rpv, nil, client.RunRuleTestsJSONRequestBody{Seed: &seed})
	if err := check("run rule tests", err == nil && run.JSON202 != nil, run.HTTPResponse, run.Body, err); err != nil {
		return nil, err
	}
	if err := f.waitJob(ctx, run.JSON202.Job); err != nil {
		return nil, err
	}
	pub, err := f.c.PublishRulePackageVersionWithResponse(ctx, rpv, client.PublishRulePackageVersionJSONRequestBody{})
	if err := check("publish rule package version", err == nil && pub.JSON200 != nil, pub.HTTPResponse, pub.Body, err); err != nil {
		return nil, err
	}
	step("rule package version %s tested and %s", rpv, pub.JSON200.Status)

	// Product, passport, compiled from the snapshot and the rules.
	prod, err := f.c.CreateBatteryProductWithResponse(ctx, client.CreateBatteryProductJSONRequestBody{
		Sku: sku, Name: "NMC811 75 kWh EV battery pack"})
	if err := check("create battery product", err == nil && prod.JSON201 != nil, prod.HTTPResponse, prod.Body, err); err != nil {
		return nil, err
	}
	pp, err := f.c.CreatePassportWithResponse(ctx, client.CreatePassportJSONRequestBody{
		BatteryProductId: prod.JSON201.BatteryProductId})
	if err := check("create passport", err == nil && pp.JSON201 != nil, pp.HTTPResponse, pp.Body, err); err != nil {
		return nil, err
	}
	comp, err := f.c.CompilePassportWithResponse(ctx, pp.JSON201.PassportId, nil, client.CompilePassportJSONRequestBody{
		SnapshotId: snapshot, RulePackageVersionId: rpv})
	if err := check("compile passport", err == nil && comp.JSON202 != nil, comp.HTTPResponse, comp.Body, err); err != nil {
		return nil, err
	}
	if err := f.waitJob(ctx, comp.JSON202.Job); err != nil {
		return nil, err
	}
	passport, err := f.c.GetPassportWithResponse(ctx, pp.JSON201.PassportId, nil)
	if err := check("get passport", err == nil && passport.JSON200 != nil, passport.HTTPResponse, passport.Body, err); err != nil {
		return nil, err
	}
	var version openapi_types.UUID
	newest := int32(0)
	for _, v := range passport.JSON200.Versions {
		if v.Version > newest {
			newest, version = v.Version, v.PassportVersionId
		}
	}
	if newest == 0 {
		return nil, errors.New("the compiled passport has no version")
	}

	// Signed (and its QR generated) by follow-up jobs, then activated.
	if err := f.poll(ctx, "passport version "+version.String()+" SIGNED", func() (bool, error) {
		v, err := f.c.GetPassportVersionWithResponse(ctx, version, nil)
		if err := check("get passport version", err == nil && v.JSON200 != nil, v.HTTPResponse, v.Body, err); err != nil {
			return false, err
		}
		return v.JSON200.Status == "SIGNED" && v.JSON200.QrPayload != nil, nil
	}); err != nil {
		return nil, err
	}
	act, err := f.c.ActivatePassportVersionWithResponse(ctx, version, client.ActivatePassportVersionJSONRequestBody{})
	if err := check("activate", err == nil && act.JSON200 != nil, act.HTTPResponse, act.Body, err); err != nil {
		return nil, err
	}
	step("passport version %s (v%d) %s", version, newest, act.JSON200.Status)

	// What anyone can check, without credentials.
	public, err := client.NewClientWithResponses(f.c.ClientInterface.(*client.Client).Server)
	if err != nil {
		return nil, err
	}
	pv, err := public.PublicPassportVersionWithResponse(ctx, version)
	if err := check("public verification", err == nil && pv.JSON200 != nil, pv.HTTPResponse, pv.Body, err); err != nil {
		return nil, err
	}
	step("public verification: status %s, verified %v", pv.JSON200.Status, pv.JSON200.Verification.Verified)
	return &Result{PassportVersionID: version.String(), Status: string(pv.JSON200.Status), Verified: pv.JSON200.Verification.Verified}, nil
}

// waitJob polls a job until it ends; anything but SUCCEEDED is an error.
func (f *flow) waitJob(ctx context.Context, job client.Job) error {
	id := job.JobId
	var last client.Job
	err := f.poll(ctx, "job "+id.String(), func() (bool, error) {
		j, err := f.c.GetJobWithResponse(ctx, id, nil)
		if err := check("get job", err == nil && j.JSON200 != nil, j.HTTPResponse, j.Body, err); err != nil {
			return false, err
		}
		last = *j.JSON200
		switch last.Status {
		case "SUCCEEDED":
			return true, nil
		case "FAILED", "CANCELLED", "DISCARDED":
			return false, fmt.Errorf("job %s (%s) ended %s: %v", id, last.Type, last.Status, last.LastError)
		}
		return false, nil
	})
	if err == nil {
		step("job %s %s %s", id, last.Type, last.Status)
	}
	return err
}

// poll calls done every 200 ms until it says so, fails, or ctx ends.
func (f *flow) poll(ctx context.Context, what string, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// These tests cover what the domain endpoints do synchronously. They run
// the API role: jobs are enqueued (and mirrored) but never worked, so no
// worker races the assertions; where a step needs a worker's effect, the
// test makes it through the store, as the worker would.

// domainAPI calls the domain endpoints as one tenant.
type domainAPI struct {
	h      *harness
	tenant string
}

func newDomainAPI(t *testing.T) domainAPI {
	return domainAPI{h: newHarness(t, service.RoleAPI, nil), tenant: devTenant}
}

// as returns the same service seen by another tenant.
func (d domainAPI) as(tenant string) domainAPI { return domainAPI{h: d.h, tenant: tenant} }

// newTenant creates a tenant through the API.
func (d domainAPI) newTenant() string {
	d.h.t.Helper()
	var tn struct {
		TenantID string `json:"tenant_id"`
	}
	slug := "t-" + strings.ToLower(uuid.NewString()[:8])
	require.Equal(d.h.t, http.StatusCreated, d.h.call(http.MethodPost, "/v1/tenants", map[string]any{"slug": slug, "name": slug}, &tn))
	return tn.TenantID
}

// do sends body (tenant_id added) or, for GET, the tenant_id query
// parameter; it requires status want and decodes the response into out.
func (d domainAPI) do(method, path string, body map[string]any, want int, out any) json.RawMessage {
	d.h.t.Helper()
	var payload any
	if method == http.MethodGet {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "tenant_id=" + d.tenant
	} else {
		if body == nil {
			body = map[string]any{}
		}
		if _, set := body["tenant_id"]; !set {
			body["tenant_id"] = d.tenant
		}
		payload = body
	}
	status, raw := d.h.raw(method, path, payload, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(d.h.t, want, status, "%s %s: %s", method, path, raw)
	if out != nil {
		require.NoError(d.h.t, json.Unmarshal(raw, out), "%s", raw)
	}
	return raw
}

// fail is do for an error: it checks the envelope's code and returns it.
func (d domainAPI) fail(method, path string, body map[string]any, want int, code string) errorEnvelope {
	d.h.t.Helper()
	var env errorEnvelope
	raw := d.do(method, path, body, want, &env)
	require.Equal(d.h.t, code, env.Error.Code, "%s", raw)
	require.NotEmpty(d.h.t, env.Error.CorrelationID)
	require.NotNil(d.h.t, env.Error.Details)
	return env
}

// invalid requires a 422 VALIDATION_ERROR naming field.
func (d domainAPI) invalid(method, path string, body map[string]any, field string) {
	d.h.t.Helper()
	env := d.fail(method, path, body, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	require.Equal(d.h.t, field, env.Error.Details["field"], "%s", env.Error.Message)
}

// bytes GETs a binary resource and returns its body and headers.
func (d domainAPI) bytes(path string, want int) ([]byte, http.Header) {
	d.h.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(http.MethodGet, d.h.base+path+sep+"tenant_id="+d.tenant, nil)
	require.NoError(d.h.t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(d.h.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(d.h.t, err)
	require.Equal(d.h.t, want, resp.StatusCode, "GET %s: %s", path, body)
	return body, resp.Header
}

func (d domainAPI) createDocument(kind, name string) bpctype.Document {
	d.h.t.Helper()
	var doc bpctype.Document
	d.do(http.MethodPost, "/v1/documents", map[string]any{"kind": kind, "name": name}, http.StatusCreated, &doc)
	return doc
}

type uploadResult struct {
	DocumentVersion bpctype.DocumentVersion `json:"document_version"`
	Job             *bpctype.Job            `json:"job"`
}

func (d domainAPI) uploadVersion(documentID uuid.UUID, content []byte, want int) uploadResult {
	d.h.t.Helper()
	var up uploadResult
	d.do(http.MethodPost, "/v1/documents/"+documentID.String()+"/versions", map[string]any{
		"mime_type": "application/json", "content": base64.StdEncoding.EncodeToString(content),
	}, want, &up)
	return up
}

// events returns the tenant's audit events of an aggregate, oldest first.
func (d domainAPI) events(aggregateID uuid.UUID) []bpctype.Event {
	d.h.t.Helper()
	rows, _ := d.h.pool.Query(context.Background(), `SELECT event_id, tenant_id, aggregate_type, aggregate_id,
		aggregate_version, event_type, occurred_at, actor_id, payload, payload_hash, prev_event_hash, event_hash
		FROM events WHERE tenant_id = $1 AND aggregate_id = $2 ORDER BY aggregate_version`, d.tenant, aggregateID)
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByName[bpctype.Event])
	require.NoError(d.h.t, err)
	return evs
}

func eventTypes(evs []bpctype.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.AggregateType + "/" + e.EventType
	}
	return out
}

func sampleDoc(t *testing.T, name string) []byte {
	b, err := nmc811.Document(name)
	require.NoError(t, err)
	return b
}

func TestDomainDocumentsUploadAndFacts(t *testing.T) {
	t.Parallel()
	d := newDomainAPI(t)
	bom := sampleDoc(t, nmc811.DocBOM)

	doc := d.createDocument("BOM", "  Voltaris BOM  ")
	require.Equal(t, "BOM", doc.Kind)
	require.Equal(t, "Voltaris BOM", doc.Name, "the name is trimmed")

	// Upload: the version, its event and its PARSE_FACTS job, in one go.
	up := d.uploadVersion(doc.DocumentID, bom, http.StatusCreated)
	v := up.DocumentVersion
	require.Equal(t, int32(1), v.Version)
	require.Equal(t, bpctype.DocUploaded, v.Status)
	require.Equal(t, "application/json", v.MimeType)
	require.Equal(t, hash.SHA256Hex(bom), v.ContentSHA256)
	require.Equal(t, int32(len(bom)), v.SizeBytes)
	require.NotNil(t, up.Job)
	require.Equal(t, jobargs.KindParseFacts, up.Job.Type)
	require.Contains(t, bpctype.Statuses, up.Job.Status)
	require.Equal(t, bpctype.StatusQueued, up.Job.Status)
	require.JSONEq(t, `{"tenant_id":"`+devTenant+`","document_version_id":"`+v.DocumentVersionID.String()+`"}`, string(up.Job.Payload))
	require.Equal(t, up.Job.JobID, d.h.job(up.Job.JobID).JobID, "the job is readable through /v1/jobs")
	evs := d.events(v.DocumentVersionID)
	require.Equal(t, []string{"DocumentVersion/document.uploaded"}, eventTypes(evs))
	require.JSONEq(t, `{"content_sha256":"`+v.ContentSHA256+`","size_bytes":`+jsonString(len(bom))+`}`, string(evs[0].Payload))

	// The same bytes again: the same version, no job, no event.
	again := d.uploadVersion(doc.DocumentID, bom, http.StatusOK)
	require.Equal(t, v.DocumentVersionID, again.DocumentVersion.DocumentVersionID)
	require.Nil(t, again.Job)
	raw := d.do(http.MethodPost, "/v1/documents/"+doc.DocumentID.String()+"/versions", map[string]any{
		"mime_type": "application/json", "content": base64.StdEncoding.EncodeToString(bom),
	}, http.StatusOK, nil)
	require.Contains(t, string(raw), `"job":null`)
	require.Len(t, d.events(v.DocumentVersionID), 1)

	// Other bytes: version 2.
	v2 := d.uploadVersion(doc.DocumentID, append(append([]byte{}, bom...), '\n'), http.StatusCreated).DocumentVersion
	require.Equal(t, int32(2), v2.Version)

	var got struct {
		bpctype.Document
		Versions []bpctype.DocumentVersion `json:"versions"`
	}
	d.do(http.MethodGet, "/v1/documents/"+doc.DocumentID.String(), nil, http.StatusOK, &got)
	require.Equal(t, doc.DocumentID, got.DocumentID)
	require.Equal(t, "BOM", got.Kind)
	require.Len(t, got.Versions, 2)
	require.Equal(t, []int32{2, 1}, []int32{got.Versions[0].Version, got.Versions[1].Version}, "newest first")

	var list struct {
		Items []bpctype.Document `json:"items"`
	}
	d.createDocument("PCF", "PCF")
	d.do(http.MethodGet, "/v1/documents", nil, http.StatusOK, &list)
	require.Len(t, list.Items, 2)

	var dv bpctype.DocumentVersion
	d.do(http.MethodGet, "/v1/document-versions/"+v.DocumentVersionID.String(), nil, http.StatusOK, &dv)
	require.Equal(t, v.ContentSHA256, dv.ContentSHA256)

	// No worker parsed it: no facts yet, an empty list (not null).
	raw = d.do(http.MethodGet, "/v1/facts?document_version_id="+v.DocumentVersionID.String(), nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw))
	d.do(http.MethodGet, "/v1/facts?fact_type=BOM&limit=5", nil, http.StatusOK, nil)

	// Bad input names the field.
	d.invalid(http.MethodPost, "/v1/documents", map[string]any{"kind": "INVOICE", "name": "x"}, "kind")
	d.invalid(http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": ""}, "name")
	d.invalid(http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "x", "owner": "me"}, "owner")
	d.invalid(http.MethodPost, "/v1/documents", map[string]any{"tenant_id": "dev", "kind": "BOM", "name": "x"}, "tenant_id")
	versions := "/v1/documents/" + doc.DocumentID.String() + "/versions"
	d.invalid(http.MethodPost, versions, map[string]any{"mime_type": "application/json", "content": "%%%"}, "content")
	d.invalid(http.MethodPost, versions, map[string]any{"mime_type": "application/json", "content": ""}, "content")
	env := d.fail(http.MethodPost, versions, map[string]any{"mime_type": "application/pdf", "content": base64.StdEncoding.EncodeToString(bom)},
		http.StatusUnprocessableEntity, "UNSUPPORTED_FORMAT")
	require.Equal(t, "mime_type", env.Error.Details["field"])
	d.invalid(http.MethodPost, "/v1/documents/not-a-uuid/versions", map[string]any{"mime_type": "application/json", "content": "e30="}, "id")
	d.invalid(http.MethodGet, "/v1/documents/123", nil, "id")
	d.invalid(http.MethodGet, "/v1/facts?limit=0", nil, "limit")

	// Unknown ids and unknown tenants are 404.
	d.fail(http.MethodGet, "/v1/documents/"+uuid.NewString(), nil, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodGet, "/v1/document-versions/"+uuid.NewString(), nil, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodPost, "/v1/documents/"+uuid.NewString()+"/versions", map[string]any{"mime_type": "application/json", "content": "e30="},
		http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodGet, "/v1/facts?document_version_id="+uuid.NewString(), nil, http.StatusNotFound, "NOT_FOUND")
	stranger := d.as(uuid.NewString())
	stranger.fail(http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "x"}, http.StatusNotFound, "NOT_FOUND")
	stranger.fail(http.MethodGet, "/v1/documents", nil, http.StatusNotFound, "NOT_FOUND")

	// Another tenant sees none of it.
	other := d.as(d.newTenant())
	other.fail(http.MethodGet, "/v1/documents/"+doc.DocumentID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, "/v1/document-versions/"+v.DocumentVersionID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, versions, map[string]any{"mime_type": "application/json", "content": "e30="}, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, "/v1/facts?document_version_id="+v.DocumentVersionID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	raw = other.do(http.MethodGet, "/v1/documents", nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw))
	d.h.requireConsistent()
}

func TestDomainSnapshots(t *testing.T) {
	t.Parallel()
	d := newDomainAPI(t)
	var sn bpctype.Snapshot
	d.do(http.MethodPost, "/v1/snapshots", nil, http.StatusCreated, &sn)
	require.Equal(t, bpctype.SnapshotBuilding, sn.Status)
	require.Nil(t, sn.SnapshotHash)
	path := "/v1/snapshots/" + sn.SnapshotID.String()

	var got bpctype.Snapshot
	d.do(http.MethodGet, path, nil, http.StatusOK, &got)
	require.Equal(t, sn.SnapshotID, got.SnapshotID)

	// A version not parsed yet has no facts: nothing is added.
	doc := d.createDocument("BOM", "BOM")
	v := d.uploadVersion(doc.DocumentID, sampleDoc(t, nmc811.DocBOM), http.StatusCreated).DocumentVersion
	var added struct {
		Snapshot bpctype.Snapshot `json:"snapshot"`
		Added    int              `json:"added"`
	}
	d.do(http.MethodPost, path+"/items", map[string]any{"document_version_ids": []uuid.UUID{v.DocumentVersionID}}, http.StatusOK, &added)
	require.Equal(t, 0, added.Added)
	require.Equal(t, int64(0), added.Snapshot.ItemCount)
	raw := d.do(http.MethodGet, path+"/items", nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw))

	d.invalid(http.MethodPost, path+"/items", map[string]any{}, "fact_ids")
	d.invalid(http.MethodPost, path+"/items", map[string]any{"fact_ids": []string{}, "document_version_ids": []string{}}, "fact_ids")
	d.invalid(http.MethodPost, path+"/items", map[string]any{"fact_ids": []string{"nope"}}, "fact_ids[0]")
	d.fail(http.MethodPost, path+"/items", map[string]any{"fact_ids": []string{uuid.NewString()}}, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodPost, path+"/items", map[string]any{"document_version_ids": []string{uuid.NewString()}}, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodPost, "/v1/snapshots/"+uuid.NewString()+"/items", map[string]any{"document_version_ids": []uuid.UUID{v.DocumentVersionID}},
		http.StatusNotFound, "NOT_FOUND")

	// Sealing needs READY: a BUILDING snapshot is SNAPSHOT_NOT_READY.
	d.fail(http.MethodPost, path+"/seal", nil, http.StatusConflict, "SNAPSHOT_NOT_READY")
	d.fail(http.MethodPost, "/v1/snapshots/"+uuid.NewString()+"/seal", nil, http.StatusNotFound, "NOT_FOUND")

	// Build enqueues BUILD_SNAPSHOT; Idempotency-Key makes it repeatable.
	var built struct {
		Job bpctype.Job `json:"job"`
	}
	d.do(http.MethodPost, path+"/build", nil, http.StatusAccepted, &built)
	require.Equal(t, jobargs.KindBuildSnapshot, built.Job.Type)
	require.Equal(t, bpctype.StatusQueued, built.Job.Status)
	keyed := func() bpctype.Job {
		status, raw := d.h.raw(http.MethodPost, path+"/build", map[string]any{"tenant_id": d.tenant},
			map[string]string{"Authorization": "Bearer " + testToken, "Idempotency-Key": "build-" + sn.SnapshotID.String()})
		require.Equal(t, http.StatusAccepted, status, "%s", raw)
		var out struct {
			Job bpctype.Job `json:"job"`
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		return out.Job
	}
	first := keyed()
	require.NotEqual(t, built.Job.JobID, first.JobID)
	require.Equal(t, first.JobID, keyed().JobID)
	d.fail(http.MethodPost, "/v1/snapshots/"+uuid.NewString()+"/build", nil, http.StatusNotFound, "NOT_FOUND")

	other := d.as(d.newTenant())
	other.fail(http.MethodGet, path, nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, path+"/items", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, path+"/build", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, path+"/seal", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, path+"/items", map[string]any{"fact_ids": []string{uuid.NewString()}}, http.StatusNotFound, "NOT_FOUND")
	d.h.requireConsistent()
}

func TestDomainRulePackages(t *testing.T) {
	t.Parallel()
	d := newDomainAPI(t)
	var pkg bpctype.RulePackage
	d.do(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "nmc811"}, http.StatusCreated, &pkg)
	require.Equal(t, "nmc811", pkg.Name)
	d.fail(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "nmc811"}, http.StatusConflict, "CONFLICT")
	d.invalid(http.MethodPost, "/v1/rule-packages", map[string]any{"name": ""}, "name")

	versions := "/v1/rule-packages/" + pkg.RulePackageID.String() + "/versions"
	var v bpctype.RulePackageVersion
	raw := d.do(http.MethodPost, versions, map[string]any{"dsl_source": nmc811.Rules(), "tests_source": nmc811.Tests()}, http.StatusCreated, &v)
	require.Equal(t, bpctype.RulesDraft, v.Status)
	require.Equal(t, int32(1), v.Version)
	require.Equal(t, hash.SHA256HexString(nmc811.Rules()), v.DSLSHA256)
	require.Equal(t, hash.SHA256HexString(nmc811.Tests()), v.TestsSHA256)
	require.NotContains(t, string(raw), "dsl_source", "sources are not echoed")

	// A source that does not parse: its own code and position.
	bad := nmc811.Rules() + "\nfield broken : Int =\n  1 + ;\n"
	env := d.fail(http.MethodPost, versions, map[string]any{"dsl_source": bad, "tests_source": nmc811.Tests()},
		http.StatusUnprocessableEntity, "RULE_PARSE_ERROR")
	require.Equal(t, "dsl_source", env.Error.Details["source"])
	require.EqualValues(t, strings.Count(bad, "\n"), env.Error.Details["line"], "%s", env.Error.Message)
	require.Contains(t, env.Error.Details, "col")
	env = d.fail(http.MethodPost, versions, map[string]any{"dsl_source": nmc811.Rules(), "tests_source": "example nope: {"},
		http.StatusUnprocessableEntity, "RULE_PARSE_ERROR")
	require.Equal(t, "tests_source", env.Error.Details["source"])
	d.invalid(http.MethodPost, versions, map[string]any{"dsl_source": nmc811.Rules()}, "tests_source")
	d.fail(http.MethodPost, "/v1/rule-packages/"+uuid.NewString()+"/versions",
		map[string]any{"dsl_source": nmc811.Rules(), "tests_source": nmc811.Tests()}, http.StatusNotFound, "NOT_FOUND")

	vpath := "/v1/rule-package-versions/" + v.RulePackageVersionID.String()
	var got bpctype.RulePackageVersion
	raw = d.do(http.MethodGet, vpath, nil, http.StatusOK, &got)
	require.NotContains(t, string(raw), "dsl_source")
	d.do(http.MethodGet, vpath+"?include=sources", nil, http.StatusOK, &got)
	require.Equal(t, nmc811.Rules(), got.DSLSource)
	require.Equal(t, nmc811.Tests(), got.TestsSource)

	var withVersions struct {
		bpctype.RulePackage
		Versions []bpctype.RulePackageVersion `json:"versions"`
	}
	d.do(http.MethodGet, "/v1/rule-packages/"+pkg.RulePackageID.String(), nil, http.StatusOK, &withVersions)
	require.Equal(t, "nmc811", withVersions.Name)
	require.Len(t, withVersions.Versions, 1)
	var list struct {
		Items []bpctype.RulePackage `json:"items"`
	}
	d.do(http.MethodGet, "/v1/rule-packages", nil, http.StatusOK, &list)
	require.Len(t, list.Items, 1)

	// Publishing needs a passing tests run: a DRAFT is RULE_TESTS_FAILED.
	d.fail(http.MethodPost, vpath+"/publish", nil, http.StatusConflict, "RULE_TESTS_FAILED")
	d.fail(http.MethodPost, "/v1/rule-package-versions/"+uuid.NewString()+"/publish", nil, http.StatusNotFound, "NOT_FOUND")

	var run struct {
		Job bpctype.Job `json:"job"`
	}
	d.do(http.MethodPost, vpath+"/test", map[string]any{"seed": 42}, http.StatusAccepted, &run)
	require.Equal(t, jobargs.KindRunRuleTests, run.Job.Type)
	var args jobargs.RunRuleTestsArgs
	require.NoError(t, json.Unmarshal(run.Job.Payload, &args))
	require.Equal(t, int64(42), args.Seed)
	require.Equal(t, v.RulePackageVersionID, args.RulePackageVersionID)
	d.do(http.MethodPost, vpath+"/test", nil, http.StatusAccepted, &run)
	require.NoError(t, json.Unmarshal(run.Job.Payload, &args))
	require.Equal(t, int64(0), args.Seed, "seed defaults to 0")
	d.fail(http.MethodPost, "/v1/rule-package-versions/"+uuid.NewString()+"/test", nil, http.StatusNotFound, "NOT_FOUND")
	raw = d.do(http.MethodGet, vpath+"/test-runs", nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw))

	// A passing run (what RUN_RULE_TESTS records) validates it; then it publishes, once.
	ctx := context.Background()
	st := store.New(d.h.pool)
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, _, err := passport.StoreRuleTestsRun(ctx, st.WithTx(tx), bpctype.RuleTestsRun{TenantID: store.DevTenantID, RulePackageVersionID: v.RulePackageVersionID,
			Seed: 42, Status: "PASSED", TotalCases: passport.MinRuleTestCases, Passed: passport.MinRuleTestCases})
		return err
	}))
	var runs struct {
		Items []bpctype.RuleTestsRun `json:"items"`
	}
	d.do(http.MethodGet, vpath+"/test-runs", nil, http.StatusOK, &runs)
	require.Len(t, runs.Items, 1)
	var published bpctype.RulePackageVersion
	d.do(http.MethodPost, vpath+"/publish", nil, http.StatusOK, &published)
	require.Equal(t, bpctype.RulesPublished, published.Status)
	require.NotNil(t, published.PublishedAt)
	d.do(http.MethodPost, vpath+"/publish", nil, http.StatusOK, &published)
	require.Equal(t, bpctype.RulesPublished, published.Status)
	require.Equal(t, []string{"RulePackageVersion/rules.published"}, eventTypes(d.events(v.RulePackageVersionID)),
		"publishing again records nothing")

	other := d.as(d.newTenant())
	other.fail(http.MethodGet, vpath, nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, "/v1/rule-packages/"+pkg.RulePackageID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, vpath+"/test-runs", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, vpath+"/publish", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, vpath+"/test", nil, http.StatusNotFound, "NOT_FOUND")
	// Names are unique per tenant only.
	other.do(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "nmc811"}, http.StatusCreated, nil)
	d.h.requireConsistent()
}

func TestDomainProductsPassportsAndMissingVersions(t *testing.T) {
	t.Parallel()
	d := newDomainAPI(t)
	var p bpctype.BatteryProduct
	d.do(http.MethodPost, "/v1/battery-products", map[string]any{"sku": nmc811.BatterySKU, "name": "Voltaris EV Pack 75"}, http.StatusCreated, &p)
	require.Equal(t, nmc811.BatterySKU, p.SKU)
	d.fail(http.MethodPost, "/v1/battery-products", map[string]any{"sku": nmc811.BatterySKU, "name": "again"}, http.StatusConflict, "CONFLICT")
	d.invalid(http.MethodPost, "/v1/battery-products", map[string]any{"sku": "", "name": "x"}, "sku")
	d.invalid(http.MethodPost, "/v1/battery-products", map[string]any{"sku": "S", "name": strings.Repeat("n", 201)}, "name")
	var got bpctype.BatteryProduct
	d.do(http.MethodGet, "/v1/battery-products/"+p.BatteryProductID.String(), nil, http.StatusOK, &got)
	require.Equal(t, p, got)
	var products struct {
		Items []bpctype.BatteryProduct `json:"items"`
	}
	d.do(http.MethodGet, "/v1/battery-products", nil, http.StatusOK, &products)
	require.Len(t, products.Items, 1)

	var pp bpctype.Passport
	d.do(http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": p.BatteryProductID}, http.StatusCreated, &pp)
	require.Equal(t, p.BatteryProductID, pp.BatteryProductID)
	require.Nil(t, pp.ActiveVersionID)
	d.fail(http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": uuid.NewString()}, http.StatusNotFound, "NOT_FOUND")
	d.invalid(http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": "p-1"}, "battery_product_id")
	raw := d.do(http.MethodGet, "/v1/passports/"+pp.PassportID.String(), nil, http.StatusOK, nil)
	require.Contains(t, string(raw), `"versions":[]`)

	// Compile needs the snapshot and the rules to exist in the tenant (their
	// states are the job's to check: SNAPSHOT_NOT_READY /
	// RULE_PKG_NOT_PUBLISHED); an unknown one is 404 naming it, and no job.
	compile := "/v1/passports/" + pp.PassportID.String() + "/compile"
	body := func() map[string]any {
		return map[string]any{"snapshot_id": uuid.NewString(), "rule_package_version_id": uuid.NewString()}
	}
	env := d.fail(http.MethodPost, compile, body(), http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "snapshot_id", env.Error.Details["field"])
	var sn bpctype.Snapshot
	d.do(http.MethodPost, "/v1/snapshots", map[string]any{}, http.StatusCreated, &sn)
	env = d.fail(http.MethodPost, compile, map[string]any{"snapshot_id": sn.SnapshotID, "rule_package_version_id": uuid.NewString()},
		http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "rule_package_version_id", env.Error.Details["field"])
	// A body id that happens to equal the path's (the passport's id given as
	// the snapshot) is the body's field that names nothing, not the path.
	env = d.fail(http.MethodPost, compile, map[string]any{"snapshot_id": pp.PassportID, "rule_package_version_id": uuid.NewString()},
		http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "snapshot_id", env.Error.Details["field"], "%s", env.Error.Message)
	var jobs store.JobPage
	d.do(http.MethodGet, "/v1/jobs?type=COMPILE_PASSPORT", nil, http.StatusOK, &jobs)
	require.Empty(t, jobs.Items)
	d.fail(http.MethodPost, "/v1/passports/"+uuid.NewString()+"/compile", body(), http.StatusNotFound, "NOT_FOUND")
	d.invalid(http.MethodPost, compile, map[string]any{"snapshot_id": "s"}, "snapshot_id")

	// A version that does not exist: every endpoint is 404.
	missing := "/v1/passport-versions/" + uuid.NewString()
	d.fail(http.MethodGet, missing, nil, http.StatusNotFound, "NOT_FOUND")
	for _, suffix := range []string{"/payload", "/proof", "/receipt", "/qr.png", "/exports", "/export-file"} {
		d.fail(http.MethodGet, missing+suffix, nil, http.StatusNotFound, "NOT_FOUND")
	}
	d.fail(http.MethodPost, missing+"/activate", nil, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodPost, missing+"/export", map[string]any{"format": "JSON"}, http.StatusNotFound, "NOT_FOUND")
	d.fail(http.MethodPost, missing+"/replay", nil, http.StatusNotFound, "NOT_FOUND")
	d.invalid(http.MethodPost, missing+"/export", map[string]any{"format": "XML"}, "format")

	// Signing keys are service-wide: no tenant_id, always an items array.
	var keys struct {
		Items []map[string]any `json:"items"`
	}
	status := d.h.call(http.MethodGet, "/v1/signing-keys", nil, &keys)
	require.Equal(t, http.StatusOK, status)
	require.NotNil(t, keys.Items)
	for _, k := range keys.Items {
		require.Equal(t, "ED25519", k["alg"])
		require.NotEmpty(t, k["key_id"])
		require.NotEmpty(t, k["public_key_base64"])
	}

	other := d.as(d.newTenant())
	other.fail(http.MethodGet, "/v1/battery-products/"+p.BatteryProductID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodGet, "/v1/passports/"+pp.PassportID.String(), nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, compile, body(), http.StatusNotFound, "NOT_FOUND")
	// Another tenant's product cannot carry this tenant's passport.
	other.fail(http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": p.BatteryProductID}, http.StatusNotFound, "NOT_FOUND")
	other.do(http.MethodPost, "/v1/battery-products", map[string]any{"sku": nmc811.BatterySKU, "name": "same SKU, other tenant"}, http.StatusCreated, nil)
	d.h.requireConsistent()
}

// sampleFixture is the NMC811 sample taken to a sealed snapshot, a
// published rule package version and a passport: the synchronous steps
// through the API, what PARSE_FACTS, BUILD_SNAPSHOT and RUN_RULE_TESTS would
// do through the store.
type sampleFixture struct {
	d          domainAPI
	st         *store.Queries
	passport   bpctype.Passport
	snapshotID uuid.UUID
	rulesID    uuid.UUID
	// riverJobID stands for the River job of each compile (unique per version).
	riverJobID int64
}

func newSampleFixture(t *testing.T, d domainAPI) *sampleFixture {
	ctx := context.Background()
	st := store.New(d.h.pool)
	f := &sampleFixture{d: d, st: st}

	// Documents, parsed as PARSE_FACTS would.
	var versionIDs []uuid.UUID
	total := 0
	for _, doc := range []struct{ kind, file string }{
		{"BOM", nmc811.DocBOM}, {"PCF", nmc811.DocPCF}, {"DUE_DILIGENCE", nmc811.DocDueDiligence},
	} {
		content := sampleDoc(t, doc.file)
		v := d.uploadVersion(d.createDocument(doc.kind, doc.file).DocumentID, content, http.StatusCreated).DocumentVersion
		fs, err := facts.Parse(doc.kind, content)
		require.NoError(t, err)
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := st.WithTx(tx).InsertFacts(ctx, store.DevTenantID, v.DocumentVersionID, fs); err != nil {
				return err
			}
			return st.WithTx(tx).MarkDocumentVersionValidated(ctx, store.DevTenantID, v.DocumentVersionID, len(fs))
		}))
		versionIDs = append(versionIDs, v.DocumentVersionID)
		total += len(fs)
	}
	var listed struct {
		Items []bpctype.Fact `json:"items"`
	}
	d.do(http.MethodGet, "/v1/facts?document_version_id="+versionIDs[0].String(), nil, http.StatusOK, &listed)
	require.NotEmpty(t, listed.Items)
	require.Equal(t, hash.SHA256Hex(listed.Items[0].Payload), listed.Items[0].PayloadHash, "payloads are the canonical bytes")

	// Snapshot: items through the API, READY as BUILD_SNAPSHOT would, sealed through the API.
	var sn bpctype.Snapshot
	d.do(http.MethodPost, "/v1/snapshots", nil, http.StatusCreated, &sn)
	path := "/v1/snapshots/" + sn.SnapshotID.String()
	var added struct {
		Added int `json:"added"`
	}
	d.do(http.MethodPost, path+"/items", map[string]any{"document_version_ids": versionIDs}, http.StatusOK, &added)
	require.Equal(t, total, added.Added)
	d.do(http.MethodPost, path+"/items", map[string]any{"document_version_ids": versionIDs}, http.StatusOK, &added)
	require.Equal(t, 0, added.Added, "adding the same facts again adds nothing")
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := passport.MarkSnapshotReady(ctx, st.WithTx(tx), store.DevTenantID, sn.SnapshotID)
		return err
	}))
	d.do(http.MethodPost, path+"/seal", nil, http.StatusOK, &sn)
	require.Equal(t, bpctype.SnapshotSealed, sn.Status)
	require.NotNil(t, sn.SnapshotHash)
	require.Equal(t, int64(total), sn.ItemCount)
	evs := d.events(sn.SnapshotID)
	require.Equal(t, []string{"DataSnapshot/snapshot.sealed"}, eventTypes(evs))
	require.JSONEq(t, `{"snapshot_hash":"`+*sn.SnapshotHash+`"}`, string(evs[0].Payload))
	d.fail(http.MethodPost, path+"/seal", nil, http.StatusConflict, "SNAPSHOT_SEALED")
	d.fail(http.MethodPost, path+"/items", map[string]any{"document_version_ids": versionIDs}, http.StatusConflict, "SNAPSHOT_SEALED")
	f.snapshotID = sn.SnapshotID

	// Rules: created through the API, validated as RUN_RULE_TESTS would, published through the API.
	var pkg bpctype.RulePackage
	d.do(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "nmc811"}, http.StatusCreated, &pkg)
	var rv bpctype.RulePackageVersion
	d.do(http.MethodPost, "/v1/rule-packages/"+pkg.RulePackageID.String()+"/versions",
		map[string]any{"dsl_source": nmc811.Rules(), "tests_source": nmc811.Tests()}, http.StatusCreated, &rv)
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, _, err := passport.StoreRuleTestsRun(ctx, st.WithTx(tx), bpctype.RuleTestsRun{TenantID: store.DevTenantID, RulePackageVersionID: rv.RulePackageVersionID,
			Status: "PASSED", TotalCases: passport.MinRuleTestCases, Passed: passport.MinRuleTestCases})
		return err
	}))
	d.do(http.MethodPost, "/v1/rule-package-versions/"+rv.RulePackageVersionID.String()+"/publish", nil, http.StatusOK, nil)
	f.rulesID = rv.RulePackageVersionID

	var p bpctype.BatteryProduct
	d.do(http.MethodPost, "/v1/battery-products", map[string]any{"sku": nmc811.BatterySKU, "name": "Voltaris EV Pack 75"}, http.StatusCreated, &p)
	d.do(http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": p.BatteryProductID}, http.StatusCreated, &f.passport)
	return f
}

// compile stores a compiled version as COMPILE_PASSPORT would.
func (f *sampleFixture) compile(t *testing.T) (bpctype.PassportVersion, compiler.Output) {
	ctx := context.Background()
	id := uuid.New()
	in, err := passport.LoadCompileInput(ctx, f.st, passport.CompileRequest{
		TenantID: store.DevTenantID, PassportID: f.passport.PassportID, SnapshotID: f.snapshotID,
		RulePackageVersionID: f.rulesID, PassportVersionID: id, CompilerBuildID: "bpc-test",
		SigningKeyID: "test-key", IssuedAt: time.Now().UTC().Truncate(time.Second),
	})
	require.NoError(t, err)
	out, err := compiler.CompilePassport(in)
	require.NoError(t, err)
	f.riverJobID++
	var v bpctype.PassportVersion
	require.NoError(t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		v, _, err = f.st.WithTx(tx).InsertPassportVersion(ctx, store.NewPassportVersion{
			PassportVersionID: id, TenantID: store.DevTenantID, PassportID: f.passport.PassportID,
			SnapshotID: f.snapshotID, RulePackageVersionID: f.rulesID, CompilerBuildID: in.CompilerBuildID,
			IssuedAt: in.IssuedAt, SigningKeyID: in.SigningKeyID,
			Payload: out.Payload, PayloadHash: out.PayloadHash, Proof: out.Proof, ProofRootHash: out.ProofRootHash,
			Receipt: out.Receipt, ReceiptHash: out.ReceiptHash, CompileRiverJobID: 1<<40 + f.riverJobID,
		})
		return err
	}))
	return v, out
}

// signAndQR signs a version and stores its QR code as SIGN_PASSPORT and
// GENERATE_QR would; it returns the signed receipt.
func (f *sampleFixture) signAndQR(t *testing.T, v bpctype.PassportVersion, out compiler.Output) []byte {
	ctx := context.Background()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sig := sign.SignatureBase64(sign.SignHash(priv, out.ReceiptHashRaw))
	fields := out.ReceiptFields
	fields.Signature = sig
	signed, err := receipt.SignedCanonical(fields)
	require.NoError(t, err)
	payload, err := qr.Payload(v.PassportVersionID.String(), out.PayloadHash, out.ProofRootHash, out.ReceiptHash)
	require.NoError(t, err)
	png, err := qr.PNG(payload)
	require.NoError(t, err)
	require.NoError(t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		if err := f.st.WithTx(tx).SetPassportVersionSigned(ctx, store.DevTenantID, v.PassportVersionID, sig, v.SigningKeyID,
			sign.PublicKeyBase64(pub), signed); err != nil {
			return err
		}
		return f.st.WithTx(tx).SetPassportVersionQR(ctx, store.DevTenantID, v.PassportVersionID, payload, png)
	}))
	return signed
}

func TestDomainPassportVersionArtifactsActivateReplayAndExports(t *testing.T) {
	t.Parallel()
	d := newDomainAPI(t)
	f := newSampleFixture(t, d)
	v1, out1 := f.compile(t)
	path := "/v1/passport-versions/" + v1.PassportVersionID.String()

	var got bpctype.PassportVersion
	d.do(http.MethodGet, path, nil, http.StatusOK, &got)
	require.Equal(t, bpctype.PassportCompiling, got.Status)
	require.Equal(t, out1.PayloadHash, got.PayloadHash)

	// The stored bytes, unchanged, with their hash as ETag.
	for _, a := range []struct {
		suffix string
		want   []byte
		etag   string
	}{
		{"/payload", out1.Payload, out1.PayloadHash},
		{"/proof", out1.Proof, out1.ProofRootHash},
		{"/receipt", out1.Receipt, out1.ReceiptHash},
	} {
		body, hdr := d.bytes(path+a.suffix, http.StatusOK)
		require.Equal(t, a.want, body, a.suffix)
		require.Equal(t, "application/json", hdr.Get("Content-Type"), a.suffix)
		require.Equal(t, `"`+a.etag+`"`, hdr.Get("ETag"), a.suffix)
	}
	env := d.fail(http.MethodGet, path+"/qr.png", nil, http.StatusNotFound, "NOT_FOUND")
	require.Contains(t, env.Error.Message, "QR code not generated yet")

	// A COMPILING version cannot be activated; an unsigned one replays.
	d.fail(http.MethodPost, path+"/activate", nil, http.StatusConflict, "INVALID_STATE")
	var rep passport.ReplayReport
	d.do(http.MethodPost, path+"/replay", nil, http.StatusOK, &rep)
	require.True(t, rep.Match, "%v", rep.Mismatches)
	require.Equal(t, []string{}, rep.Mismatches)

	signed1 := f.signAndQR(t, v1, out1)
	body, _ := d.bytes(path+"/receipt", http.StatusOK)
	require.Equal(t, signed1, body, "the signed receipt once there is one")
	png, hdr := d.bytes(path+"/qr.png", http.StatusOK)
	require.Equal(t, "image/png", hdr.Get("Content-Type"))
	require.True(t, strings.HasPrefix(string(png), "\x89PNG\r\n\x1a\n"))
	d.do(http.MethodPost, path+"/replay", nil, http.StatusOK, &rep)
	require.True(t, rep.Match, "%v", rep.Mismatches)
	require.True(t, rep.SignatureValid)

	// Activate: ACTIVE, the passport points at it, one event; again changes nothing.
	d.do(http.MethodPost, path+"/activate", nil, http.StatusOK, &got)
	require.Equal(t, bpctype.PassportActive, got.Status)
	d.do(http.MethodPost, path+"/activate", nil, http.StatusOK, &got)
	require.Equal(t, bpctype.PassportActive, got.Status)
	evs := d.events(v1.PassportVersionID)
	require.Equal(t, []string{"PassportVersion/passport.activated"}, eventTypes(evs))
	require.JSONEq(t, `{"passport_id":"`+f.passport.PassportID.String()+`","superseded_version_id":null}`, string(evs[0].Payload))

	// A second version supersedes the first, with an event on each.
	v2, out2 := f.compile(t)
	f.signAndQR(t, v2, out2)
	path2 := "/v1/passport-versions/" + v2.PassportVersionID.String()
	d.do(http.MethodPost, path2+"/activate", nil, http.StatusOK, &got)
	require.Equal(t, bpctype.PassportActive, got.Status)
	evs = d.events(v2.PassportVersionID)
	require.Equal(t, []string{"PassportVersion/passport.activated"}, eventTypes(evs))
	require.JSONEq(t, `{"passport_id":"`+f.passport.PassportID.String()+`","superseded_version_id":"`+v1.PassportVersionID.String()+`"}`,
		string(evs[0].Payload))
	require.Equal(t, []string{"PassportVersion/passport.activated", "PassportVersion/passport.superseded"},
		eventTypes(d.events(v1.PassportVersionID)))
	var withVersions struct {
		bpctype.Passport
		Versions []bpctype.PassportVersion `json:"versions"`
	}
	d.do(http.MethodGet, "/v1/passports/"+f.passport.PassportID.String(), nil, http.StatusOK, &withVersions)
	require.Equal(t, &v2.PassportVersionID, withVersions.ActiveVersionID)
	require.Len(t, withVersions.Versions, 2)
	require.Equal(t, v2.PassportVersionID, withVersions.Versions[0].PassportVersionID, "newest first")
	require.Equal(t, bpctype.PassportSuperseded, withVersions.Versions[1].Status)

	// Exports: enqueue (format upper-cased), list, and the file checked against its SHA-256.
	var exported struct {
		Job bpctype.Job `json:"job"`
	}
	d.do(http.MethodPost, path2+"/export", map[string]any{"format": "json"}, http.StatusAccepted, &exported)
	require.Equal(t, jobargs.KindExport, exported.Job.Type)
	var eargs jobargs.ExportPassportArgs
	require.NoError(t, json.Unmarshal(exported.Job.Payload, &eargs))
	require.Equal(t, "JSON", eargs.Format)
	raw := d.do(http.MethodGet, path2+"/exports", nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw))
	d.fail(http.MethodGet, path2+"/export-file", nil, http.StatusNotFound, "NOT_FOUND")

	file := filepath.Join(t.TempDir(), "export.json")
	content := []byte(`{"passport_version_id":"` + v2.PassportVersionID.String() + `"}`)
	require.NoError(t, os.WriteFile(file, content, 0o600))
	ctx := context.Background()
	require.NoError(t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := f.st.WithTx(tx).RecordPassportExport(ctx, bpctype.PassportExport{TenantID: store.DevTenantID, PassportVersionID: v2.PassportVersionID,
			Format: "JSON", Path: file, SizeBytes: int64(len(content)), SHA256: hash.SHA256Hex(content), RiverJobID: &exported.Job.RiverJobID})
		return err
	}))
	var exports struct {
		Items []bpctype.PassportExport `json:"items"`
	}
	d.do(http.MethodGet, path2+"/exports", nil, http.StatusOK, &exports)
	require.Len(t, exports.Items, 1)
	body, hdr = d.bytes(path2+"/export-file", http.StatusOK)
	require.Equal(t, content, body)
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	body, _ = d.bytes(path2+"/export-file?format=json", http.StatusOK)
	require.Equal(t, content, body)
	d.fail(http.MethodGet, path2+"/export-file?format=PDF", nil, http.StatusNotFound, "NOT_FOUND")

	// A PDF export is served as application/pdf (the document lists it).
	pdf, err := passport.WriteExport(ctx, f.st, t.TempDir(), store.DevTenantID, v2.PassportVersionID, "PDF")
	require.NoError(t, err)
	require.NoError(t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := f.st.WithTx(tx).RecordPassportExport(ctx, bpctype.PassportExport{TenantID: store.DevTenantID, PassportVersionID: v2.PassportVersionID,
			Format: pdf.Format, Path: pdf.Path, SizeBytes: pdf.SizeBytes, SHA256: pdf.SHA256})
		return err
	}))
	body, hdr = d.bytes(path2+"/export-file?format=pdf", http.StatusOK)
	require.Equal(t, "application/pdf", hdr.Get("Content-Type"))
	require.Equal(t, `"`+pdf.SHA256+`"`, hdr.Get("ETag"))
	written, err := os.ReadFile(pdf.Path)
	require.NoError(t, err)
	require.Equal(t, written, body)
	body, hdr = d.bytes(path2+"/export-file", http.StatusOK)
	require.Equal(t, content, body, "JSON stays the default")
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	require.NoError(t, os.WriteFile(file, append(content, ' '), 0o600))
	d.fail(http.MethodGet, path2+"/export-file", nil, http.StatusConflict, "INVALID_STATE")
	require.NoError(t, os.Remove(file))
	env = d.fail(http.MethodGet, path2+"/export-file", nil, http.StatusNotFound, "NOT_FOUND")
	require.Contains(t, env.Error.Message, "export file missing")

	// A stored artifact that no longer matches its inputs: REPLAY_MISMATCH.
	_, err = d.h.pool.Exec(ctx, `UPDATE passport_versions SET payload = payload || ' '::bytea WHERE passport_version_id = $1`, v1.PassportVersionID)
	require.NoError(t, err)
	env = d.fail(http.MethodPost, path+"/replay", nil, http.StatusConflict, "REPLAY_MISMATCH")
	require.Equal(t, []any{"payload"}, env.Error.Details["mismatches"], "%s", env.Error.Message)
	require.Contains(t, env.Error.Details, "report")

	// None of it is visible to another tenant.
	other := d.as(d.newTenant())
	for _, suffix := range []string{"", "/payload", "/proof", "/receipt", "/qr.png", "/exports", "/export-file"} {
		other.fail(http.MethodGet, path2+suffix, nil, http.StatusNotFound, "NOT_FOUND")
	}
	other.fail(http.MethodPost, path2+"/activate", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, path2+"/replay", nil, http.StatusNotFound, "NOT_FOUND")
	other.fail(http.MethodPost, path2+"/export", map[string]any{"format": "JSON"}, http.StatusNotFound, "NOT_FOUND")
	d.h.requireConsistent()
}

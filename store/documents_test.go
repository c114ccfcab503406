package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/store"
)

func sampleDoc(t *testing.T, name string) []byte {
	t.Helper()
	b, err := nmc811.Document(name)
	require.NoError(t, err)
	return b
}

// sampleKinds maps the sample documents to their kinds.
var sampleKinds = map[string]string{
	nmc811.DocBOM:          facts.KindBOM,
	nmc811.DocPCF:          facts.KindPCF,
	nmc811.DocDueDiligence: facts.KindDueDiligence,
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (e env) createDocument(t *testing.T, tenantID uuid.UUID, kind, name string) bpctype.Document {
	t.Helper()
	d, err := e.Store.CreateDocument(e.Ctx, tenantID, kind, name)
	require.NoError(t, err)
	return d
}

// upload stores content as a version of the document.
func (e env) upload(t *testing.T, tenantID, documentID uuid.UUID, content []byte) (bpctype.DocumentVersion, bool) {
	t.Helper()
	var v bpctype.DocumentVersion
	var existed bool
	require.NoError(t, e.inTx(func(q *store.Queries) (err error) {
		v, existed, err = q.CreateDocumentVersion(e.Ctx, tenantID, documentID, "application/json", content)
		return err
	}))
	return v, existed
}

// parse does what PARSE_FACTS does: lock, parse, store the facts and mark
// the version VALIDATED. It returns the parsed facts and how many were new.
func (e env) parse(t *testing.T, tenantID, versionID uuid.UUID) ([]facts.Fact, int) {
	t.Helper()
	var fs []facts.Fact
	var added int
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		in, err := q.LockDocumentVersionForParse(e.Ctx, tenantID, versionID)
		if err != nil {
			return err
		}
		if fs, err = facts.Parse(in.Kind, in.Content); err != nil {
			return err
		}
		if added, err = q.InsertFacts(e.Ctx, tenantID, versionID, fs); err != nil {
			return err
		}
		return q.MarkDocumentVersionValidated(e.Ctx, tenantID, versionID, len(fs))
	}))
	return fs, added
}

// uploadSample creates a document for a sample file, uploads and parses it.
func (e env) uploadSample(t *testing.T, tenantID uuid.UUID, name string) (bpctype.DocumentVersion, []facts.Fact) {
	t.Helper()
	d := e.createDocument(t, tenantID, sampleKinds[name], name)
	v, existed := e.upload(t, tenantID, d.DocumentID, sampleDoc(t, name))
	require.False(t, existed)
	fs, _ := e.parse(t, tenantID, v.DocumentVersionID)
	return v, fs
}

// factIDs returns the ids of the facts a document version yielded.
func (e env) factIDs(t *testing.T, tenantID uuid.UUID, versionIDs ...uuid.UUID) []uuid.UUID {
	t.Helper()
	ids, err := e.Store.FactsOfDocumentVersions(e.Ctx, tenantID, versionIDs)
	require.NoError(t, err)
	return ids
}

// bomV2 is the sample BOM with another model name: the battery fact
// changes, the material and hazardous facts stay the same.
func bomV2(t *testing.T) []byte {
	t.Helper()
	b := sampleDoc(t, nmc811.DocBOM)
	v2 := strings.Replace(string(b), `"Voltaris EV Pack 75"`, `"Voltaris EV Pack 75 Rev B"`, 1)
	require.NotEqual(t, string(b), v2)
	return []byte(v2)
}

// bomVersions creates a BOM document of the dev tenant with two versions,
// not parsed: the sample BOM and bomV2.
func (e env) bomVersions(t *testing.T) (v1, v2 bpctype.DocumentVersion) {
	t.Helper()
	d := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom.json")
	v1, _ = e.upload(t, store.DevTenantID, d.DocumentID, sampleDoc(t, nmc811.DocBOM))
	v2, _ = e.upload(t, store.DevTenantID, d.DocumentID, bomV2(t))
	return v1, v2
}

func TestCreateDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	_, err := e.Store.CreateDocument(e.Ctx, uuid.New(), facts.KindBOM, "bom.json")
	requireCode(t, err, errcode.NotFound)

	bom := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom.json")
	require.Equal(t, store.DevTenantID, bom.TenantID)
	require.Equal(t, "BOM", bom.Kind)
	require.Equal(t, "bom.json", bom.Name)
	pcf := e.createDocument(t, store.DevTenantID, facts.KindPCF, "pcf.json")

	got, err := e.Store.GetDocument(e.Ctx, store.DevTenantID, bom.DocumentID)
	require.NoError(t, err)
	require.Equal(t, bom.DocumentID, got.DocumentID)
	require.True(t, bom.CreatedAt.Equal(got.CreatedAt))
	_, err = e.Store.GetDocument(e.Ctx, store.DevTenantID, uuid.New())
	requireCode(t, err, errcode.NotFound)

	list, err := e.Store.ListDocuments(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.ElementsMatch(t, []uuid.UUID{bom.DocumentID, pcf.DocumentID}, []uuid.UUID{list[0].DocumentID, list[1].DocumentID})

	other := e.OtherTenant(t)
	_, err = e.Store.GetDocument(e.Ctx, other, bom.DocumentID)
	requireCode(t, err, errcode.NotFound)
	list, err = e.Store.ListDocuments(e.Ctx, other)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestCreateDocumentVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom.json")
	v1Content, v2Content := sampleDoc(t, nmc811.DocBOM), bomV2(t)

	v1, existed := e.upload(t, store.DevTenantID, d.DocumentID, v1Content)
	require.False(t, existed)
	require.Equal(t, int32(1), v1.Version)
	require.Equal(t, bpctype.DocUploaded, v1.Status)
	require.Equal(t, d.DocumentID, v1.DocumentID)
	require.Equal(t, store.DevTenantID, v1.TenantID)
	require.Equal(t, "application/json", v1.MimeType)
	require.Equal(t, sha256Hex(v1Content), v1.ContentSHA256)
	require.Equal(t, int32(len(v1Content)), v1.SizeBytes)
	require.Nil(t, v1.FactCount)
	require.Nil(t, v1.ProcessedAt)

	v2, existed := e.upload(t, store.DevTenantID, d.DocumentID, v2Content)
	require.False(t, existed)
	require.Equal(t, int32(2), v2.Version)
	require.NotEqual(t, v1.DocumentVersionID, v2.DocumentVersionID)

	// The same bytes again return the existing version.
	again, existed := e.upload(t, store.DevTenantID, d.DocumentID, v1Content)
	require.True(t, existed)
	require.Equal(t, v1.DocumentVersionID, again.DocumentVersionID)
	require.Equal(t, int32(1), again.Version)
	require.Equal(t, 2, e.Count(t, `SELECT count(*) FROM document_versions WHERE document_id = $1`, d.DocumentID))

	// The same bytes under another document are a new version 1 there.
	d2 := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom-copy.json")
	copyV, existed := e.upload(t, store.DevTenantID, d2.DocumentID, v1Content)
	require.False(t, existed)
	require.Equal(t, int32(1), copyV.Version)
	require.NotEqual(t, v1.DocumentVersionID, copyV.DocumentVersionID)

	list, err := e.Store.ListDocumentVersions(e.Ctx, store.DevTenantID, d.DocumentID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []int32{2, 1}, []int32{list[0].Version, list[1].Version}, "newest first")

	got, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v2.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, v2.ContentSHA256, got.ContentSHA256)
	require.Equal(t, int32(len(v2Content)), got.SizeBytes)
	_, err = e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, uuid.New())
	requireCode(t, err, errcode.NotFound)

	// Unknown documents are rejected before anything is stored.
	err = e.inTx(func(q *store.Queries) error {
		_, _, err := q.CreateDocumentVersion(e.Ctx, store.DevTenantID, uuid.New(), "application/json", []byte("{}"))
		return err
	})
	requireCode(t, err, errcode.NotFound)
	require.Equal(t, 2, e.Count(t, `SELECT count(*) FROM document_versions WHERE document_id = $1`, d.DocumentID))
}

func TestLockDocumentVersionForParseAndMark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	content := sampleDoc(t, nmc811.DocPCF)
	d := e.createDocument(t, store.DevTenantID, facts.KindPCF, "pcf.json")
	v, _ := e.upload(t, store.DevTenantID, d.DocumentID, content)

	require.NoError(t, e.inTx(func(q *store.Queries) error {
		in, err := q.LockDocumentVersionForParse(e.Ctx, store.DevTenantID, v.DocumentVersionID)
		require.NoError(t, err)
		require.Equal(t, "PCF", in.Kind)
		require.Equal(t, content, in.Content)
		require.Equal(t, v.DocumentVersionID, in.Version.DocumentVersionID)
		require.Equal(t, bpctype.DocUploaded, in.Version.Status)
		return q.MarkDocumentVersionValidated(e.Ctx, store.DevTenantID, v.DocumentVersionID, 1)
	}))
	got, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, bpctype.DocValidated, got.Status)
	require.NotNil(t, got.FactCount)
	require.Equal(t, int32(1), *got.FactCount)
	require.NotNil(t, got.ProcessedAt)
	require.Empty(t, got.Error)

	err = e.inTx(func(q *store.Queries) error {
		_, err := q.LockDocumentVersionForParse(e.Ctx, store.DevTenantID, uuid.New())
		return err
	})
	requireCode(t, err, errcode.NotFound)
}

func TestMarkDocumentVersionRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom.json")
	bad := []byte(`{"document_type":"BOM","schema_version":2}`)
	v, _ := e.upload(t, store.DevTenantID, d.DocumentID, bad)

	_, parseErr := facts.Parse(facts.KindBOM, bad)
	cause := errcode.As(parseErr)
	require.NotNil(t, cause)
	require.NotEmpty(t, cause.Field)
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		return q.MarkDocumentVersionRejected(e.Ctx, store.DevTenantID, v.DocumentVersionID, cause)
	}))
	got, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, bpctype.DocRejected, got.Status)
	require.Nil(t, got.FactCount)
	require.NotNil(t, got.ProcessedAt)
	var detail map[string]string
	require.NoError(t, json.Unmarshal(got.Error, &detail))
	require.Equal(t, map[string]string{"code": string(cause.Code), "message": cause.Message, "field": cause.Field}, detail)

	// A cause without a field has no field key; a later success clears the error.
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		return q.MarkDocumentVersionRejected(e.Ctx, store.DevTenantID, v.DocumentVersionID,
			errcode.New(errcode.Internal, "boom"))
	}))
	got, err = e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.JSONEq(t, `{"code":"INTERNAL_ERROR","message":"boom"}`, string(got.Error))
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		return q.MarkDocumentVersionValidated(e.Ctx, store.DevTenantID, v.DocumentVersionID, 0)
	}))
	got, err = e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, bpctype.DocValidated, got.Status)
	require.Empty(t, got.Error)
	require.Equal(t, int32(0), *got.FactCount)
}

func TestInsertFactsIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDocument(t, store.DevTenantID, facts.KindBOM, "bom.json")
	v, _ := e.upload(t, store.DevTenantID, d.DocumentID, sampleDoc(t, nmc811.DocBOM))

	fs, added := e.parse(t, store.DevTenantID, v.DocumentVersionID)
	require.Len(t, fs, 17)
	require.Equal(t, 17, added)

	// A retried PARSE_FACTS adds nothing.
	again, added := e.parse(t, store.DevTenantID, v.DocumentVersionID)
	require.Equal(t, fs, again)
	require.Equal(t, 0, added)
	require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM facts`))
	require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM document_version_facts WHERE document_version_id = $1`, v.DocumentVersionID))

	n, err := committed(e, func(q *store.Queries) (int, error) {
		return q.InsertFacts(e.Ctx, store.DevTenantID, v.DocumentVersionID, nil)
	})
	require.NoError(t, err)
	require.Zero(t, n)

	// The stored facts are the parsed ones, byte for byte.
	stored, err := e.Store.ListFacts(e.Ctx, store.FactFilter{TenantID: store.DevTenantID})
	require.NoError(t, err)
	require.Len(t, stored, 17)
	byKey := map[string]facts.Fact{}
	for _, f := range fs {
		byKey[f.FactType+"|"+f.FactKey] = f
	}
	for _, sf := range stored {
		f, ok := byKey[sf.FactType+"|"+sf.FactKey]
		require.True(t, ok, "%s %s", sf.FactType, sf.FactKey)
		require.Equal(t, f.Payload, []byte(sf.Payload))
		require.Equal(t, f.PayloadHash, sf.PayloadHash)
		require.Equal(t, sha256Hex(f.Payload), sf.PayloadHash)
		require.Equal(t, int32(facts.SchemaVersion), sf.SchemaVersion)
		require.Equal(t, v.DocumentVersionID, sf.SourceDocumentVersionID)
		require.Equal(t, store.DevTenantID, sf.TenantID)
	}
	got, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, int32(17), *got.FactCount)
}

func TestSecondDocumentVersionReusesFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1, v2 := e.bomVersions(t)

	_, added := e.parse(t, store.DevTenantID, v1.DocumentVersionID)
	require.Equal(t, 17, added)
	fs2, added := e.parse(t, store.DevTenantID, v2.DocumentVersionID)
	require.Len(t, fs2, 17)
	require.Equal(t, 1, added, "only the battery fact changed")
	require.Equal(t, 18, e.Count(t, `SELECT count(*) FROM facts`))

	ids1 := e.factIDs(t, store.DevTenantID, v1.DocumentVersionID)
	ids2 := e.factIDs(t, store.DevTenantID, v2.DocumentVersionID)
	require.Len(t, ids1, 17)
	require.Len(t, ids2, 17, "the second version still has all its facts")
	shared := 0
	for _, id := range ids2 {
		if slices.Contains(ids1, id) {
			shared++
		}
	}
	require.Equal(t, 16, shared)
	require.Len(t, e.factIDs(t, store.DevTenantID, v1.DocumentVersionID, v2.DocumentVersionID), 18, "distinct ids")

	of2, err := e.Store.ListFacts(e.Ctx, store.FactFilter{TenantID: store.DevTenantID, DocumentVersionID: v2.DocumentVersionID})
	require.NoError(t, err)
	require.Len(t, of2, 17)
	fromV1 := 0
	for _, f := range of2 {
		require.Contains(t, ids2, f.FactID)
		if f.SourceDocumentVersionID == v1.DocumentVersionID {
			fromV1++
		} else {
			require.Equal(t, v2.DocumentVersionID, f.SourceDocumentVersionID)
			require.Equal(t, "BOM", f.FactType)
			require.Contains(t, string(f.Payload), "Rev B")
		}
	}
	require.Equal(t, 16, fromV1, "reused facts keep their first source")
}

func TestListFactsFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bom, _ := e.uploadSample(t, store.DevTenantID, nmc811.DocBOM)
	pcf, _ := e.uploadSample(t, store.DevTenantID, nmc811.DocPCF)
	dd, _ := e.uploadSample(t, store.DevTenantID, nmc811.DocDueDiligence)

	list := func(f store.FactFilter) []bpctype.Fact {
		t.Helper()
		f.TenantID = store.DevTenantID
		fs, err := e.Store.ListFacts(e.Ctx, f)
		require.NoError(t, err)
		return fs
	}
	all := list(store.FactFilter{})
	require.Len(t, all, 23)
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		require.True(t, prev.FactType < cur.FactType || (prev.FactType == cur.FactType && prev.FactKey < cur.FactKey),
			"ordered by type and key: %s/%s then %s/%s", prev.FactType, prev.FactKey, cur.FactType, cur.FactKey)
	}
	require.Len(t, list(store.FactFilter{DocumentVersionID: bom.DocumentVersionID}), 17)
	require.Len(t, list(store.FactFilter{DocumentVersionID: pcf.DocumentVersionID}), 1)
	require.Len(t, list(store.FactFilter{DocumentVersionID: dd.DocumentVersionID}), 5)
	require.Len(t, list(store.FactFilter{FactType: "BOM_MATERIAL"}), 13)
	require.Len(t, list(store.FactFilter{FactType: "DD_MATERIAL", DocumentVersionID: dd.DocumentVersionID}), 4)
	require.Empty(t, list(store.FactFilter{FactType: "DD_MATERIAL", DocumentVersionID: bom.DocumentVersionID}))
	require.Empty(t, list(store.FactFilter{DocumentVersionID: uuid.New()}))
	require.Empty(t, list(store.FactFilter{FactType: "NOPE"}))
	limited := list(store.FactFilter{Limit: 5})
	require.Len(t, limited, 5)
	require.Equal(t, all[:5], limited)
}

func TestDocumentsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	v, fs := e.uploadSample(t, store.DevTenantID, nmc811.DocBOM)
	require.Len(t, fs, 17)

	_, err := e.Store.GetDocumentVersion(e.Ctx, other, v.DocumentVersionID)
	requireCode(t, err, errcode.NotFound)
	err = e.inTx(func(q *store.Queries) error {
		_, err := q.LockDocumentVersionForParse(e.Ctx, other, v.DocumentVersionID)
		return err
	})
	requireCode(t, err, errcode.NotFound)
	err = e.inTx(func(q *store.Queries) error {
		_, _, err := q.CreateDocumentVersion(e.Ctx, other, v.DocumentID, "application/json", []byte("{}"))
		return err
	})
	requireCode(t, err, errcode.NotFound)
	versions, err := e.Store.ListDocumentVersions(e.Ctx, other, v.DocumentID)
	require.NoError(t, err)
	require.Empty(t, versions)

	require.Empty(t, e.factIDs(t, other, v.DocumentVersionID))
	fsOther, err := e.Store.ListFacts(e.Ctx, store.FactFilter{TenantID: other})
	require.NoError(t, err)
	require.Empty(t, fsOther)
	fsOther, err = e.Store.ListFacts(e.Ctx, store.FactFilter{TenantID: other, DocumentVersionID: v.DocumentVersionID})
	require.NoError(t, err)
	require.Empty(t, fsOther)

	// Facts cannot be attached to another tenant's version (composite foreign key).
	err = e.inTx(func(q *store.Queries) error {
		_, err := q.InsertFacts(e.Ctx, other, v.DocumentVersionID, fs)
		return err
	})
	require.Error(t, err)
	require.True(t, store.IsForeignKeyViolation(err), "%v", err)

	// Marking is scoped too: the other tenant's update touches nothing
	// (today it is a silent no-op rather than NOT_FOUND).
	_ = e.inTx(func(q *store.Queries) error {
		return q.MarkDocumentVersionRejected(e.Ctx, other, v.DocumentVersionID, errcode.New(errcode.Internal, "x"))
	})
	got, err := e.Store.GetDocumentVersion(e.Ctx, store.DevTenantID, v.DocumentVersionID)
	require.NoError(t, err)
	require.Equal(t, bpctype.DocValidated, got.Status)

	// The same content in another tenant yields that tenant's own facts.
	vo, fo := e.uploadSample(t, other, nmc811.DocBOM)
	require.Len(t, fo, 17)
	require.Len(t, e.factIDs(t, other, vo.DocumentVersionID), 17)
	require.Equal(t, 34, e.Count(t, `SELECT count(*) FROM facts`))
	require.Equal(t, 17, e.Count(t, `SELECT count(*) FROM facts WHERE tenant_id = $1`, other))
	require.Empty(t, e.factIDs(t, store.DevTenantID, vo.DocumentVersionID))
}

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/pdftest"
	"github.com/bpc-platform/bpc/internal/service"
)

// A phone camera's view (SPEC §16, BPC-QR-2): a version driven to ACTIVE
// has a QR code that zbarimg reads as a link to this service; opening it
// answers the page saying the code matches the signed passport; the same
// link with one hash changed shows the mismatch, and a damaged one says
// so. The JSON export holding the link verifies offline.
func TestQRCodeIsALinkAPhoneOpens(t *testing.T) {
	t.Parallel()
	env := pipelineEnv(t)
	h := newHarness(t, service.RoleAll, env)
	// A tenant of its own whose identity the platform verified: the page
	// can then say VERIFIED.
	h = h.forTenant(h.verifiedIssuer("Voltaris Battery Systems GmbH"))
	pp := h.compiledSample()
	v := h.signedWithQR(pp.PassportID)
	id := v.PassportVersionID.String()
	var active bpctype.PassportVersion
	h.post("/v1/passport-versions/"+id+"/activate", map[string]any{}, http.StatusOK, &active)
	require.Equal(t, bpctype.PassportActive, active.Status)

	// The stored payload is a BPC-QR-2 link under the service's address
	// (dev and test: where it listens, the port it was given).
	require.Equal(t, h.base, h.app.PublicBaseURL())
	f, err := qr.Parse(*v.QRPayload)
	require.NoError(t, err)
	require.Equal(t, qr.Fields{Format: qr.FormatQR2, BaseURL: h.base, PassportVersionID: id,
		PayloadHash: v.PayloadHash, ProofRootHash: v.ProofRootHash, ReceiptHash: v.ReceiptHash}, f)

	// zbarimg reads qr.png as exactly that link, to this service's host.
	png := filepath.Join(t.TempDir(), "qr.png")
	require.NoError(t, os.WriteFile(png, h.bytesOf("/v1/passport-versions/"+id+"/qr.png"), 0o600))
	link := pdftest.Zbar(t, png)
	require.Equal(t, *v.QRPayload, link)
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "http", u.Scheme)
	require.Equal(t, h.app.Addr(), u.Host)
	require.Equal(t, "/p/"+id, u.Path)

	browser := map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	status, hdr, page := send(t, http.DefaultClient, http.MethodGet, link, nil, browser)
	require.Equal(t, http.StatusOK, status, "%s", page)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	require.Contains(t, string(page), `id="verdict">VERIFIED`)
	require.Contains(t, string(page), "The code on this battery matches the signed passport.")

	status, _, body := send(t, http.DefaultClient, http.MethodGet, link, nil, map[string]string{"Accept": "application/json"})
	require.Equal(t, http.StatusOK, status, "%s", body)
	var check struct {
		PassportVersionID string `json:"passport_version_id"`
		QRMatches         bool   `json:"qr_matches"`
		Verification      struct {
			Verified bool           `json:"verified"`
			Checks   []verify.Check `json:"checks"`
		} `json:"verification"`
	}
	require.NoError(t, json.Unmarshal(body, &check))
	require.Equal(t, id, check.PassportVersionID)
	require.True(t, check.QRMatches)
	require.True(t, check.Verification.Verified, "%+v", check.Verification.Checks)

	// One hash changed: the page shows the mismatch, naming it.
	changed, err := qr.Link(f.BaseURL, id, v.PayloadHash, hash.SHA256Hex([]byte("another proof")), v.ReceiptHash)
	require.NoError(t, err)
	status, _, page = send(t, http.DefaultClient, http.MethodGet, changed, nil, browser)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(page), `id="verdict">NOT VERIFIED`)
	require.Contains(t, string(page), "The code on this battery does not match the signed passport: the proof root (pr) differs")
	status, _, body = send(t, http.DefaultClient, http.MethodGet, changed, nil, map[string]string{"Accept": "application/json"})
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, json.Unmarshal(body, &check))
	require.False(t, check.QRMatches)
	require.False(t, check.Verification.Verified)

	// The scanned text pasted into the verify form checks the same way.
	status, _ = h.raw(http.MethodGet, "/public/v1/verify?qr="+url.QueryEscape(link), nil, nil)
	require.Equal(t, http.StatusOK, status)

	// A damaged link (a hash cut short): 400, the page says so, not cached.
	damaged := link[:len(link)-5]
	status, hdr, page = send(t, http.DefaultClient, http.MethodGet, damaged, nil, browser)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))
	require.Contains(t, string(page), "This link is damaged: rh ")
	status, _, _ = send(t, http.DefaultClient, http.MethodGet, damaged, nil, map[string]string{"Accept": "application/json"})
	require.Equal(t, http.StatusUnprocessableEntity, status)

	// The JSON export carries the link; the offline verifier accepts it.
	var exp jobEnvelope
	h.post("/v1/passport-versions/"+id+"/export", map[string]any{"format": "json"}, http.StatusAccepted, &exp)
	h.succeeded(exp.Job.JobID)
	var exports struct {
		Items []bpctype.PassportExport `json:"items"`
	}
	h.get("/v1/passport-versions/"+id+"/exports", &exports)
	require.Len(t, exports.Items, 1)
	doc, err := os.ReadFile(filepath.Join(env["BPC_EXPORT_DIR"], exports.Items[0].Path))
	require.NoError(t, err)
	a, want, err := verify.ReadExport(doc)
	require.NoError(t, err)
	require.Equal(t, link, a.QRPayload)
	rep, err := verify.Verify(a, want)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rep.Checks[0].Detail, "BPC-QR-2 link"), rep.Checks[0].Detail)

	// Pasted into the verify form, a link to another site that copies the
	// hashes is not this service's code. The service's own base
	// (BPC_PUBLIC_BASE_URL, here the listen address) matches also for a
	// version whose stored link has an earlier base.
	scan := func(code string) (matches, baseOK bool) {
		status, _, body := send(t, http.DefaultClient, http.MethodGet, h.base+"/public/v1/verify?qr="+url.QueryEscape(code), nil,
			map[string]string{"Accept": "application/json"})
		require.Equal(t, http.StatusOK, status, "%s", body)
		var got struct {
			QRMatches  bool `json:"qr_matches"`
			LinkBaseOK bool `json:"link_base_ok"`
		}
		require.NoError(t, json.Unmarshal(body, &got))
		return got.QRMatches, got.LinkBaseOK
	}
	foreign, err := qr.Link("https://evil.example", id, v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	matches, baseOK := scan(foreign)
	require.False(t, matches)
	require.False(t, baseOK)
	earlier, err := qr.Link("https://earlier.example", id, v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	earlierPNG, err := qr.PNG(earlier)
	require.NoError(t, err)
	_, err = h.pool.Exec(context.Background(), `UPDATE passport_versions SET qr_payload = $1, qr_png = $2 WHERE passport_version_id = $3`,
		earlier, earlierPNG, id)
	require.NoError(t, err)
	// The public answers cache hears of the change by NOTIFY, after the
	// commit: the earlier link matches once the cached version is dropped
	// (without the notification it would not for BPC_PUBLIC_CACHE_MAX_AGE_S).
	deadline := time.Now().Add(20 * time.Second)
	for {
		matches, baseOK = scan(earlier)
		if matches || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, code := range []string{earlier, link} {
		matches, baseOK = scan(code)
		require.True(t, matches, code)
		require.True(t, baseOK, code)
	}
}

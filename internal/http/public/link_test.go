package public_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/browser"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// linkPath is the path and query of a stored BPC-QR-2 link: what the
// service sees when a phone opens it.
func linkPath(t *testing.T, link string) string {
	t.Helper()
	f, err := qr.Parse(link)
	require.NoError(t, err)
	require.Equal(t, qr.FormatQR2, f.Format)
	return strings.TrimPrefix(link, f.BaseURL)
}

// withHashes is the link path of version id with the hashes given in hex.
func withHashes(t *testing.T, id, ph, pr, rh string) string {
	t.Helper()
	link, err := qr.Link(fixture.PublicBaseURL, id, ph, pr, rh)
	require.NoError(t, err)
	return linkPath(t, link)
}

func qrVerification(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	return m
}

func TestLinkPageComparesThePrintedHashes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	v := e.active.Version
	id := v.PassportVersionID
	good := *v.QRPayload
	require.True(t, strings.HasPrefix(good, fixture.PublicBaseURL+"/p/"+id.String()+"?ph="), good)

	// Without the hashes: the version's page, as /public/v1/passport-versions/{id} shows it.
	plain := e.get(t, "/p/"+id.String(), browserAccept)
	require.Equal(t, http.StatusOK, plain.Code)
	require.Equal(t, e.get(t, versionURL(id), browserAccept).Body.String(), plain.Body.String())

	// The genuine link: the code matches, everything verifies, the stored
	// image is checked too.
	rec := e.get(t, linkPath(t, good), browserAccept)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, public.CacheControl(cdnMaxAge), rec.Header().Get("Cache-Control"))
	page := rec.Body.String()
	require.Contains(t, page, `id="verdict">VERIFIED`)
	require.Contains(t, page, `<p class="match" id="qr-match">The code on this battery matches the signed passport.</p>`)
	require.Contains(t, page, "<h2>General</h2>")
	rec = e.get(t, linkPath(t, good), "application/json")
	require.Equal(t, http.StatusOK, rec.Code)
	m := qrVerification(t, rec.Body.Bytes())
	require.Equal(t, id.String(), m["passport_version_id"])
	require.Equal(t, true, m["qr_matches"])
	require.Equal(t, true, m["verification"].(map[string]any)["verified"])
	c, err := public.CheckQR(e.Ctx, e.Store, good, "")
	require.NoError(t, err)
	require.True(t, verifyPassed(c.Verification, verify.CheckQRPNG))

	// One hash changed: red, naming it; two: both.
	other := hash.SHA256Hex([]byte("another passport"))
	for _, tc := range []struct {
		path, names string
		failed      []string
	}{
		{withHashes(t, id.String(), other, v.ProofRootHash, v.ReceiptHash), "the payload hash (ph) differs", []string{verify.CheckPayloadHash}},
		{withHashes(t, id.String(), v.PayloadHash, other, other), "the proof root (pr), the receipt hash (rh) differ",
			[]string{verify.CheckProofRoot, verify.CheckReceiptHash}},
	} {
		rec := e.get(t, tc.path, browserAccept)
		require.Equal(t, http.StatusOK, rec.Code, tc.path)
		page := rec.Body.String()
		require.Contains(t, page, `id="verdict">NOT VERIFIED`)
		require.Contains(t, page, `<p class="mismatch" id="qr-match">The code on this battery does not match the signed passport: `+tc.names)
		require.NotContains(t, page, `class="match"`)

		rec = e.get(t, tc.path, "")
		require.Equal(t, http.StatusOK, rec.Code)
		m := qrVerification(t, rec.Body.Bytes())
		require.Equal(t, false, m["qr_matches"])
		require.Equal(t, false, m["verification"].(map[string]any)["verified"])
		c, err := public.CheckLink(e.Ctx, e.Store, id, mustPrinted(t, tc.path))
		require.NoError(t, err)
		require.Equal(t, tc.failed, failedNames(c.Verification))
	}
}

func mustPrinted(t *testing.T, path string) public.Printed {
	t.Helper()
	f, err := qr.Parse(fixture.PublicBaseURL + path)
	require.NoError(t, err)
	return public.Printed{PayloadHash: f.PayloadHash, ProofRootHash: f.ProofRootHash, ReceiptHash: f.ReceiptHash}
}

func failedNames(v public.Verification) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// A damaged link (a hash missing, repeated or not in its one spelling)
// answers 400 with the page saying so, never cached; JSON: 422 naming the
// parameter. Unknown ids are 404 whatever the query.
func TestLinkPageDamagedAndUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	good := linkPath(t, *e.active.Version.QRPayload)
	ph := good[strings.Index(good, "ph=")+3 : strings.Index(good, "&pr=")]
	for _, tc := range []struct{ path, field, says string }{
		{strings.Replace(good, "&rh=", "&xx=", 1), "rh", "rh is missing"},
		{good[:strings.Index(good, "&pr=")], "pr", "pr is missing"},
		{good + "&ph=" + ph, "ph", "ph is given 2 times"},
		{strings.Replace(good, ph, strings.ToLower(ph), 1), "ph", "ph is not unpadded upper-case base32"},
		{strings.Replace(good, ph, ph[:51]+"R", 1), "ph", "canonical base32"},
		{strings.Replace(good, ph, ph+"AAAA", 1), "ph", "52"},
		{strings.Replace(good, ph, strings.Repeat("A", 100_000), 1), "ph", "ph is not the canonical base32"},
		{"/p/" + id.String() + "?ph=", "ph", "ph is not the canonical base32"},
	} {
		rec := e.get(t, tc.path, browserAccept)
		require.Equal(t, http.StatusBadRequest, rec.Code, tc.path)
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
		require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
		require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")
		page := rec.Body.String()
		require.Contains(t, page, `id="verdict">NOT VERIFIED<small>This link is damaged: `, tc.path)
		require.Contains(t, page, tc.says, tc.path)
		require.NotContains(t, page, `id="qr-match"`)
		require.Contains(t, page, "<h2>General</h2>", "the passport its id names is still shown")

		rec = e.get(t, tc.path, "application/json")
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, tc.path)
		require.Contains(t, rec.Body.String(), tc.field+": ")
	}
	// JSON needs the hashes.
	require.Equal(t, http.StatusUnprocessableEntity, e.get(t, "/p/"+id.String(), "application/json").Code)

	unknown := strings.Replace(good, id.String(), uuid.NewString(), 1)
	for _, path := range []string{unknown, "/p/" + uuid.NewString(), "/p/not-a-uuid", "/p/not-a-uuid" + good[strings.Index(good, "?"):],
		strings.Replace(unknown, "&rh=", "&xx=", 1)} {
		for _, accept := range []string{browserAccept, "application/json"} {
			rec := e.get(t, path, accept)
			require.Equal(t, http.StatusNotFound, rec.Code, "%s %s", path, accept)
			require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
		}
	}
	require.Contains(t, e.get(t, unknown, browserAccept).Body.String(), "no published passport with this id")
}

// Versions issued before links keep their BPC-QR-1 code and image: both
// still verify, by /public/v1/verify and by a link typed with their hashes.
func TestIssuedQR1CodesKeepVerifying(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	v := e.active.Version
	one, err := qr.Payload(v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	onePNG, err := qr.PNG(one)
	require.NoError(t, err)
	e.Exec(t, `UPDATE passport_versions SET qr_payload = $1, qr_png = $2 WHERE passport_version_id = $3`, one, onePNG, v.PassportVersionID)

	got, err := public.Lookup(e.Ctx, e.Store, v.PassportVersionID)
	require.NoError(t, err)
	require.Equal(t, one, got.QRPayload)
	allTrue(t, got.Verification)
	require.True(t, verifyPassed(got.Verification, verify.CheckQRPNG))

	c, err := public.CheckQR(e.Ctx, e.Store, one, "")
	require.NoError(t, err)
	require.True(t, c.QRMatches)
	allTrue(t, c.Verification)
	require.True(t, verifyPassed(c.Verification, verify.CheckQRPNG))

	rec := e.get(t, withHashes(t, v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash), browserAccept)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `id="verdict">VERIFIED`)
	require.Contains(t, rec.Body.String(), "The code on this battery matches the signed passport.")

	// A link under the service's base, scanned into the verify form: the
	// hashes match; the checks are the stored code's (its image too).
	link, err := qr.Link(serviceBase, v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	c, err = public.CheckQR(e.Ctx, e.Store, link, serviceBase)
	require.NoError(t, err)
	require.True(t, c.QRMatches)
	require.True(t, c.LinkBaseOK)
	allTrue(t, c.Verification)
	require.True(t, verifyPassed(c.Verification, verify.CheckQRPNG))
	rec = e.get(t, verifyURL(link), browserAccept)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `id="verdict">VERIFIED`)

	// Under another base, it is not this service's code.
	link, err = qr.Link("https://elsewhere.example", v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	c, err = public.CheckQR(e.Ctx, e.Store, link, serviceBase)
	require.NoError(t, err)
	require.False(t, c.QRMatches)
	require.False(t, c.LinkBaseOK)
	require.Equal(t, []string{verify.CheckQRPayload}, failedNames(c.Verification))
	rec = e.get(t, verifyURL(link), browserAccept)
	require.Contains(t, rec.Body.String(), `id="verdict">NOT VERIFIED`)
	require.Contains(t, rec.Body.String(), "leads to elsewhere.example, not this service")
}

// A person's view of a scanned link: Chromium opens the link and shows
// VERIFIED and that the code matches; with a hash changed, NOT VERIFIED
// and the mismatch.
func TestLinkPageInABrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "NMC811 pack 75 kWh")
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	ctx := browser.New(t)
	v := e.active.Version

	browser.Do(t, ctx, chromedp.Navigate(srv.URL+linkPath(t, *v.QRPayload)))
	require.True(t, strings.HasPrefix(browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict"))), "VERIFIED"))
	require.Equal(t, "The code on this battery matches the signed passport.", browser.Value(t, ctx, chromedp.Text(chromedp.ID("qr-match"))))
	browser.Screenshot(t, ctx, "link.png")

	browser.Do(t, ctx, chromedp.Navigate(srv.URL+withHashes(t, v.PassportVersionID.String(), hash.SHA256Hex(nil), v.ProofRootHash, v.ReceiptHash)))
	require.True(t, strings.HasPrefix(browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict"))), "NOT VERIFIED"))
	require.Contains(t, browser.Value(t, ctx, chromedp.Text(chromedp.ID("qr-match"))), "does not match the signed passport: the payload hash (ph) differs")
	browser.Screenshot(t, ctx, "link-mismatch.png")
}

// A link is this service's code only under its base: BPC_PUBLIC_BASE_URL,
// or the base of the version's stored link (versions issued under an
// earlier base keep matching). A link to another site that copies a real
// passport's id and hashes — a counterfeit label leading to a look-alike
// site — does not match, and the answer names where it leads.
func TestVerifyQRLinkBase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	v := e.active.Version
	id := v.PassportVersionID.String()
	stored := *v.QRPayload
	require.True(t, strings.HasPrefix(stored, fixture.PublicBaseURL+"/"), "issued under the fixture's base, not the service's")
	under := func(base string) string {
		link, err := qr.Link(base, id, v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
		require.NoError(t, err)
		return link
	}

	for _, link := range []string{stored, under(serviceBase)} {
		c, err := public.CheckQR(e.Ctx, e.Store, link, serviceBase)
		require.NoError(t, err)
		require.True(t, c.QRMatches, link)
		require.True(t, c.LinkBaseOK, link)
		require.True(t, c.Verification.Verified, link)
		rec := e.get(t, verifyURL(link), "")
		require.Equal(t, http.StatusOK, rec.Code)
		m := qrVerification(t, rec.Body.Bytes())
		require.Equal(t, true, m["qr_matches"], link)
		require.Equal(t, true, m["link_base_ok"], link)
		require.Equal(t, "VERIFIED", m["verification"].(map[string]any)["verdict"], link)
		require.Contains(t, e.get(t, verifyURL(link), browserAccept).Body.String(), `id="verdict">VERIFIED`)
	}

	// Without a service base, the stored base still matches.
	c, err := public.CheckQR(e.Ctx, e.Store, stored, "")
	require.NoError(t, err)
	require.True(t, c.QRMatches)

	for _, base := range []string{"https://evil.example", "http://fixture.bpc.test", "https://fixture.bpc.test/x", "https://passports.bpc.test:8443"} {
		link := under(base)
		c, err := public.CheckQR(e.Ctx, e.Store, link, serviceBase)
		require.NoError(t, err)
		require.False(t, c.QRMatches, base)
		require.False(t, c.LinkBaseOK, base)
		require.False(t, c.Verification.Verified, base)
		require.Equal(t, verify.VerdictNotVerified, c.Verification.Verdict, base)
		require.Equal(t, []string{verify.CheckQRPayload}, failedNames(c.Verification), base)

		rec := e.get(t, verifyURL(link), "")
		require.Equal(t, http.StatusOK, rec.Code)
		m := qrVerification(t, rec.Body.Bytes())
		require.Equal(t, false, m["qr_matches"], base)
		require.Equal(t, false, m["link_base_ok"], base)
		ver := m["verification"].(map[string]any)
		require.Equal(t, false, ver["verified"], base)
		require.Equal(t, "NOT_VERIFIED", ver["verdict"], base)
		require.Contains(t, rec.Body.String(), "not this service", base)

		u, err := url.Parse(base)
		require.NoError(t, err)
		page := e.get(t, verifyURL(link), browserAccept).Body.String()
		require.Contains(t, page, `id="verdict">NOT VERIFIED`, base)
		require.Contains(t, page, "This QR code's link leads to "+u.Host+", not this service", base)
	}

	// A BPC-QR-1 string names no site: it matches by its hashes.
	one, err := qr.Payload(id, v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	require.NoError(t, err)
	c, err = public.CheckQR(e.Ctx, e.Store, one, serviceBase)
	require.NoError(t, err)
	require.True(t, c.QRMatches)
	require.True(t, c.LinkBaseOK)
	require.True(t, c.Verification.Verified)
}

// Distinct scanned codes of one version cost no verification each: the
// stored bytes are verified once (remembered), and a scanned code is
// compared with them as text, so a client sending ever new hashes neither
// keeps a core busy nor evicts the remembered verifications. The answers
// stay right: a scanned hash that differs fails its check.
func TestScannedCodesDoNotReverify(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	v := e.active.Version
	id := v.PassportVersionID
	checks := public.NewChecks(16)

	got, err := checks.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	require.True(t, got.Verification.Verified)
	require.Equal(t, 1, checks.Runs())

	for i := range 40 {
		other := hash.SHA256Hex([]byte(fmt.Sprint("scan ", i)))
		hashes := [3]string{v.PayloadHash, v.ProofRootHash, v.ReceiptHash}
		hashes[i%3] = other
		link, err := qr.Link(fixture.PublicBaseURL, id.String(), hashes[0], hashes[1], hashes[2])
		require.NoError(t, err)
		c, err := checks.CheckQR(e.Ctx, e.Store, link, serviceBase)
		require.NoError(t, err)
		require.False(t, c.QRMatches)
		require.False(t, c.Verification.Verified)
		require.Equal(t, verify.VerdictNotVerified, c.Verification.Verdict)
		failed := []string{verify.CheckPayloadHash, verify.CheckProofRoot, verify.CheckReceiptHash}[i%3]
		require.Equal(t, []string{failed}, failedNames(c.Verification))
		require.Contains(t, failedDetail(c.Verification, failed), "the scanned QR code says "+other)
		require.Equal(t, []bool{i%3 != 0, i%3 != 1, i%3 != 2},
			[]bool{c.Verification.PayloadHashOK, c.Verification.ProofRootOK, c.Verification.ReceiptHashOK})

		c, err = checks.CheckLink(e.Ctx, e.Store, id, mustPrinted(t, linkPath(t, link)))
		require.NoError(t, err)
		require.False(t, c.QRMatches)
		require.Equal(t, []string{failed}, failedNames(c.Verification))
	}
	c, err := checks.CheckQR(e.Ctx, e.Store, *v.QRPayload, serviceBase)
	require.NoError(t, err)
	require.True(t, c.QRMatches)
	require.True(t, c.Verification.Verified)
	require.True(t, verifyPassed(c.Verification, verify.CheckQRPNG))
	require.Equal(t, 1, checks.Runs(), "the stored bytes were verified once")
}

func failedDetail(v public.Verification, name string) string {
	for _, c := range v.Checks {
		if c.Name == name && !c.OK {
			return c.Detail
		}
	}
	return ""
}

package public_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/browser"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/store"
)

// phoneWidth is the narrowest phone the pages are made for (SPEC §16 "For
// people"), in CSS pixels.
const phoneWidth = 360

// layout is what a page measures of itself in the browser.
type layout struct {
	ScrollWidth int    `json:"scrollWidth"`
	ClientWidth int    `json:"clientWidth"`
	Text        string `json:"text"`
	// Widest names the elements whose right edge is beyond the viewport,
	// to say what overflows when the test fails.
	Widest []string `json:"widest"`
}

const measure = `(() => {
	const d = document.documentElement, vw = d.clientWidth, wide = [];
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.right > vw + 0.5 && wide.length < 8) wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.width) + 'px: ' + (el.textContent || '').trim().slice(0, 60));
	}
	return {scrollWidth: d.scrollWidth, clientWidth: vw, text: document.body.innerText, widest: wide};
})()`

// atPhoneWidth loads url in the browser emulating a 360 px wide phone and
// requires that the page does not scroll sideways: everything, hashes and
// long check details included, fits the width. It returns the layout, the
// page's text among it.
func atPhoneWidth(t *testing.T, ctx context.Context, url, name string) layout {
	t.Helper()
	browser.Do(t, ctx,
		chromedp.EmulateViewport(phoneWidth, 780, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS("footer")),
	)
	l := browser.Value(t, ctx, chromedp.Evaluate[layout](measure))
	browser.Screenshot(t, ctx, name+".png")
	require.Equal(t, phoneWidth, l.ClientWidth, "%s: the viewport is a phone's", name)
	require.LessOrEqual(t, l.ScrollWidth, l.ClientWidth, "%s scrolls sideways at %d px; beyond the right edge: %q", name, phoneWidth, l.Widest)
	return l
}

// TestPagesFitAPhone: the pages a person opens from a QR code, at 360 px
// with mobile emulation: the sample's ACTIVE version (its figures with
// their units), the empty verify form, a QR that does not match (the
// longer NOT VERIFIED texts), a version whose stored bytes changed (failed
// checks with their details), and a product named by someone who wants to
// break the page (words a hundred characters long, unbroken).
func TestPagesFitAPhone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "NMC811 75 kWh EV battery pack")
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	ctx := browser.New(t)

	l := atPhoneWidth(t, ctx, srv.URL+versionURL(e.active.Version.PassportVersionID), "active")
	require.True(t, strings.HasPrefix(l.Text, "VERIFIED"), l.Text)
	for _, s := range []string{"452 kg", "75 kWh", "16.5 %", "61300 gCO2e/kWh", e.active.Version.PayloadHash} {
		require.Contains(t, l.Text, s)
	}

	l = atPhoneWidth(t, ctx, srv.URL+public.VerifyPath, "form")
	require.Contains(t, l.Text, "Check a QR code")
	require.NotContains(t, l.Text, "VERIFIED")

	l = atPhoneWidth(t, ctx, srv.URL+verifyURL(tamperQR(*e.active.Version.QRPayload)), "mismatch")
	require.Contains(t, l.Text, "This QR code does not match")

	l = atPhoneWidth(t, ctx, srv.URL+verifyURL(strings.Repeat("BPC1|pv=", 120)), "malformed")
	require.Contains(t, l.Text, "NOT VERIFIED")

	hostile := fixture.ActiveNMC811(t, e.Store, e.River, store.DevTenantID, strings.Repeat("Zellchemie", 10)+" "+strings.Repeat("W", 99))
	e.Exec(t, `UPDATE passport_versions SET payload = overlay(payload placing '9'::bytea from position('"61.3"'::bytea in payload) + 1 for 1)
		WHERE passport_version_id = $1`, hostile.Version.PassportVersionID)
	l = atPhoneWidth(t, ctx, srv.URL+versionURL(hostile.Version.PassportVersionID), "failed")
	require.True(t, strings.HasPrefix(l.Text, "NOT VERIFIED"), l.Text)
	require.Contains(t, l.Text, "FAIL")
}

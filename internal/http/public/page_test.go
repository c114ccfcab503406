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

// atPhoneWidth loads url in the browser emulating a 360 px wide phone and
// requires that the page does not scroll sideways: everything, hashes and
// long check details included, fits the width. It returns the layout, the
// page's text among it.
func atPhoneWidth(t *testing.T, ctx context.Context, url, name string) browser.Layout {
	t.Helper()
	browser.Do(t, ctx, browser.Phone(), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("footer")))
	browser.Screenshot(t, ctx, name+".png")
	l := browser.RequireNoSidewaysScroll(t, ctx, name)
	require.Equal(t, browser.PhoneWidth, l.ClientWidth, "%s: the viewport is a phone's", name)
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
	require.True(t, strings.HasPrefix(l.Text, "Issued by "), "the issuer comes first: %s", l.Text)
	require.Contains(t, l.Text, "\nVERIFIED\n")
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
	require.True(t, strings.HasPrefix(l.Text, "Issued by "), "the issuer comes first: %s", l.Text)
	require.Contains(t, l.Text, "\nNOT VERIFIED\n")
	require.Contains(t, l.Text, "FAIL")
}

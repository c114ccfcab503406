package e2e

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/browser"
)

// checkPublicPage opens the public page of a passport in headless Chromium,
// as whoever scans its QR code would: it must say VERIFIED, name the
// demo's product and fit a 360 px phone. The same QR text with one hash
// character changed, on the service's verify page, must say NOT VERIFIED.
// Screenshots are kept in the test's temp dir.
func checkPublicPage(t *testing.T, base, pageURL, qrPayload string) {
	t.Helper()
	ctx := browser.New(t)
	browser.Do(t, ctx, chromedp.Navigate(pageURL))
	verdict := browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
	require.True(t, strings.HasPrefix(verdict, "VERIFIED"), verdict)
	require.Equal(t, "NMC811 75 kWh EV battery pack (demo)", browser.Value(t, ctx, chromedp.Text(chromedp.ID("product"))))
	issuer := browser.Value(t, ctx, chromedp.Text(chromedp.ID("issuer")))
	require.True(t, strings.HasPrefix(issuer, "Issued by Voltaris Battery Systems GmbH, DE, DE123456789012345"), issuer)
	browser.Screenshot(t, ctx, "public-page.png")

	// On the narrowest phone the page is made for, nothing scrolls
	// sideways, and the figures read with their units.
	browser.Do(t, ctx, browser.Phone(), chromedp.Navigate(pageURL))
	phone := browser.RequireNoSidewaysScroll(t, ctx, "the public page at 360 px")
	require.Equal(t, browser.PhoneWidth, phone.ClientWidth)
	require.Contains(t, phone.Text, "452 kg")
	require.Contains(t, phone.Text, "75 kWh")
	browser.Screenshot(t, ctx, "public-page-phone.png")

	if strings.HasPrefix(qrPayload, "http") {
		// The QR code is a link: what a phone camera opens.
		browser.Do(t, ctx, chromedp.Navigate(qrPayload))
		verdict = browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
		require.True(t, strings.HasPrefix(verdict, "VERIFIED"), verdict)
		require.Equal(t, "The code on this battery matches the signed passport.", browser.Value(t, ctx, chromedp.Text(chromedp.ID("qr-match"))))
	}

	// "rh=" in either format: |rh= of BPC-QR-1, &rh= of a link.
	i := strings.Index(qrPayload, "rh=") + 3
	swap := "A"
	if qrPayload[i] == 'A' {
		swap = "B"
	}
	tampered := qrPayload[:i] + swap + qrPayload[i+1:]
	browser.Do(t, ctx, chromedp.Navigate(base+"/public/v1/verify?qr="+url.QueryEscape(tampered)))
	verdict = browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
	require.True(t, strings.HasPrefix(verdict, "NOT VERIFIED"), verdict)
	browser.Screenshot(t, ctx, "tampered-qr.png")
}

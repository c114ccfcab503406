// Package browser runs headless Chromium for tests, driven with chromedp:
// the pages a person sees are loaded, read and photographed as a browser
// renders them. The browser is Debian's chromium (scripts/deps.sh installs
// it for `make test`); a test that needs it fails when it is missing.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path returns the Chromium executable: BPC_CHROMIUM when set, else the
// first of chromium, chromium-browser and google-chrome on PATH.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BPC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found (install Debian's chromium: bash scripts/deps.sh, or set BPC_CHROMIUM)")
	return ""
}

// New starts a headless Chromium for the test, with a profile of its own
// and no network of its own (no sync, updates or background requests), and
// returns a context its actions run in. The browser exits when the test ends.
func New(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.NoSandbox, // as root in CI; the pages are our own
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(412, 915), // a phone's viewport: the page is for one
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so that a missing library fails here. The
	// first action's context owns the browser: it takes no timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// Do runs steps in the browser with a timeout, failing the test on error.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	Value(t, ctx, chromedp.Steps(steps...))
}

// Value runs an action that yields a value (the text of an element, say)
// with a timeout, failing the test on error.
func Value[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// Screenshot saves a full-page PNG (quality 100 is PNG) of the current page
// as name under the test's temp dir and returns its path. With
// BPC_SCREENSHOT_DIR set, a copy is kept there to look at after the test.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png := Value(t, ctx, chromedp.FullScreenshot(100))
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("BPC_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, t.Name()+"-"+name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot: %s", path)
	return path
}

// PhoneWidth is the narrowest phone the pages are made for (SPEC §16 "For
// people"), in CSS pixels.
const PhoneWidth = 360

// Phone makes the browser a phone PhoneWidth CSS pixels wide: mobile
// emulation (the page's viewport meta tag applies), at twice the pixel
// density. It holds for the pages loaded after it.
func Phone() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(PhoneWidth, 780, chromedp.EmulateMobile, chromedp.EmulateScale(2))
}

// Layout is what the current page measures of itself.
type Layout struct {
	// ScrollWidth and ClientWidth are the document element's: wider
	// content than the viewport scrolls sideways.
	ScrollWidth int `json:"scrollWidth"`
	ClientWidth int `json:"clientWidth"`
	// Text is the page's text as rendered (document.body.innerText).
	Text string `json:"text"`
	// Overflowing names the first elements whose right edge is beyond the
	// viewport, with their width and text, to say what is too wide.
	Overflowing []string `json:"overflowing"`
}

const measure = `(() => {
	const d = document.documentElement, vw = d.clientWidth, wide = [];
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.right > vw + 0.5 && wide.length < 8) wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.width) + 'px: ' + (el.textContent || '').trim().slice(0, 60));
	}
	return {scrollWidth: d.scrollWidth, clientWidth: vw, text: document.body.innerText, overflowing: wide};
})()`

// Measure returns the current page's Layout.
func Measure(t testing.TB, ctx context.Context) Layout {
	t.Helper()
	return Value(t, ctx, chromedp.Evaluate[Layout](measure))
}

// RequireNoSidewaysScroll fails the test when the current page is wider
// than the viewport (document.documentElement.scrollWidth > clientWidth),
// naming what overflows, and returns the page's Layout.
func RequireNoSidewaysScroll(t testing.TB, ctx context.Context, name string) Layout {
	t.Helper()
	l := Measure(t, ctx)
	if l.ScrollWidth > l.ClientWidth {
		t.Fatalf("%s scrolls sideways: scrollWidth %d > clientWidth %d; beyond the right edge: %q", name, l.ScrollWidth, l.ClientWidth, l.Overflowing)
	}
	return l
}

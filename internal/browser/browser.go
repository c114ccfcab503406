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

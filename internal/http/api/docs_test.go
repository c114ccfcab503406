package api

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/browser"
)

var scriptTag = regexp.MustCompile(`<script([^>]*)>([^<]*)</script>`)

// The page is a shell: no inline script (script-src 'self' holds without
// 'unsafe-inline' or a hash), and every file it names is under /v1/docs/,
// served as JavaScript with a year's caching, gzipped for clients that take
// it. The bundle is the file the update script pinned (its sha256 is in
// VERSION); an unknown file name is the 404 envelope.
func TestDocsPageServesItsOwnFiles(t *testing.T) {
	t.Parallel()
	// Not checked against the document (checked): the page and its files
	// are outside it.
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	h := s.Handler()
	rec := serve(h, http.MethodGet, DocsPath, "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	csp := parseCSP(rec.Header().Get("Content-Security-Policy"))
	require.Equal(t, []string{"'none'"}, csp["default-src"])
	require.Equal(t, []string{"'self'"}, csp["script-src"], "no inline or eval'd script")
	require.Equal(t, []string{"'self'"}, csp["connect-src"], "the document only")
	require.Equal(t, []string{"'none'"}, csp["frame-ancestors"])
	for directive, sources := range csp {
		for _, src := range sources {
			require.NotRegexp(t, `^(https?:|\*)|unsafe-eval`, src, "%s may load from elsewhere", directive)
		}
	}
	body := rec.Body.String()
	require.NotRegexp(t, `(src|href)="(https?:)?//`, body, "the page names no other origin")
	require.Contains(t, body, `data-spec-url="`+SpecPath+`"`)

	scripts := scriptTag.FindAllStringSubmatch(body, -1)
	require.Len(t, scripts, 2, "the bundle and the bootstrap")
	sum := sha256.Sum256(mustReadEmbedded(t, "redoc.standalone.js"))
	require.Contains(t, string(mustReadEmbedded(t, "VERSION")), hex.EncodeToString(sum[:]), "VERSION names the bundle's sha256")
	for i, s := range scripts {
		require.Empty(t, strings.TrimSpace(s[2]), "inline script")
		src := regexp.MustCompile(`src="([^"]+)"`).FindStringSubmatch(s[1])
		require.NotNil(t, src, s[0])
		require.True(t, strings.HasPrefix(src[1], DocsPath+"/"), src[1])

		rec := serve(h, http.MethodGet, src[1], "", false)
		require.Equal(t, http.StatusOK, rec.Code, src[1])
		require.Equal(t, "text/javascript; charset=utf-8", rec.Header().Get("Content-Type"))
		require.Equal(t, "public, max-age=31536000, immutable", rec.Header().Get("Cache-Control"))
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		if i == 0 {
			require.Equal(t, sum[:], sha256Of(rec.Body.Bytes()), "the bundle as pinned")
		}

		r := httptest.NewRequest(http.MethodGet, src[1], nil)
		r.Header.Set("Accept-Encoding", "gzip, deflate")
		zrec := httptest.NewRecorder()
		h.ServeHTTP(zrec, r)
		require.Equal(t, "gzip", zrec.Header().Get("Content-Encoding"))
		require.Less(t, zrec.Body.Len(), rec.Body.Len())
		zr, err := gzip.NewReader(zrec.Body)
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, rec.Body.Bytes(), plain)
	}

	for _, name := range []string{"redoc.standalone.js", "nope.js", "bootstrap.js"} {
		rec := serve(h, http.MethodGet, DocsPath+"/"+name, "", false)
		require.Equal(t, http.StatusNotFound, rec.Code, name)
		require.Equal(t, "NOT_FOUND", readEnvelope(t, rec).Error.Code)
	}
}

func parseCSP(header string) map[string][]string {
	out := map[string][]string{}
	for _, d := range strings.Split(header, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			out[f[0]] = f[1:]
		}
	}
	return out
}

func mustReadEmbedded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := redocFiles.ReadFile("redoc/" + name)
	require.NoError(t, err)
	return b
}

func sha256Of(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}

// docsTags are the tags of the served document: its tags list and those
// its operations use.
func docsTags(t *testing.T, raw []byte) []string {
	t.Helper()
	var doc struct {
		Tags  []struct{ Name string } `json:"tags"`
		Paths map[string]map[string]struct {
			Tags []string `json:"tags"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var tags []string
	for _, tag := range doc.Tags {
		tags = append(tags, tag.Name)
	}
	for _, item := range doc.Paths {
		for _, op := range item {
			for _, tag := range op.Tags {
				if !slices.Contains(tags, tag) {
					tags = append(tags, tag)
				}
			}
		}
	}
	return tags
}

// Headless Chromium opens /v1/docs as a reader would: Redoc draws the
// document, operations grouped under the document's tags in the menu, the
// page titled after the document; the browser reports no CSP violation and
// no script error, and every request it made went to the test server (or
// stayed inside the page: data: and blob: URLs).
func TestDocsPageRendersInTheBrowser(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	_, raw := fetchDoc(t, s.Handler())
	tags := docsTags(t, raw)
	examples, err := Examples()
	require.NoError(t, err)
	var tenant struct{ Slug string }
	require.NoError(t, json.Unmarshal(examples["create-tenant"].ResponseBody, &tenant))
	require.NotEmpty(t, tenant.Slug)

	ctx := browser.New(t)
	var (
		mu       sync.Mutex
		requests []string
		problems []string
	)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Source == log.EntrySourceSecurity {
				problems = append(problems, "log: "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		}
	}))
	// A listener installed before the page's scripts sees every violation
	// of the page's CSP, whatever the console makes of it.
	const cspListener = `window.__csp = []; document.addEventListener("securitypolicyviolation",
		function (e) { window.__csp.push(e.violatedDirective + " " + e.blockedURI); });`
	// A generous bound (Redoc lays out some 60 operations and their
	// samples; the machine may be busy): it only says the page did not hang.
	loadCtx, cancelLoad := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelLoad()
	require.NoError(t, chromedp.Do(loadCtx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: cspListener})
			return err
		}),
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+DocsPath),
		// Redoc has drawn when the operations' sections are there.
		chromedp.WaitVisible(`[data-section-id*="operation/"]`),
	), "loading %s", DocsPath)
	title := browser.Value(t, ctx, chromedp.Title())
	require.Equal(t, "BPC admin API reference", title)

	// The recorded examples are what the samples panel shows.
	text := browser.Value(t, ctx, chromedp.Evaluate[string](`document.body.textContent`))
	require.True(t, strings.Contains(text, `"`+tenant.Slug+`"`), "the page does not show the recorded create-tenant response (slug %s)", tenant.Slug)

	// The menu's top level: one item per tag (an operation's item is
	// "tag/<tag>/operation/<id>").
	menu := browser.Value(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.menu-content li[data-item-id^="tag/"]'))
		.filter(function (li) { return li.getAttribute("data-item-id").indexOf("/operation/") < 0; })
		.map(function (li) { return li.querySelector("label").textContent.trim(); })`))
	require.ElementsMatch(t, tags, menu, "the menu's groups are the document's tags")
	require.GreaterOrEqual(t, len(tags), 2, "the document's operations carry tags, so the reference groups them")
	sections := browser.Value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-section-id*="operation/"]').length`))
	require.Positive(t, sections)
	viewportScreenshot(t, ctx, "docs.png")

	violations := browser.Value(t, ctx, chromedp.Evaluate[[]string](`window.__csp`))
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, violations, "CSP violations")
	require.Empty(t, problems, "console errors")
	origin, err := url.Parse(srv.URL)
	require.NoError(t, err)
	require.NotEmpty(t, requests)
	for _, u := range requests {
		p, err := url.Parse(u)
		require.NoError(t, err, u)
		if p.Scheme == "data" || p.Scheme == "blob" {
			continue
		}
		require.Equal(t, origin.Host, p.Host, "a request to another origin: %s", u)
	}
	require.Contains(t, requests, srv.URL+SpecPath, "Redoc loaded the document")
}

// viewportScreenshot saves what the window shows as name in the test's temp
// dir, and in BPC_SCREENSHOT_DIR when set (browser.Screenshot photographs
// the whole page, which Redoc makes tens of thousands of pixels tall).
func viewportScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := browser.Value(t, ctx, chromedp.CaptureScreenshot())
	dirs := []string{t.TempDir()}
	if dir := os.Getenv("BPC_SCREENSHOT_DIR"); dir != "" {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, t.Name()+"-"+name), png, 0o644))
	}
}

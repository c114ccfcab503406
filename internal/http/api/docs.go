package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// The reference page at /v1/docs is Redoc (github.com/Redocly/redoc, MIT)
// rendering /v1/openapi.json in the browser: operations grouped by tag,
// schemas, and the request and response examples the document carries
// (examples.go). Redoc's standalone bundle is embedded in the binary; the
// page loads it, a small bootstrap and the document from this service and
// nothing from anywhere else.
//
// Why Redoc among the renderers on the npm registry (sizes of their
// standalone files, late 2026): Redoc 2's bundle is one self-contained file
// of 1.1 MB; Scalar's is 3.6 MB and carries its fonts' CDN
// (fonts.scalar.com) and a request proxy of its own; Stoplight Elements is a
// 2.1 MB script plus a 0.3 MB stylesheet. Redoc makes no request of its own
// but the document's URL it is given (no fonts, no telemetry, no "try it"
// proxy) once its attribution logo is patched out (see the update script),
// so connect-src 'self' holds; and it needs little of the CSP: styles it
// injects at run time (styled-components: style-src 'unsafe-inline') and a
// search index built in a Web Worker started from a blob: URL (worker-src
// blob:). No inline script: the bootstrap is a file of its own, so
// script-src is 'self' only. Version 2 rather than 3: 3.x's standalone
// file is twice the size and reports telemetry unless told not to.
//
// scripts/update-docs-renderer.sh downloads the pinned version with npm,
// checks its sha512 against the pinned integrity and the registry's, and
// writes redoc/ (the bundle, its licenses, VERSION).

// redocFiles is the bundle and its notes, as the update script wrote them.
//
//go:embed redoc/redoc.standalone.js redoc/LICENSE redoc/redoc.standalone.js.LICENSE.txt redoc/VERSION
var redocFiles embed.FS

// docsBootstrap starts Redoc on the page (docsTmpl): the document's URL is
// the page's data-spec-url, so the script needs no inline configuration.
const docsBootstrap = `"use strict";
(function () {
  var el = document.getElementById("redoc");
  Redoc.init(el.getAttribute("data-spec-url"), {
    expandResponses: "200,201,202",
    jsonSampleExpandLevel: 4,
    pathInMiddlePanel: true,
    requiredPropsFirst: true,
    sortPropsAlphabetically: false,
    hideDownloadButton: false,
    theme: { typography: { fontFamily: "system-ui, sans-serif", headings: { fontFamily: "system-ui, sans-serif" },
      code: { fontFamily: "ui-monospace, monospace" } } }
  }, el);
})();
`

// docsCSP is the page's policy, replacing secureHeaders' default-src
// 'none': what Redoc needs (above) and nothing else. img-src data: is the
// favicon (none: an empty data: URL) and Redoc's inline SVG icons.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsAsset is a file under /v1/docs/: its body, gzipped once, its
// Content-Type.
type docsAsset struct {
	body, gz    []byte
	contentType string
}

// docsAssets maps the file names under /v1/docs/ to their files. Each name
// carries a hash of the content, so a new bundle or bootstrap is a new URL
// and every name can be cached for a year.
type docsAssets struct {
	byName map[string]docsAsset
	// The names of the bundle, the bootstrap, Redoc's license and the
	// bundled libraries' notices; version is Redoc's ("redoc 2.5.4").
	redoc, boot, license, notices string
	version                       string
}

var docsFiles = newDocsAssets()

func newDocsAssets() *docsAssets {
	read := func(name string) []byte {
		b, err := redocFiles.ReadFile("redoc/" + name)
		if err != nil {
			panic(fmt.Sprintf("docs: the embedded %s is missing: %v", name, err))
		}
		return b
	}
	a := &docsAssets{byName: map[string]docsAsset{}}
	const js = "text/javascript; charset=utf-8"
	const text = "text/plain; charset=utf-8"
	a.redoc = a.add("redoc.standalone", ".js", read("redoc.standalone.js"), js)
	a.boot = a.add("bootstrap", ".js", []byte(docsBootstrap), js)
	a.license = a.add("redoc-LICENSE", ".txt", read("LICENSE"), text)
	a.notices = a.add("redoc.standalone.js.LICENSE", ".txt", read("redoc.standalone.js.LICENSE.txt"), text)
	a.version = strings.TrimSpace(strings.SplitN(string(read("VERSION")), "\n", 2)[0])
	return a
}

// add registers body under stem.<hash>ext and returns that name.
func (a *docsAssets) add(stem, ext string, body []byte, contentType string) string {
	sum := sha256.Sum256(body)
	name := stem + "." + hex.EncodeToString(sum[:6]) + ext
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	a.byName[name] = docsAsset{body: body, gz: gz.Bytes(), contentType: contentType}
	return name
}

// mountDocs routes the reference page and its files (public, like the
// document).
func (s *Server) mountDocs(r chi.Router, sp *spec) {
	r.Get(DocsPath, sp.serveHTML)
	r.Get(DocsPath+"/{file}", s.serveDocsAsset)
}

// serveDocsAsset serves a file of the page, gzipped when the client takes
// it; an unknown name is the 404 envelope.
func (s *Server) serveDocsAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := docsFiles.byName[chi.URLParam(r, "file")]
	if !ok {
		s.writeError(w, r, errNotFoundRoute(r))
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable") // the name changes with the content
	h.Set("Vary", "Accept-Encoding")
	body := a.body
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

var docsTmpl = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} reference</title>
<link rel="icon" href="data:,">
</head><body>
<noscript><p>This reference is drawn by JavaScript (Redoc). The OpenAPI document itself is
<a href="{{.Spec}}">{{.Spec}}</a>.</p></noscript>
<div id="redoc" data-spec-url="{{.Spec}}"></div>
<script src="{{.Redoc}}"></script>
<script src="{{.Boot}}"></script>
<!-- {{.Version}}: {{.License}}, {{.Notices}} -->
</body></html>
`))

// renderDocs renders the reference page of doc: its title, and the files
// that draw it.
func renderDocs(doc *huma.OpenAPI) []byte {
	var buf bytes.Buffer
	base := DocsPath + "/"
	if err := docsTmpl.Execute(&buf, map[string]string{
		"Title": doc.Info.Title, "Spec": SpecPath,
		"Redoc": base + docsFiles.redoc, "Boot": base + docsFiles.boot,
		"Version": docsFiles.version, "License": base + docsFiles.license, "Notices": base + docsFiles.notices,
	}); err != nil {
		panic(fmt.Sprintf("error rendering the API reference page: %v", err))
	}
	return buf.Bytes()
}

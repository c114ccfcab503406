package public

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2/negotiation"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// Paths of the public routes.
const (
	PassportVersionPath = "/public/v1/passport-versions/{id}"
	VerifyPath          = "/public/v1/verify"
	// LinkPath is where a BPC-QR-2 link leads: <base>/p/{id}?ph=&pr=&rh=.
	LinkPath = "/p/{id}"
)

// maxQRChars bounds the qr parameter: a BPC-QR-1 payload is 212 bytes, a
// BPC-QR-2 link at most core/qr.MaxLinkLen.
const maxQRChars = 1024

// CacheControl is how a public answer may be cached, for a shared cache
// (a CDN) holding it cdnMaxAge. The bytes of a public version never change,
// but its verdict can, at any time: its signing key revoked, its issuer's
// verification granted or cleared (SPEC §16), its status ACTIVE →
// SUPERSEDED. So a browser must revalidate on every use (max-age=0; the
// ETag is over the answer, and an unchanged one costs a 304 without the
// body, answered from this service's own cache), while a CDN may answer
// for cdnMaxAge (s-maxage) without asking: the service's answers to a
// fleet of scans then cost one request per page and CDN node per
// cdnMaxAge, and a revocation reaches a page a CDN holds within
// cdnMaxAge. Zero: no shared cache holds it either ("public, no-cache").
func CacheControl(cdnMaxAge time.Duration) string {
	if cdnMaxAge <= 0 {
		return "public, no-cache"
	}
	return "public, max-age=0, s-maxage=" + strconv.Itoa(int(cdnMaxAge/time.Second))
}

// pageCSP lets a page use its own inline styles and nothing else: no
// script, image, frame or outside resource; its form submits to this site.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Handler serves the public routes: JSON to clients, a page to browsers
// (Accept: text/html).
type Handler struct {
	Store *store.Queries
	// WriteError answers an error to a JSON client (the API's envelope).
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	Logger     *slog.Logger
	// Checks remembers verifications (nil: each request verifies afresh).
	Checks *Checks
	// Answers caches the finished answers (nil: each request reads the
	// version and renders its answer).
	Answers *Answers
	// CDNMaxAge is how long a shared cache may hold an answer without
	// asking again (CacheControl; BPC_PUBLIC_CDN_MAX_AGE_S).
	CDNMaxAge time.Duration
	// PublicBaseURL is the base of the links this service's QR codes
	// carry (BPC_PUBLIC_BASE_URL, or the listen address when that is left
	// to the system; a func because port 0 is known only once listening).
	// A scanned link must lead here, or to its version's stored base. Nil
	// or empty: only the stored base.
	PublicBaseURL func() string
}

// publicBase is h.PublicBaseURL's value, "" without one.
func (h *Handler) publicBase() string {
	if h.PublicBaseURL == nil {
		return ""
	}
	return h.PublicBaseURL()
}

// PassportVersion serves GET /public/v1/passport-versions/{id}.
func (h *Handler) PassportVersion(w http.ResponseWriter, r *http.Request) {
	e, ok := h.entry(w, r)
	if !ok {
		return
	}
	h.versionAnswer(w, r, e)
}

// entry is the version the path's id names, or false when the request
// was answered with an error.
func (h *Handler) entry(w http.ResponseWriter, r *http.Request) (*entry, bool) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, r, errcode.New(errcode.NotFound, "no public passport version %q", chi.URLParam(r, "id")), "")
		return nil, false
	}
	e, err := h.Answers.version(r.Context(), h.Store, h.Checks, id)
	if err != nil {
		h.fail(w, r, err, "")
		return nil, false
	}
	return e, true
}

// versionAnswer answers the version e with its own verification.
func (h *Handler) versionAnswer(w http.ResponseWriter, r *http.Request, e *entry) {
	h.cached(w, r, e, "version", true, func() (any, func() page) {
		return e.version, func() page { return versionPage(e.version, nil) }
	})
}

// Verify serves GET /public/v1/verify?qr=.
func (h *Handler) Verify(w http.ResponseWriter, r *http.Request) {
	scanned := r.URL.Query().Get("qr")
	if scanned == "" && wantsHTML(r) {
		// A person who opens the page, or sends the form empty, gets the
		// form to type or paste a code into: nothing was checked, so
		// there is no verdict. A program asking for JSON still gets 422.
		h.answer(w, r, nil, func() page { return page{Title: "Check a battery passport QR code"} })
		return
	}
	if len(scanned) > maxQRChars {
		h.fail(w, r, errcode.Invalid("qr", "must be at most %d characters", maxQRChars), "")
		return
	}
	f, id, err := parseQR(scanned)
	if err != nil {
		h.fail(w, r, err, scanned)
		return
	}
	e, err := h.Answers.version(r.Context(), h.Store, h.Checks, id)
	if err != nil {
		h.fail(w, r, err, scanned)
		return
	}
	foreign := linkHost(f, deref(e.row.QRPayload), h.publicBase())
	// The version's own code has a few spellings (BPC-QR-1, a link under
	// its stored base or the service's): those answers are kept; any other
	// scanned string is answered afresh, never kept.
	key := ""
	if foreign == "" && e.printedMatch(f.PayloadHash, f.ProofRootHash, f.ReceiptHash) {
		key = "verify " + scanned
	}
	h.cached(w, r, e, key, true, func() (any, func() page) {
		c := compareWith(e.row, e.stored, f, foreign)
		return c, func() page {
			p := versionPage(c.Version, &c)
			p.QRInput = scanned
			return p
		}
	})
}

// Link serves GET /p/{id}, where a BPC-QR-2 link leads: for a browser,
// the version's page, and with the link's ph, pr and rh, whether the code
// on the battery matches the signed passport. A link whose hashes are
// missing or malformed is damaged: 400 with the page saying so (422
// naming the parameter for JSON). A JSON client gets the QRVerification
// and must send the three hashes.
func (h *Handler) Link(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, r, errcode.New(errcode.NotFound, "no public passport version %q", chi.URLParam(r, "id")), "")
		return
	}
	query := r.URL.Query()
	if !HasPrinted(query) && wantsHTML(r) {
		e, ok := h.entry(w, r)
		if ok {
			h.versionAnswer(w, r, e)
		}
		return
	}
	printed, damage := ParsePrinted(query)
	if damage != nil {
		h.damaged(w, r, id, damage)
		return
	}
	e, err := h.Answers.version(r.Context(), h.Store, h.Checks, id)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	f, err := linkFields(e.row, printed)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	// The genuine link is what a fleet of scans sends: kept. A link with
	// other hashes is answered afresh from the cached version.
	key := ""
	if e.printedMatch(printed.PayloadHash, printed.ProofRootHash, printed.ReceiptHash) {
		key = "link"
	}
	h.cached(w, r, e, key, true, func() (any, func() page) {
		c := compareWith(e.row, e.stored, f, "")
		return c, func() page {
			p := versionPage(c.Version, &c)
			p.Link = true
			return p
		}
	})
}

// printedMatch reports whether a code's hashes are the version's own.
func (e *entry) printedMatch(payloadHash, proofRootHash, receiptHash string) bool {
	return payloadHash == e.row.PayloadHash && proofRootHash == e.row.ProofRootHash && receiptHash == e.row.ReceiptHash
}

// damaged answers a link whose hashes are missing or malformed: the
// version's page saying the link is damaged, 400 and not cached (a JSON
// client: the error, 422). An id that is not public is 404 all the same.
func (h *Handler) damaged(w http.ResponseWriter, r *http.Request, id uuid.UUID, damage error) {
	e, err := h.Answers.version(r.Context(), h.Store, h.Checks, id)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	if !wantsHTML(r) {
		h.fail(w, r, damage, "")
		return
	}
	p := versionPage(e.version, nil)
	p.Link, p.Damaged = true, qrProblem(damage)
	if de := errcode.As(damage); de != nil {
		p.Damaged = de.Field + " " + p.Damaged
	}
	body, err := render(p)
	if err != nil {
		h.fail(w, r, errcode.Wrap(errcode.Internal, err, "error rendering the answer"), "")
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("Vary", "Accept")
	hd.Set("Content-Security-Policy", pageCSP)
	hd.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// wantsHTML reports whether the client prefers the page to JSON; a client
// that names neither (or */*) gets JSON.
func wantsHTML(r *http.Request) bool {
	return negotiation.SelectQValueFast(r.Header.Get("Accept"), []string{"application/json", "text/html"}) == "text/html"
}

// cached answers from e: its answer under name and the representation
// the client prefers (a page when withPage), built from what build returns
// when not cached yet. An empty name is an answer not to keep.
func (h *Handler) cached(w http.ResponseWriter, r *http.Request, e *entry, name string, withPage bool, build func() (any, func() page)) {
	html := withPage && wantsHTML(r)
	key := ""
	switch {
	case name == "":
	case html:
		key = name + " html"
	default:
		key = name + " json"
	}
	an, err := h.Answers.answer(e, key, func() (*answer, error) {
		v, p := build()
		if !html {
			p = nil
		}
		return buildAnswer(v, p)
	})
	if err != nil {
		h.fail(w, r, errcode.Wrap(errcode.Internal, err, "error rendering the answer"), "")
		return
	}
	h.write(w, r, an)
}

// answer writes v as JSON, or the page of a browser, with an ETag over the
// bytes: a client that has them gets 304. A nil p answers JSON only.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, v any, p func() page) {
	if p != nil && !wantsHTML(r) {
		p = nil
	}
	an, err := buildAnswer(v, p)
	if err != nil {
		h.fail(w, r, errcode.Wrap(errcode.Internal, err, "error rendering the answer"), "")
		return
	}
	h.write(w, r, an)
}

// buildAnswer renders the page p, or v as JSON when p is nil, with its ETag.
func buildAnswer(v any, p func() page) (*answer, error) {
	an := &answer{contentType: "application/json"}
	var err error
	if p != nil {
		an.contentType = "text/html; charset=utf-8"
		an.body, err = render(p())
	} else {
		an.body, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(an.body)
	an.etag = `"` + hex.EncodeToString(sum[:16]) + `"`
	return an, nil
}

// write sends an, or 304 to a client whose If-None-Match names its ETag.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, an *answer) {
	hd := w.Header()
	hd.Set("Cache-Control", CacheControl(h.CDNMaxAge))
	hd.Set("Vary", "Accept")
	hd.Set("ETag", an.etag)
	if an.contentType != "application/json" {
		hd.Set("Content-Security-Policy", pageCSP)
	}
	if etagMatches(r.Header.Get("If-None-Match"), an.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", an.contentType)
	hd.Set("Content-Length", strconv.Itoa(len(an.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(an.body)
}

// etagMatches reports whether an If-None-Match header names etag: one of
// its comma-separated tags, weak or strong (RFC 9110 compares them weakly
// for GET), or *.
func etagMatches(header, etag string) bool {
	for header != "" {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// failJSON answers err in the API's JSON envelope, whatever the client
// accepts: for the routes that have no page. Errors are not cached.
func (h *Handler) failJSON(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	h.WriteError(w, r, err)
}

// fail answers err: the API's JSON envelope, or a page that says what is
// wrong in words. Errors are not cached.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error, scanned string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Accept")
	if !wantsHTML(r) {
		h.WriteError(w, r, err)
		return
	}
	status, problem := http.StatusInternalServerError, "The service could not check this passport just now. Try again later."
	switch errcode.CodeOf(err) {
	case errcode.NotFound:
		status, problem = http.StatusNotFound, "This service has no published passport with this id."
	case errcode.Validation:
		status, problem = http.StatusUnprocessableEntity, "This is not the text of a battery passport QR code (a link …/p/… or BPC1|pv=…)."
	case errcode.DBUnavailable:
		status = http.StatusServiceUnavailable
	}
	if status >= 500 && h.Logger != nil && !errors.Is(err, r.Context().Err()) {
		h.Logger.ErrorContext(r.Context(), "public verification failed", slog.String("error", err.Error()))
	}
	body, rerr := render(page{Title: "Battery passport", Problem: problem, QRInput: scanned})
	if rerr != nil {
		h.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

package public

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

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

// CacheControl is how a public answer may be cached. The bytes of a public
// version never change, but its verdict can, at any time: its signing key
// revoked, its issuer's verification granted or cleared (SPEC §16), its
// status ACTIVE → SUPERSEDED. So a cache (a CDN, a browser) may keep an
// answer but must revalidate it on every use: the ETag is over the answer,
// and an unchanged one costs a 304 without the body. A longer lifetime
// would keep a green VERIFIED on screens after the key was revoked.
const CacheControl = "public, no-cache"

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
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, r, errcode.New(errcode.NotFound, "no public passport version %q", chi.URLParam(r, "id")), "")
		return
	}
	v, err := h.Checks.Lookup(r.Context(), h.Store, id)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	h.answer(w, r, v, func() page { return versionPage(v, nil) })
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
	c, err := h.Checks.CheckQR(r.Context(), h.Store, scanned, h.publicBase())
	if err != nil {
		h.fail(w, r, err, scanned)
		return
	}
	h.answer(w, r, c, func() page {
		p := versionPage(c.Version, &c)
		p.QRInput = scanned
		return p
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
		v, err := h.Checks.Lookup(r.Context(), h.Store, id)
		if err != nil {
			h.fail(w, r, err, "")
			return
		}
		h.answer(w, r, v, func() page { return versionPage(v, nil) })
		return
	}
	printed, damage := ParsePrinted(query)
	if damage != nil {
		h.damaged(w, r, id, damage)
		return
	}
	c, err := h.Checks.CheckLink(r.Context(), h.Store, id, printed)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	h.answer(w, r, c, func() page {
		p := versionPage(c.Version, &c)
		p.Link = true
		return p
	})
}

// damaged answers a link whose hashes are missing or malformed: the
// version's page saying the link is damaged, 400 and not cached (a JSON
// client: the error, 422). An id that is not public is 404 all the same.
func (h *Handler) damaged(w http.ResponseWriter, r *http.Request, id uuid.UUID, damage error) {
	v, err := h.Checks.Lookup(r.Context(), h.Store, id)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	if !wantsHTML(r) {
		h.fail(w, r, damage, "")
		return
	}
	p := versionPage(v, nil)
	p.Link, p.Damaged = true, qrProblem(damage)
	if e := errcode.As(damage); e != nil {
		p.Damaged = e.Field + " " + p.Damaged
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

// answer writes v as JSON, or the page of a browser, with an ETag over the
// bytes: a client that has them gets 304. A nil p answers JSON only.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, v any, p func() page) {
	var body []byte
	var err error
	contentType := "application/json"
	if p != nil && wantsHTML(r) {
		contentType = "text/html; charset=utf-8"
		body, err = render(p())
	} else {
		body, err = json.Marshal(v)
	}
	if err != nil {
		h.fail(w, r, errcode.Wrap(errcode.Internal, err, "error rendering the answer"), "")
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hd := w.Header()
	hd.Set("Cache-Control", CacheControl)
	hd.Set("Vary", "Accept")
	hd.Set("ETag", etag)
	if contentType != "application/json" {
		hd.Set("Content-Security-Policy", pageCSP)
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
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

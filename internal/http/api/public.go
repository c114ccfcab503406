package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/http/public"
)

// publicChecks is how many verifications the public routes remember (each
// a few KB): far more passports than are scanned in any one minute.
const publicChecks = 4096

// publicRoutes serves public verification (package public) without
// credentials, rate-limited per client address, and documents its JSON.
func (s *Server) publicRoutes(r chi.Router, doc *huma.OpenAPI) {
	h := &public.Handler{Store: s.reads(), WriteError: s.writeError, Logger: s.Logger, Checks: public.NewChecks(publicChecks),
		Answers: s.PublicAnswers, CDNMaxAge: s.PublicCDNMaxAge, PublicBaseURL: s.PublicBaseURL}
	r.Group(func(g chi.Router) {
		g.Use(s.limitAddress, canonicalQuery)
		rs := routes{r: g, doc: doc, public: true}
		rs.handle(http.MethodGet, public.PassportVersionPath, "public-passport-version",
			"A published passport version and whether its stored bytes verify", h.PassportVersion,
			describe("No credentials. ACTIVE and SUPERSEDED versions only (others are 404). "+
				"verification is computed from the stored payload, proof, signed receipt and QR code (and remembered for the same bytes), "+
				"against the public key the service registered under the receipt's key id. "+
				"With Accept: text/html the answer is a page for a person who scanned the QR code. "+
				publicCaching),
			pathParam("id", "The passport version id (the QR code's pv)."),
			respondsOrPage[public.VerifiedVersion]("The version, its product and its verification"),
			notModified)
		rs.handle(http.MethodGet, public.VerifyPath, "public-verify-qr",
			"Check a scanned QR code against the passport version it names", h.Verify,
			describe("No credentials. qr is a BPC-QR-1 string or a BPC-QR-2 link (URL-encoded). "+
				"qr_matches: the QR's ph, pr and rh are the stored hashes and, for a link, link_base_ok: its base is this service's "+
				"BPC_PUBLIC_BASE_URL or the base of the version's own QR link (a link to another site copying the hashes: "+
				"link_base_ok false, the qr payload check names the host). A tampered QR gives "+
				"qr_matches false and verified false. The version's stored bytes are verified once and remembered; "+
				"a scanned code is compared with them as text. Neither format: 422 naming qr; an unknown or unpublished version: 404. "+
				"With Accept: text/html the answer is a page; without qr (or with it empty), the page is the empty form to paste a code into, "+
				"and a JSON client gets 422 naming qr."),
			queryParam("qr", "The QR code's text: https://…/p/<id>?ph=…&pr=…&rh=… or BPC1|pv=…|ph=…|pr=…|rh=…", false),
			respondsOrPage[public.QRVerification]("Whether the QR matches, and the verification"),
			notModified)
		rs.handle(http.MethodGet, public.IssuerPath, "public-issuer",
			"An issuer's public key directory", h.Issuer,
			describe("No credentials. JSON only. The tenant's issuer profile (null members when it has none) and its own signing keys, "+
				"oldest first, public halves only; the platform's legacy key, which signed passports before tenants had keys of their own, "+
				"is in no tenant's directory. An unknown tenant, the system tenant, or a tenant with neither a profile nor a key: 404. "+
				publicCaching),
			pathParam("tenant_id", "The issuer's tenant id (a version's verification.issuer.tenant_id)."),
			respondsJSON[verify.Directory]("The directory"),
			notModified)
		rs.handle(http.MethodGet, public.LinkPath, "public-link",
			"The page a passport's QR code links to", h.Link,
			describe("No credentials. A BPC-QR-2 link, <BPC_PUBLIC_BASE_URL>/p/{id}?ph=…&pr=…&rh=…. "+
				"With Accept: text/html: the version's page (as public-passport-version's); with ph, pr and rh, it says whether "+
				"the code on the battery matches the signed passport, or names the hashes that differ (200 either way). "+
				"A link with a hash missing, repeated or not in its base32 spelling is damaged: 400 with the page saying so. "+
				"JSON (the QRVerification of public-verify-qr) needs ph, pr and rh: without them, or with a damaged one, 422 naming it. "+
				"An unknown or unpublished version: 404. "+publicCaching),
			pathParam("id", "The passport version id."),
			queryParam("ph", "The payload hash the code printed: base32 of the 32 bytes, upper case, unpadded.", false),
			queryParam("pr", "The proof root the code printed, as ph.", false),
			queryParam("rh", "The receipt hash the code printed, as ph.", false),
			respondsOrPage[public.QRVerification]("Whether the printed hashes match, and the verification"),
			damagedLink,
			notModified)
	})
}

// publicCaching is how every public answer may be cached (public.CacheControl).
const publicCaching = "A browser revalidates by ETag (304) on every use; a shared cache (a CDN) may hold the answer " +
	"for BPC_PUBLIC_CDN_MAX_AGE_S (Cache-Control: public, max-age=0, s-maxage=N; 0: public, no-cache). " +
	"A revocation or an issuer's verification changes the service's own answer at once, and one a CDN holds within N seconds. " +
	"Errors are not cached."

// publicChanged drops the cached public answers of tenantID's versions
// once a change of what they show (a key rotated or revoked, the issuer's
// profile or verification, a version activated) committed: this process's
// next answer shows it; the other processes hear of it by NOTIFY.
func (s *Server) publicChanged(tenantID uuid.UUID, err error) {
	if err == nil {
		s.PublicAnswers.Invalidate(tenantID)
	}
}

// respondsOrPage documents a 200 answered as JSON of type T, or as an HTML
// page to a client that prefers text/html.
func respondsOrPage[T any](desc string) opt {
	return func(reg huma.Registry, o *huma.Operation) {
		responds[T](http.StatusOK, desc)(reg, o)
		o.Responses["200"].Content["text/html"] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString}}
		o.Responses["200"].Headers = map[string]*huma.Header{
			"ETag":          {Schema: &huma.Schema{Type: huma.TypeString}},
			"Cache-Control": {Schema: &huma.Schema{Type: huma.TypeString}},
		}
	}
}

// respondsJSON documents a 200 answered as JSON of type T, cached and
// revalidated by ETag.
func respondsJSON[T any](desc string) opt {
	return func(reg huma.Registry, o *huma.Operation) {
		responds[T](http.StatusOK, desc)(reg, o)
		o.Responses["200"].Headers = map[string]*huma.Header{
			"ETag":          {Schema: &huma.Schema{Type: huma.TypeString}},
			"Cache-Control": {Schema: &huma.Schema{Type: huma.TypeString}},
		}
	}
}

// damagedLink documents the 400 page of a QR link whose hashes are
// damaged.
func damagedLink(reg huma.Registry, o *huma.Operation) {
	r := errorResponse(reg, "A damaged link, to a browser: the version's page saying which hash is missing or malformed "+
		"(a JSON client gets 422 instead).", false)
	r.Content["text/html"] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString}}
	o.Responses["400"] = r
}

// notModified documents the 304 of a request whose If-None-Match is the
// current ETag.
func notModified(_ huma.Registry, o *huma.Operation) {
	o.Responses["304"] = &huma.Response{Description: "Not modified (If-None-Match)"}
}

// pathParam documents a required uuid path parameter of a handle route.
func pathParam(name, desc string) opt {
	return func(_ huma.Registry, o *huma.Operation) {
		o.Parameters = append(o.Parameters, &huma.Param{Name: name, In: "path", Required: true, Description: desc,
			Schema: &huma.Schema{Type: huma.TypeString, Format: "uuid"}})
	}
}

// queryParam documents a string query parameter of a handle route.
func queryParam(name, desc string, required bool) opt {
	return func(_ huma.Registry, o *huma.Operation) {
		o.Parameters = append(o.Parameters, &huma.Param{Name: name, In: "query", Required: required, Description: desc,
			Schema: &huma.Schema{Type: huma.TypeString}})
	}
}

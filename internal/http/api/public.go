package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"

	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/http/public"
)

// publicChecks is how many verifications the public routes remember (each
// a few KB): far more passports than are scanned in any one minute.
const publicChecks = 4096

// publicRoutes serves public verification (package public) without
// credentials, rate-limited per client address, and documents its JSON.
func (s *Server) publicRoutes(r chi.Router, doc *huma.OpenAPI) {
	h := &public.Handler{Store: s.Store, WriteError: s.writeError, Logger: s.Logger, Checks: public.NewChecks(publicChecks)}
	r.Group(func(g chi.Router) {
		g.Use(s.limitAddress, canonicalQuery)
		rs := routes{r: g, doc: doc, public: true}
		rs.handle(http.MethodGet, public.PassportVersionPath, "public-passport-version",
			"A published passport version and whether its stored bytes verify", h.PassportVersion,
			describe("No credentials. ACTIVE and SUPERSEDED versions only (others are 404). "+
				"verification is computed from the stored payload, proof, signed receipt and QR code (and remembered for the same bytes), "+
				"against the public key the service registered under the receipt's key id. "+
				"With Accept: text/html the answer is a page for a person who scanned the QR code. "+
				"Cached for five minutes (Cache-Control), then revalidated by ETag (304)."),
			pathParam("id", "The passport version id (the QR code's pv)."),
			respondsOrPage[public.VerifiedVersion]("The version, its product and its verification"),
			notModified)
		rs.handle(http.MethodGet, public.VerifyPath, "public-verify-qr",
			"Check a scanned BPC-QR-1 string against the passport version it names", h.Verify,
			describe("No credentials. qr_matches: the QR's ph, pr and rh are the stored hashes; a tampered QR gives "+
				"qr_matches false and verified false. Not a BPC-QR-1 string: 422 naming qr; an unknown or unpublished version: 404. "+
				"With Accept: text/html the answer is a page; without qr (or with it empty), the page is the empty form to paste a code into, "+
				"and a JSON client gets 422 naming qr."),
			queryParam("qr", "The QR code's text: BPC1|pv=…|ph=…|pr=…|rh=…", false),
			respondsOrPage[public.QRVerification]("Whether the QR matches, and the verification"),
			notModified)
		rs.handle(http.MethodGet, public.IssuerPath, "public-issuer",
			"An issuer's public key directory", h.Issuer,
			describe("No credentials. JSON only. The tenant's issuer profile (null members when it has none) and its own signing keys, "+
				"oldest first, public halves only; the platform's legacy key, which signed passports before tenants had keys of their own, "+
				"is in no tenant's directory. An unknown tenant, the system tenant, or a tenant with neither a profile nor a key: 404. "+
				"Cached for five minutes (Cache-Control), then revalidated by ETag (304)."),
			pathParam("tenant_id", "The issuer's tenant id (a version's verification.issuer.tenant_id)."),
			respondsJSON[verify.Directory]("The directory"),
			notModified)
	})
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

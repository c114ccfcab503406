package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Text reaches Postgres as text or jsonb, which refuse NUL and invalid
// UTF-8 (SQLSTATE 22021, 22P05): a request carrying them must be a 422
// naming the field, never a 500 from the database. encoding/json hides
// both when it decodes (invalid bytes and unpaired surrogate escapes become
// U+FFFD) and json.RawMessage passes them through untouched, so the raw
// body is checked.

// maxNumberExponent bounds JSON number exponents: Postgres numeric (and so
// jsonb) overflows beyond about 1e131072, and a short literal like 1e100000
// would otherwise render as 100 KB on every read.
const maxNumberExponent = 1000

// maxNumberChars bounds the length of one JSON number literal.
const maxNumberChars = 1000

// textProblem says what is wrong with s as text, or "" when nothing is.
func textProblem(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain a NUL character"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	}
	return ""
}

// checkJSONText returns a VALIDATION_ERROR naming the first string (value
// or member name) of the JSON document body that holds NUL or is not valid
// UTF-8 (raw bytes or an unpaired surrogate escape), or the first number
// Postgres cannot store. body has been decoded successfully already.
func checkJSONText(body []byte) error {
	if !mayNeedTextWalk(body) {
		return nil // the common case, in one pass over the bytes
	}
	w := jsonWalker{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
	w.dec.UseNumber()
	return w.walk()
}

// mayNeedTextWalk scans a valid JSON document once for anything the walk
// might refuse: invalid UTF-8, a \u0000 or surrogate escape in a string, a
// number with a long exponent or literal. It over-approximates (a valid
// surrogate pair also says yes); the walk decides and names the field.
func mayNeedTextWalk(body []byte) bool {
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				switch c := body[i]; {
				case c == '\\':
					if i+1 < len(body) && body[i+1] == 'u' {
						r, _ := hex4(body, i+2)
						if r == 0 || (r >= 0xD800 && r <= 0xDFFF) {
							return true
						}
					}
					i++ // the escaped character, which may be a quote
				case c >= utf8.RuneSelf:
					r, size := utf8.DecodeRune(body[i:])
					if r == utf8.RuneError && size == 1 {
						return true
					}
					i += size - 1
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j, expDigits := i, -1
		number:
			for ; j < len(body); j++ {
				switch c := body[j]; {
				case c == 'e' || c == 'E':
					expDigits = 0
				case c >= '0' && c <= '9':
					if expDigits >= 0 {
						expDigits++
					}
				case c == '-' || c == '+' || c == '.':
				default:
					break number
				}
			}
			if j-i > maxNumberChars || expDigits > 3 {
				return true
			}
			i = j - 1
		case c >= utf8.RuneSelf:
			return true // outside strings only in invalid JSON
		}
	}
	return false
}

// jsonFrame is one open object or array of the walk.
type jsonFrame struct {
	array   bool
	index   int    // of the current element (arrays)
	key     string // of the current member (objects)
	wantKey bool   // the next string is a member name (objects)
}

type jsonWalker struct {
	dec   *json.Decoder
	body  []byte
	stack []jsonFrame
}

func (w *jsonWalker) walk() error {
	for {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			// The body decoded already; io.EOF is its end.
			return nil
		}
		end := w.dec.InputOffset()
		top := w.top()
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			w.stack = w.stack[:len(w.stack)-1]
			w.valueDone()
			continue
		}
		if s, ok := tok.(string); ok && top != nil && !top.array && top.wantKey {
			if problem := stringProblem(s, w.body[start:end]); problem != "" {
				return errcode.Invalid(w.path("body"), "member name %s %s", quoteName(s), problem)
			}
			top.key, top.wantKey = s, false
			continue
		}
		if top != nil && top.array {
			top.index++
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			w.stack = append(w.stack, jsonFrame{array: v == '[', index: -1, wantKey: v == '{'})
			continue
		case string:
			if problem := stringProblem(v, w.body[start:end]); problem != "" {
				return errcode.Invalid(w.path("body"), "%s", problem)
			}
		case json.Number:
			if problem := numberProblem(string(v)); problem != "" {
				return errcode.Invalid(w.path("body"), "%s", problem)
			}
		}
		w.valueDone()
	}
}

func (w *jsonWalker) top() *jsonFrame {
	if len(w.stack) == 0 {
		return nil
	}
	return &w.stack[len(w.stack)-1]
}

// valueDone: after a member's value the object expects the next name.
func (w *jsonWalker) valueDone() {
	if top := w.top(); top != nil && !top.array {
		top.wantKey = true
	}
}

// simpleName is a member name that reads unambiguously after a dot.
var simpleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// path is the JSON path of the current value ("payload.items[2].name"),
// or root when the walk is at the top level. A frame still waiting for a
// member name contributes nothing (the error is about a name in it).
func (w *jsonWalker) path(root string) string {
	var b strings.Builder
	for _, f := range w.stack {
		switch {
		case f.array:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		case f.wantKey:
		case simpleName.MatchString(f.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		default:
			b.WriteString("[" + quoteName(f.key) + "]")
		}
	}
	if b.Len() == 0 {
		return root
	}
	return b.String()
}

// quoteName quotes a member name for a message, shortened when long.
func quoteName(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return strconv.Quote(s)
}

// stringProblem checks one decoded JSON string against its raw token (which
// may start with the ':' or ',' and spaces before the opening quote).
func stringProblem(decoded string, raw []byte) string {
	if strings.IndexByte(decoded, 0) >= 0 {
		return "must not contain a NUL character"
	}
	if !strings.ContainsRune(decoded, utf8.RuneError) {
		return ""
	}
	// U+FFFD may have been sent as such; only raw invalid bytes and
	// unpaired surrogate escapes are errors.
	if i := bytes.IndexByte(raw, '"'); i >= 0 {
		raw = raw[i:]
	}
	if !utf8.Valid(raw) || hasLoneSurrogate(raw) {
		return "must be valid UTF-8"
	}
	return ""
}

// hasLoneSurrogate reports a \uD800-\uDFFF escape that is not half of a
// high-low pair in a raw JSON string token.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			continue
		}
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := hex4(raw, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// numberProblem bounds a JSON number to what Postgres numeric stores.
func numberProblem(n string) string {
	if len(n) > maxNumberChars {
		return fmt.Sprintf("number must have at most %d characters", maxNumberChars)
	}
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		exp := strings.TrimLeft(n[i+1:], "+-")
		if e, err := strconv.Atoi(exp); err != nil || e > maxNumberExponent {
			return fmt.Sprintf("number out of range (exponent beyond ±%d)", maxNumberExponent)
		}
	}
	return ""
}

// checkRequestText guards the text of a request besides its body: path
// parameters (by name), query parameters (by name) and the Idempotency-Key
// header, which all reach Postgres as text. It runs after authentication.
func (s *Server) checkRequestText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := requestTextError(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func requestTextError(r *http.Request) error {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		for i, name := range rctx.URLParams.Keys {
			value := rctx.URLParams.Values[i]
			if unescaped, err := url.PathUnescape(value); err == nil {
				value = unescaped // chi routes on the raw path when it has one
			}
			if name == "*" {
				name = "path"
			}
			if problem := textProblem(value); problem != "" {
				return errcode.Invalid(name, "%s", problem)
			}
		}
	}
	if problem := textProblem(r.URL.Path); problem != "" {
		return errcode.Invalid("path", "%s", problem)
	}
	query := r.URL.Query() // as the handlers read it
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	slices.Sort(names) // report the same parameter every time
	for _, name := range names {
		if problem := textProblem(name); problem != "" {
			return errcode.Invalid("query", "parameter name %s %s", quoteName(name), problem)
		}
		for _, v := range query[name] {
			if problem := textProblem(v); problem != "" {
				return errcode.Invalid(name, "%s", problem)
			}
		}
	}
	if problem := textProblem(r.Header.Get(HeaderIdempotencyKey)); problem != "" {
		return errcode.Invalid(HeaderIdempotencyKey, "%s", problem)
	}
	return nil
}

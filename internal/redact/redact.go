// Package redact takes secrets out of text before it is logged or printed:
// passwords in connection strings and URLs, key=value credentials, bearer
// and basic credentials, the service's API keys, and any exact secret the
// process knows (its admin token, database password, signing key).
package redact

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Mask replaces every redacted value.
const Mask = "[REDACTED]"

// minExactSecret is the shortest known secret removed wherever it appears:
// a shorter one ("postgres", "bpc") would blank out ordinary words, and the
// patterns already remove passwords where connection strings carry them.
const minExactSecret = 12

// patterns find credentials by their shape; each keeps its prefix group.
var patterns = []struct {
	// may is a cheap test that s could match: most logged strings (ids,
	// states, kinds) cannot, and skip the regular expression.
	may  func(s string) bool
	re   *regexp.Regexp
	repl string
}{
	// scheme://user:password@host — postgres DSNs and URLs with userinfo.
	// The password may hold unescaped '/' or ':' (people write them raw).
	{has("@"), regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)[^\s@]*@`), "${1}" + Mask + "@"},
	// key=value credentials: libpq keyword DSNs (password='a b'), query strings.
	{has("="), regexp.MustCompile(`(?i)\b((?:ssl)?password|passwd|pwd|secret|client_secret|token|access_token|refresh_token|api[_-]?key)(\s*=\s*)(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;,'"]+)`), "${1}${2}" + Mask},
	// The same in JSON text: "password":"...".
	{has(`":`, `" :`), regexp.MustCompile(`(?i)("(?:(?:ssl)?password|passwd|secret|client_secret|token|access_token|refresh_token|api[_-]?key|authorization)"\s*:\s*)"(?:[^"\\]|\\.)*"`), `${1}"` + Mask + `"`},
	// Authorization header values.
	{has("earer", "EARER", "asic", "ASIC"), regexp.MustCompile(`(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{8,}=*`), "${1} " + Mask},
	// Tenant API keys (bpc_<prefix>_<secret>).
	{has("bpc_"), regexp.MustCompile(`\bbpc_[A-Za-z0-9]+_[A-Za-z0-9]{16,}`), Mask},
}

// sensitiveKeys are log attribute keys whose value is never written.
var sensitiveKeys = map[string]bool{
	"authorization": true, "password": true, "secret": true, "token": true,
	"api_key": true, "admin_token": true, "database_url": true, "private_key": true,
}

// has returns a test for any of subs in s.
func has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
}

// String removes credentials found by their shape.
func String(s string) string {
	for _, p := range patterns {
		if p.may(s) {
			s = p.re.ReplaceAllString(s, p.repl)
		}
	}
	return s
}

// Redactor removes credentials by shape and the process's own secrets
// wherever they appear.
type Redactor struct {
	secrets []string
}

// New returns a Redactor that also removes each of secrets (empty and short
// values are ignored).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= minExactSecret {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

// String removes credentials from s.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return String(s)
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that redacts the message,
// every string attribute and every error attribute, and blanks attributes
// named like a credential.
func (r *Redactor) ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if sensitiveKeys[strings.ToLower(a.Key)] {
		return slog.String(a.Key, Mask)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); s != "" {
			a.Value = slog.StringValue(r.String(s))
		}
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.StringValue(r.String(v.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(r.String(v.String()))
		}
	}
	return a
}

// HandlerOptions returns a copy of opts whose ReplaceAttr redacts, so that
// nothing a JSON or text handler writes carries a secret; an existing
// ReplaceAttr runs first.
func (r *Redactor) HandlerOptions(opts *slog.HandlerOptions) *slog.HandlerOptions {
	out := &slog.HandlerOptions{}
	if opts != nil {
		*out = *opts
	}
	prev := out.ReplaceAttr
	out.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if prev != nil {
			a = prev(groups, a)
		}
		return r.ReplaceAttr(groups, a)
	}
	return out
}

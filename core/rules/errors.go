// Package rules implements BPC-RULES-1, the rules language of rule packages:
// a hand-written lexer and recursive-descent parser, a static type checker
// with units and fixed-point decimal scales, a dependency order of fields
// (Kahn's algorithm with a lexical tie-break), an evaluator with exact
// decimal arithmetic (cockroachdb/apd, never binary floating point) that
// records a derivation trace per field, and the rule tests language.
//
// The package is pure: no I/O, no clock, no randomness other than PRNGs seeded
// by the caller, and no output depends on map iteration order. The language
// reference for rule authors is LANGUAGE.md beside this file.
package rules

import (
	"fmt"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Pos is a 1-based line and column (counted in Unicode code points) in rule source.
type Pos struct {
	Line int
	Col  int
}

// String returns "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// before reports whether p comes strictly before q in the source.
func (p Pos) before(q Pos) bool {
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

// errAt returns a typed error with code, the field being declared or
// evaluated (may be empty) and the position of the offending token. The
// message reads "field a.b at 3:7: ..." so it is useful on its own; the
// structured parts are in Field and Details (line, col, field).
func errAt(code errcode.Code, field string, pos Pos, format string, args ...any) *errcode.Error {
	msg := fmt.Sprintf(format, args...)
	prefix := pos.String()
	if field != "" {
		prefix = "field " + field + " at " + prefix
	}
	e := errcode.New(code, "%s: %s", prefix, msg)
	e.Field = field
	e.Details = map[string]any{"line": pos.Line, "col": pos.Col}
	if field != "" {
		e.Details["field"] = field
	}
	return e
}

// ErrorLocation returns the field and the source position recorded in an
// error produced by this package; ok is false when err carries none.
func ErrorLocation(err error) (field string, pos Pos, ok bool) {
	e := errcode.As(err)
	if e == nil || e.Details == nil {
		return "", Pos{}, false
	}
	line, lok := e.Details["line"].(int)
	col, cok := e.Details["col"].(int)
	if !lok || !cok {
		return "", Pos{}, false
	}
	return e.Field, Pos{Line: line, Col: col}, true
}

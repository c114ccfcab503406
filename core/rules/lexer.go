package rules

import (
	"strings"
	"unicode/utf8"

	"github.com/bpc-platform/bpc/core/errcode"
)

// tokKind classifies a token.
type tokKind int

const (
	tkEOF tokKind = iota
	tkIdent
	tkInt
	tkDec
	tkString
	tkPunct
)

// token is one lexical token; for strings, text holds the decoded value.
type token struct {
	kind tokKind
	text string
	pos  Pos
}

// maxIntDigits bounds the integer part of numeric literals (see LANGUAGE.md).
const maxIntDigits = 30

// twoCharPuncts are matched before single characters (longest match).
var twoCharPuncts = []string{"==", "!=", "<=", ">=", "&&", "||", "=>"}

const oneCharPuncts = "(){}[],;:=<>+-*/!."

// lexer turns source text into tokens, tracking line and column.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func (lx *lexer) pos() Pos { return Pos{Line: lx.line, Col: lx.col} }

func (lx *lexer) errf(pos Pos, format string, args ...any) error {
	return errAt(errcode.RuleParseError, "", pos, format, args...)
}

// peekRune returns the rune at the current offset and its width (0 at end).
func (lx *lexer) peekRune() (rune, int) {
	if lx.off >= len(lx.src) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(lx.src[lx.off:])
}

// advance consumes one rune and updates line and column.
func (lx *lexer) advance() rune {
	r, w := lx.peekRune()
	lx.off += w
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
	return r
}

func isLetter(r rune) bool { return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }
func isDigit(r rune) bool  { return r >= '0' && r <= '9' }

func (lx *lexer) next() (token, error) {
	// Skip whitespace and // comments.
	for lx.off < len(lx.src) {
		r, _ := lx.peekRune()
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			lx.advance()
			continue
		}
		if strings.HasPrefix(lx.src[lx.off:], "//") {
			for lx.off < len(lx.src) {
				if r, _ := lx.peekRune(); r == '\n' {
					break
				}
				lx.advance()
			}
			continue
		}
		break
	}
	start := lx.pos()
	if lx.off >= len(lx.src) {
		return token{kind: tkEOF, pos: start}, nil
	}
	r, w := lx.peekRune()
	switch {
	case r == utf8.RuneError && w == 1:
		return token{}, lx.errf(start, "invalid UTF-8 in source")
	case isLetter(r):
		begin := lx.off
		for lx.off < len(lx.src) {
			r, _ := lx.peekRune()
			if !isLetter(r) && !isDigit(r) {
				break
			}
			lx.advance()
		}
		return token{kind: tkIdent, text: lx.src[begin:lx.off], pos: start}, nil
	case isDigit(r):
		return lx.number(start)
	case r == '"':
		return lx.str(start)
	}
	for _, p := range twoCharPuncts {
		if strings.HasPrefix(lx.src[lx.off:], p) {
			lx.advance()
			lx.advance()
			return token{kind: tkPunct, text: p, pos: start}, nil
		}
	}
	if strings.ContainsRune(oneCharPuncts, r) {
		lx.advance()
		return token{kind: tkPunct, text: string(r), pos: start}, nil
	}
	return token{}, lx.errf(start, "unexpected character %q", r)
}

// number lexes digits, optionally followed by '.' and at least one digit.
func (lx *lexer) number(start Pos) (token, error) {
	begin := lx.off
	for r, _ := lx.peekRune(); isDigit(r); r, _ = lx.peekRune() {
		lx.advance()
	}
	if lx.off-begin > maxIntDigits {
		return token{}, lx.errf(start, "numeric literal has more than %d integer digits", maxIntDigits)
	}
	kind := tkInt
	if lx.off+1 < len(lx.src) && lx.src[lx.off] == '.' && isDigit(rune(lx.src[lx.off+1])) {
		lx.advance()
		fracBegin := lx.off
		for r, _ := lx.peekRune(); isDigit(r); r, _ = lx.peekRune() {
			lx.advance()
		}
		if lx.off-fracBegin > MaxScale {
			return token{}, lx.errf(start, "decimal literal has more than %d fractional digits", MaxScale)
		}
		kind = tkDec
	}
	if r, _ := lx.peekRune(); isLetter(r) {
		return token{}, lx.errf(lx.pos(), "malformed number: letter directly after digits")
	}
	return token{kind: kind, text: lx.src[begin:lx.off], pos: start}, nil
}

// str lexes a double-quoted string with the escapes \" \\ \n \t.
func (lx *lexer) str(start Pos) (token, error) {
	lx.advance() // opening quote
	var b strings.Builder
	for {
		p := lx.pos()
		r, w := lx.peekRune()
		switch {
		case w == 0:
			return token{}, lx.errf(start, "unterminated string")
		case r == utf8.RuneError && w == 1:
			return token{}, lx.errf(p, "invalid UTF-8 in string")
		case r == '"':
			lx.advance()
			return token{kind: tkString, text: b.String(), pos: start}, nil
		case r < 0x20:
			return token{}, lx.errf(p, "control character in string (use \\n or \\t)")
		case r == '\\':
			lx.advance()
			e, _ := lx.peekRune()
			switch e {
			case '"':
				b.WriteByte('"')
			case '\\':
				b.WriteByte('\\')
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return token{}, lx.errf(p, "unknown escape sequence (allowed: \\\" \\\\ \\n \\t)")
			}
			lx.advance()
		default:
			b.WriteRune(r)
			lx.advance()
		}
	}
}

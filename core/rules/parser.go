package rules

import (
	"github.com/cockroachdb/apd/v3"
	"regexp"
	"strconv"
	"time"

	"github.com/bpc-platform/bpc/core/errcode"
)

// maxDepth bounds expression and type nesting so hostile input cannot
// exhaust the stack of the parser, checker or evaluator.
const maxDepth = 200

// reserved words cannot name variables.
var reserved = map[string]bool{
	"let": true, "if": true, "then": true, "else": true, "assert": true,
	"true": true, "false": true, "none": true, "field": true,
}

var (
	pathRe = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	codeRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]{2,63}$`)
	dateRe = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// parser is a recursive-descent parser. Tokens are lexed on demand so that
// the tests parser can read raw JSON between tokens.
type parser struct {
	lx     *lexer
	toks   []token
	i      int
	lexErr error // first lexical error; it wins over the parse error it causes
	depth  int
	field  string // field (or test) being declared, for error messages
}

func newParser(src string) *parser {
	// Source averages well over four bytes per token; sizing up front avoids regrowth.
	return &parser{lx: &lexer{src: src, line: 1, col: 1}, toks: make([]token, 0, len(src)/4+1)}
}

// fill returns token n, lexing as needed; after a lexical error or the end
// of input it keeps returning an EOF token.
func (p *parser) fill(n int) token {
	if n < len(p.toks) {
		return p.toks[n]
	}
	for len(p.toks) <= n {
		if k := len(p.toks); k > 0 && p.toks[k-1].kind == tkEOF {
			return p.toks[k-1]
		}
		t, err := p.lx.next()
		if err != nil {
			p.lexErr = err
			t = token{kind: tkEOF, pos: p.lx.pos()}
		}
		p.toks = append(p.toks, t)
	}
	return p.toks[n]
}

// finish prefers a lexical error over the parse error it caused.
func (p *parser) finish(err error) error {
	if p.lexErr != nil {
		return p.lexErr
	}
	return err
}

// Parse parses rule source into a File; errors are RULE_PARSE_ERROR (or
// UNIT_MISMATCH / RULE_TYPE_ERROR for an unknown unit or bad scale in a
// declared type) with line:column.
func Parse(src string) (*File, error) {
	p := newParser(src)
	f := &File{}
	for p.peek().kind != tkEOF {
		d, err := p.fieldDecl()
		if err != nil {
			return nil, p.finish(err)
		}
		f.Fields = append(f.Fields, d)
	}
	if p.lexErr != nil {
		return nil, p.lexErr
	}
	return f, nil
}

func (p *parser) peek() token { return p.fill(p.i) }

func (p *parser) peekAt(n int) token { return p.fill(p.i + n) }

func (p *parser) next() token {
	t := p.fill(p.i)
	if t.kind != tkEOF {
		p.i++
	}
	return t
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tkPunct && t.text == s
}

func (p *parser) errf(pos Pos, format string, args ...any) error {
	return errAt(errcode.RuleParseError, p.field, pos, format, args...)
}

func describe(t token) string {
	switch t.kind {
	case tkEOF:
		return "end of input"
	case tkString:
		return strconv.Quote(t.text)
	}
	return "'" + t.text + "'"
}

func (p *parser) expect(s string) (token, error) {
	t := p.peek()
	if t.kind != tkPunct || t.text != s {
		return t, p.errf(t.pos, "expected '%s', found %s", s, describe(t))
	}
	return p.next(), nil
}

func (p *parser) expectKeyword(s string) error {
	t := p.peek()
	if t.kind != tkIdent || t.text != s {
		return p.errf(t.pos, "expected '%s', found %s", s, describe(t))
	}
	p.next()
	return nil
}

func (p *parser) ident() (token, error) {
	t := p.peek()
	if t.kind != tkIdent {
		return t, p.errf(t.pos, "expected a name, found %s", describe(t))
	}
	return p.next(), nil
}

func (p *parser) str() (token, error) {
	t := p.peek()
	if t.kind != tkString {
		return t, p.errf(t.pos, "expected a string literal, found %s", describe(t))
	}
	return p.next(), nil
}

func (p *parser) enter(pos Pos) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errf(pos, "nesting deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// path parses a dotted lower_snake path such as a.b.c.
func (p *parser) path() (string, Pos, error) {
	first, err := p.ident()
	if err != nil {
		return "", first.pos, err
	}
	s := first.text
	for p.isPunct(".") && p.peekAt(1).kind == tkIdent {
		p.next()
		s += "." + p.next().text
	}
	if !pathRe.MatchString(s) {
		return "", first.pos, p.errf(first.pos, "field path %q must be dotted lower_snake_case", s)
	}
	return s, first.pos, nil
}

func (p *parser) fieldDecl() (*FieldDecl, error) {
	p.field = ""
	if err := p.expectKeyword("field"); err != nil {
		return nil, err
	}
	path, pos, err := p.path()
	if err != nil {
		return nil, err
	}
	p.field = path
	if _, err := p.expect(":"); err != nil {
		return nil, err
	}
	typ, err := p.typ()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect("="); err != nil {
		return nil, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	return &FieldDecl{Path: path, Pos: pos, Type: typ, Expr: e}, nil
}

// typ parses a declarable type.
func (p *parser) typ() (*Type, error) {
	t, err := p.ident()
	if err != nil {
		return nil, err
	}
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	switch t.text {
	case "Bool":
		return tBool, nil
	case "Int":
		return tInt, nil
	case "Text":
		return tText, nil
	case "Date":
		return tDate, nil
	case "Dec":
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		n := p.peek()
		if n.kind != tkInt {
			return nil, p.errf(n.pos, "expected a scale (integer 0..%d), found %s", MaxScale, describe(n))
		}
		p.next()
		s, err := strconv.Atoi(n.text)
		if err != nil || s > MaxScale {
			return nil, errAt(errcode.RuleTypeError, p.field, n.pos, "scale %s out of range 0..%d", n.text, MaxScale)
		}
		if _, err := p.expect(")"); err != nil {
			return nil, err
		}
		return decType(s), nil
	case "Qty":
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		u, err := p.ident()
		if err != nil {
			return nil, err
		}
		if _, ok := units[u.text]; !ok {
			return nil, errAt(errcode.UnitMismatch, p.field, u.pos, "unknown unit %q", u.text)
		}
		if _, err := p.expect(")"); err != nil {
			return nil, err
		}
		return qtyType(u.text), nil
	case "Opt", "List":
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		e, err := p.typ()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(")"); err != nil {
			return nil, err
		}
		if t.text == "Opt" {
			return optType(e), nil
		}
		return listType(e), nil
	case "Map":
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		k, err := p.ident()
		if err != nil {
			return nil, err
		}
		if k.text != "Text" {
			return nil, p.errf(k.pos, "map keys must be Text")
		}
		if _, err := p.expect(","); err != nil {
			return nil, err
		}
		e, err := p.typ()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(")"); err != nil {
			return nil, err
		}
		return mapType(e), nil
	case "Record":
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		var fs []RecordField
		seen := map[string]bool{}
		for {
			n, err := p.ident()
			if err != nil {
				return nil, err
			}
			if seen[n.text] {
				return nil, errAt(errcode.RuleTypeError, p.field, n.pos, "duplicate record member %q", n.text)
			}
			seen[n.text] = true
			if _, err := p.expect(":"); err != nil {
				return nil, err
			}
			ft, err := p.typ()
			if err != nil {
				return nil, err
			}
			fs = append(fs, RecordField{Name: n.text, Type: ft})
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
		if _, err := p.expect(")"); err != nil {
			return nil, err
		}
		return recordType(fs), nil
	}
	return nil, p.errf(t.pos, "unknown type %q", t.text)
}

// expr parses let, if, assert, or a binary expression.
func (p *parser) expr() (Expr, error) {
	t := p.peek()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if t.kind == tkIdent {
		switch t.text {
		case "let":
			return p.letExpr()
		case "if":
			return p.ifExpr()
		case "assert":
			return p.assertExpr()
		}
	}
	return p.binary(0)
}

func (p *parser) letExpr() (Expr, error) {
	at := p.next().pos
	name, err := p.varName()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect("="); err != nil {
		return nil, err
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	body, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &Let{At: at, Name: name.text, Value: v, Body: body}, nil
}

func (p *parser) varName() (token, error) {
	t, err := p.ident()
	if err != nil {
		return t, err
	}
	if reserved[t.text] {
		return t, p.errf(t.pos, "%q is a reserved word", t.text)
	}
	return t, nil
}

func (p *parser) ifExpr() (Expr, error) {
	at := p.next().pos
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	c, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("then"); err != nil {
		return nil, err
	}
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("else"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &If{At: at, Cond: c, Then: a, Else: b}, nil
}

func (p *parser) assertExpr() (Expr, error) {
	at := p.next().pos
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	c, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(","); err != nil {
		return nil, err
	}
	code, err := p.str()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(","); err != nil {
		return nil, err
	}
	msg, err := p.str()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	body, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &Assert{At: at, Cond: c, Code: code.text, CodePos: code.pos, Message: msg.text, Body: body}, nil
}

// binaryLevels lists binary operators from loosest to tightest binding.
var binaryLevels = [][]string{
	{"||"},
	{"&&"},
	{"==", "!="},
	{"<", "<=", ">", ">="},
	{"+", "-"},
	{"*", "/"},
}

// binary parses left-associative binary operators at precedence level and above.
func (p *parser) binary(level int) (Expr, error) {
	if level == len(binaryLevels) {
		return p.unary()
	}
	l, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tkPunct || !contains(binaryLevels[level], t.text) {
			return l, nil
		}
		p.next()
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		l = &Binary{At: t.pos, Op: t.text, L: l, R: r}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	if t.kind == tkPunct && (t.text == "!" || t.text == "-") {
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &Unary{At: t.pos, Op: t.text, X: x}, nil
	}
	return p.primary()
}

// isLambdaStart reports whether the tokens at the cursor read "(x) =>" or "(a, b) =>".
func (p *parser) isLambdaStart() bool {
	if !p.isPunct("(") || p.peekAt(1).kind != tkIdent {
		return false
	}
	n := 2
	if t := p.peekAt(2); t.kind == tkPunct && t.text == "," {
		if p.peekAt(3).kind != tkIdent {
			return false
		}
		n = 4
	}
	c, a := p.peekAt(n), p.peekAt(n+1)
	return c.kind == tkPunct && c.text == ")" && a.kind == tkPunct && a.text == "=>"
}

func (p *parser) primary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tkInt:
		p.next()
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, p.errf(t.pos, "integer literal %s out of the Int (int64) range", t.text)
		}
		return &IntLit{At: t.pos, Val: v}, nil
	case tkDec:
		p.next()
		d, _, err := apd.NewFromString(t.text)
		if err != nil {
			return nil, p.errf(t.pos, "bad decimal literal %s", t.text)
		}
		return &DecLit{At: t.pos, Text: t.text, val: d}, nil
	case tkString:
		p.next()
		return &StringLit{At: t.pos, Val: t.text}, nil
	case tkPunct:
		if p.isLambdaStart() {
			return p.lambda()
		}
		if t.text == "(" {
			p.next()
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(")"); err != nil {
				return nil, err
			}
			return e, nil
		}
		return nil, p.errf(t.pos, "unexpected %s", describe(t))
	case tkIdent:
		p.next()
		switch t.text {
		case "true", "false":
			return &BoolLit{At: t.pos, Val: t.text == "true"}, nil
		case "none":
			return &NoneLit{At: t.pos}, nil
		}
		if reserved[t.text] && t.text != "field" {
			return nil, p.errf(t.pos, "unexpected keyword '%s'", t.text)
		}
		if !p.isPunct("(") {
			return &Ident{At: t.pos, Name: t.text}, nil
		}
		if t.text == "date" {
			return p.dateLit(t.pos)
		}
		return p.call(t)
	}
	return nil, p.errf(t.pos, "unexpected %s", describe(t))
}

func (p *parser) lambda() (Expr, error) {
	at := p.next().pos
	var params []string
	for {
		n, err := p.varName()
		if err != nil {
			return nil, err
		}
		params = append(params, n.text)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if len(params) == 2 && params[0] == params[1] {
		return nil, p.errf(at, "lambda parameters must differ")
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	if _, err := p.expect("=>"); err != nil {
		return nil, err
	}
	body, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &Lambda{At: at, Params: params, Body: body}, nil
}

// dateLit parses date("YYYY-MM-DD") and validates the calendar date.
func (p *parser) dateLit(at Pos) (Expr, error) {
	p.next() // (
	s, err := p.str()
	if err != nil {
		return nil, err
	}
	if !validDate(s.text) {
		return nil, p.errf(s.pos, "invalid date %q (want an existing YYYY-MM-DD)", s.text)
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	return &DateLit{At: at, Val: s.text}, nil
}

// validDate reports whether s is an existing calendar date in YYYY-MM-DD form.
func validDate(s string) bool {
	if !dateRe.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func (p *parser) call(name token) (Expr, error) {
	p.next() // (
	c := &Call{At: name.pos, Name: name.text}
	for !p.isPunct(")") {
		if name.text == "record" {
			n, err := p.ident()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(":"); err != nil {
				return nil, err
			}
			c.Names = append(c.Names, n.text)
		}
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, a)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	return c, nil
}

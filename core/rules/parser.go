package rules

import (
	"github.com/cockroachdb/apd/v3"
	"regexp"
	"strconv"
	"time"

	"github.com/bpc-platform/bpc/core/errcode"
)

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
//
// It admits only trees the checker and evaluator can recurse over: depth is
// the nesting of the parse functions now running (parentheses, types, lets,
// unary operators …), which bounds the parser's own recursion before a node
// exists, and h is the height of the expression just parsed, computed
// bottom-up, which bounds what a loop builds without recursing: a chain
// a+b+c+… is a left-nested tree one level taller per operator. Both stay
// within MaxDepth, and every node counts against maxNodes.
type parser struct {
	lx       *lexer
	toks     []token
	i        int
	lexErr   error // first lexical error; it wins over the parse error it causes
	depth    int
	h        int // height of the expression last returned
	nodes    int
	maxNodes int
	field    string // field (or test) being declared, for error messages
}

// tokenWindow is how many consumed tokens the parser keeps before it drops
// them (see next): only the lookahead is ever read again.
const tokenWindow = 256

func newParser(src string, l Limits) *parser {
	return &parser{lx: &lexer{src: src, line: 1, col: 1}, toks: make([]token, 0, 2*tokenWindow), maxNodes: l.effective().MaxNodes}
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

// parseError carries the error that ends a parse. The parse functions
// panic with it (fail, failf) instead of returning it, so each reads as its
// grammar rule does, one step a line; catch recovers it at the top of a
// declaration. A parse never backtracks, so the first error is the one
// reported, as if every step returned it. Any other panic is not the
// parser's and goes on.
type parseError struct{ err error }

func (p *parser) fail(err error) { panic(parseError{err}) }

func (p *parser) failf(pos Pos, format string, args ...any) {
	p.fail(errAt(errcode.RuleParseError, p.field, pos, format, args...))
}

// catch runs one parse function and returns what it parsed, or the error it
// failed with; a lexical error wins over the parse error it caused.
func catch[T any](p *parser, parse func() T) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			err = pe.err
			if p.lexErr != nil {
				err = p.lexErr
			}
		}
	}()
	return parse(), nil
}

// Parse parses rule source into a File with DefaultLimits; see Limits.Parse.
func Parse(src string) (*File, error) { return DefaultLimits().Parse(src) }

// Parse parses rule source into a File; errors are RULE_PARSE_ERROR (or
// UNIT_MISMATCH / RULE_TYPE_ERROR for an unknown unit or bad scale in a
// declared type) with line:column. A source nested deeper than MaxDepth
// (operator chains included) or with more than l.MaxNodes syntax nodes is a
// RULE_PARSE_ERROR at the node that crossed the limit; parsing stops there,
// so a hostile source costs no more than the limits allow.
func (l Limits) Parse(src string) (*File, error) {
	p := newParser(src, l)
	f := &File{}
	for p.peek().kind != tkEOF {
		d, err := catch(p, p.fieldDecl)
		if err != nil {
			return nil, err
		}
		f.Fields = append(f.Fields, d)
	}
	if p.lexErr != nil {
		return nil, p.lexErr
	}
	f.nodes = p.nodes
	return f, nil
}

func (p *parser) peek() token { return p.fill(p.i) }

func (p *parser) peekAt(n int) token { return p.fill(p.i + n) }

func (p *parser) next() token {
	t := p.fill(p.i)
	if t.kind != tkEOF {
		p.i++
		// Once every token lexed so far is consumed, start the buffer
		// over: a long source is parsed in a small window instead of
		// keeping (and regrowing, and copying) all of its tokens.
		if p.i == len(p.toks) && p.i >= tokenWindow {
			p.toks, p.i = p.toks[:0], 0
		}
	}
	return t
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tkPunct && t.text == s
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

func (p *parser) expect(s string) token {
	t := p.peek()
	if t.kind != tkPunct || t.text != s {
		p.failf(t.pos, "expected '%s', found %s", s, describe(t))
	}
	return p.next()
}

func (p *parser) expectKeyword(s string) {
	t := p.peek()
	if t.kind != tkIdent || t.text != s {
		p.failf(t.pos, "expected '%s', found %s", s, describe(t))
	}
	p.next()
}

func (p *parser) ident() token {
	t := p.peek()
	if t.kind != tkIdent {
		p.failf(t.pos, "expected a name, found %s", describe(t))
	}
	return p.next()
}

func (p *parser) str() token {
	t := p.peek()
	if t.kind != tkString {
		p.failf(t.pos, "expected a string literal, found %s", describe(t))
	}
	return p.next()
}

func (p *parser) enter(pos Pos) {
	p.depth++
	if p.depth > MaxDepth {
		p.failf(pos, "nesting deeper than %d", MaxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// count charges one syntax node at pos against the node budget.
func (p *parser) count(pos Pos) {
	p.nodes++
	if p.nodes > p.maxNodes {
		p.failf(pos, "source has more than %d syntax nodes (BPC_RULES_MAX_NODES)", p.maxNodes)
	}
}

// built accounts for an expression node at pos whose tallest child is
// childH high (0 for a leaf): it charges the node and sets p.h to its
// height, which must stay within MaxDepth.
func (p *parser) built(pos Pos, childH int) {
	p.count(pos)
	p.h = childH + 1
	if p.h > MaxDepth {
		p.failf(pos, "nesting deeper than %d (an operator chain nests one level per operator: split it with let, or sum a list)", MaxDepth)
	}
}

// path parses a dotted lower_snake path such as a.b.c.
func (p *parser) path() (string, Pos) {
	first := p.ident()
	s := first.text
	for p.isPunct(".") && p.peekAt(1).kind == tkIdent {
		p.next()
		s += "." + p.next().text
	}
	if !pathRe.MatchString(s) {
		p.failf(first.pos, "field path %q must be dotted lower_snake_case", s)
	}
	return s, first.pos
}

func (p *parser) fieldDecl() *FieldDecl {
	p.field = ""
	p.expectKeyword("field")
	path, pos := p.path()
	p.field = path
	p.expect(":")
	typ := p.declType()
	p.expect("=")
	e := p.expr()
	p.expect(";")
	return &FieldDecl{Path: path, Pos: pos, Type: typ, Expr: e}
}

// declType parses a declarable type and bounds its size (MaxTypeNodes).
func (p *parser) declType() *Type {
	at := p.peek().pos
	t := p.typ()
	if t.parts() > MaxTypeNodes {
		p.fail(errAt(errcode.RuleTypeError, p.field, at, "type has more than %d parts", MaxTypeNodes))
	}
	return t
}

// typ parses a declarable type.
func (p *parser) typ() *Type {
	t := p.ident()
	p.enter(t.pos)
	defer p.leave()
	p.count(t.pos)
	switch t.text {
	case "Bool":
		return tBool
	case "Int":
		return tInt
	case "Text":
		return tText
	case "Date":
		return tDate
	case "Dec":
		p.expect("(")
		n := p.peek()
		if n.kind != tkInt {
			p.failf(n.pos, "expected a scale (integer 0..%d), found %s", MaxScale, describe(n))
		}
		p.next()
		s, err := strconv.Atoi(n.text)
		if err != nil || s > MaxScale {
			p.fail(errAt(errcode.RuleTypeError, p.field, n.pos, "scale %s out of range 0..%d", n.text, MaxScale))
		}
		p.expect(")")
		return decType(s)
	case "Qty":
		p.expect("(")
		u := p.ident()
		if _, ok := units[u.text]; !ok {
			p.fail(errAt(errcode.UnitMismatch, p.field, u.pos, "unknown unit %q", u.text))
		}
		p.expect(")")
		return qtyType(u.text)
	case "Opt", "List":
		p.expect("(")
		e := p.typ()
		p.expect(")")
		if t.text == "Opt" {
			return optType(e)
		}
		return listType(e)
	case "Map":
		p.expect("(")
		if k := p.ident(); k.text != "Text" {
			p.failf(k.pos, "map keys must be Text")
		}
		p.expect(",")
		e := p.typ()
		p.expect(")")
		return mapType(e)
	case "Record":
		p.expect("(")
		var fs []RecordField
		seen := map[string]bool{}
		for {
			n := p.ident()
			if seen[n.text] {
				p.fail(errAt(errcode.RuleTypeError, p.field, n.pos, "duplicate record member %q", n.text))
			}
			seen[n.text] = true
			p.expect(":")
			fs = append(fs, RecordField{Name: n.text, Type: p.typ()})
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
		p.expect(")")
		return recordType(fs)
	}
	p.failf(t.pos, "unknown type %q", t.text)
	return nil
}

// expr parses let, if, assert, or a binary expression.
func (p *parser) expr() Expr {
	t := p.peek()
	p.enter(t.pos)
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

func (p *parser) letExpr() Expr {
	at := p.next().pos
	name := p.varName()
	p.expect("=")
	v := p.expr()
	h := p.h
	p.expect(";")
	body := p.expr()
	p.built(at, max(h, p.h))
	return &Let{At: at, Name: name.text, Value: v, Body: body}
}

func (p *parser) varName() token {
	t := p.ident()
	if reserved[t.text] {
		p.failf(t.pos, "%q is a reserved word", t.text)
	}
	return t
}

func (p *parser) ifExpr() Expr {
	at := p.next().pos
	p.expect("(")
	c := p.expr()
	h := p.h
	p.expect(")")
	p.expectKeyword("then")
	a := p.expr()
	h = max(h, p.h)
	p.expectKeyword("else")
	b := p.expr()
	p.built(at, max(h, p.h))
	return &If{At: at, Cond: c, Then: a, Else: b}
}

func (p *parser) assertExpr() Expr {
	at := p.next().pos
	p.expect("(")
	c := p.expr()
	h := p.h
	p.expect(",")
	code := p.str()
	p.expect(",")
	msg := p.str()
	p.expect(")")
	p.expect(";")
	body := p.expr()
	p.built(at, max(h, p.h))
	return &Assert{At: at, Cond: c, Code: code.text, CodePos: code.pos, Message: msg.text, Body: body}
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
func (p *parser) binary(level int) Expr {
	if level == len(binaryLevels) {
		return p.unary()
	}
	l := p.binary(level + 1)
	for {
		t := p.peek()
		if t.kind != tkPunct || !contains(binaryLevels[level], t.text) {
			return l
		}
		lh := p.h
		p.next()
		r := p.binary(level + 1)
		// The chain grows a left-nested tree: each operator is one level
		// above the longer of its operands.
		p.built(t.pos, max(lh, p.h))
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

func (p *parser) unary() Expr {
	t := p.peek()
	if t.kind == tkPunct && (t.text == "!" || t.text == "-") {
		p.enter(t.pos)
		defer p.leave()
		p.next()
		x := p.unary()
		p.built(t.pos, p.h)
		return &Unary{At: t.pos, Op: t.text, X: x}
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

func (p *parser) primary() Expr {
	t := p.peek()
	switch t.kind {
	case tkInt:
		p.built(t.pos, 0)
		p.next()
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			p.failf(t.pos, "integer literal %s out of the Int (int64) range", t.text)
		}
		return &IntLit{At: t.pos, Val: v}
	case tkDec:
		p.built(t.pos, 0)
		p.next()
		d, _, err := apd.NewFromString(t.text)
		if err != nil {
			p.failf(t.pos, "bad decimal literal %s", t.text)
		}
		return &DecLit{At: t.pos, Text: t.text, val: d}
	case tkString:
		p.built(t.pos, 0)
		p.next()
		return &StringLit{At: t.pos, Val: t.text}
	case tkPunct:
		if p.isLambdaStart() {
			return p.lambda()
		}
		if t.text == "(" {
			// Parentheses make no node: the expression keeps its height
			// (their nesting counts in expr's depth).
			p.next()
			e := p.expr()
			p.expect(")")
			return e
		}
	case tkIdent:
		p.next()
		switch t.text {
		case "true", "false":
			p.built(t.pos, 0)
			return &BoolLit{At: t.pos, Val: t.text == "true"}
		case "none":
			p.built(t.pos, 0)
			return &NoneLit{At: t.pos}
		}
		if reserved[t.text] && t.text != "field" {
			p.failf(t.pos, "unexpected keyword '%s'", t.text)
		}
		if !p.isPunct("(") {
			p.built(t.pos, 0)
			return &Ident{At: t.pos, Name: t.text}
		}
		if t.text == "date" {
			return p.dateLit(t.pos)
		}
		return p.call(t)
	}
	p.failf(t.pos, "unexpected %s", describe(t))
	return nil
}

func (p *parser) lambda() Expr {
	at := p.next().pos
	var params []string
	for {
		params = append(params, p.varName().text)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if len(params) == 2 && params[0] == params[1] {
		p.failf(at, "lambda parameters must differ")
	}
	p.expect(")")
	p.expect("=>")
	body := p.expr()
	p.built(at, p.h)
	return &Lambda{At: at, Params: params, Body: body}
}

// dateLit parses date("YYYY-MM-DD") and validates the calendar date.
func (p *parser) dateLit(at Pos) Expr {
	p.next() // (
	s := p.str()
	if !validDate(s.text) {
		p.failf(s.pos, "invalid date %q (want an existing YYYY-MM-DD)", s.text)
	}
	p.expect(")")
	p.built(at, 0)
	return &DateLit{At: at, Val: s.text}
}

// validDate reports whether s is an existing calendar date in YYYY-MM-DD form.
func validDate(s string) bool {
	if !dateRe.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func (p *parser) call(name token) Expr {
	p.next() // (
	c := &Call{At: name.pos, Name: name.text}
	h := 0
	for !p.isPunct(")") {
		if name.text == "record" {
			n := p.ident()
			p.expect(":")
			c.Names = append(c.Names, n.text)
		}
		c.Args = append(c.Args, p.expr())
		h = max(h, p.h)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	p.expect(")")
	p.built(name.pos, h)
	return c
}

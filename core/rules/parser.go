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

// finish prefers a lexical error over the parse error it caused.
func (p *parser) finish(err error) error {
	if p.lexErr != nil {
		return p.lexErr
	}
	return err
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
		d, err := p.fieldDecl()
		if err != nil {
			return nil, p.finish(err)
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
	if p.depth > MaxDepth {
		return p.errf(pos, "nesting deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// count charges one syntax node at pos against the node budget.
func (p *parser) count(pos Pos) error {
	p.nodes++
	if p.nodes > p.maxNodes {
		return p.errf(pos, "source has more than %d syntax nodes (BPC_RULES_MAX_NODES)", p.maxNodes)
	}
	return nil
}

// built accounts for an expression node at pos whose tallest child is
// childH high (0 for a leaf): it charges the node and sets p.h to its
// height, which must stay within MaxDepth.
func (p *parser) built(pos Pos, childH int) error {
	if err := p.count(pos); err != nil {
		return err
	}
	p.h = childH + 1
	if p.h > MaxDepth {
		return p.errf(pos, "nesting deeper than %d (an operator chain nests one level per operator: split it with let, or sum a list)", MaxDepth)
	}
	return nil
}

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
	typ, err := p.declType()
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

// declType parses a declarable type and bounds its size (MaxTypeNodes).
func (p *parser) declType() (*Type, error) {
	at := p.peek().pos
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	if t.parts() > MaxTypeNodes {
		return nil, errAt(errcode.RuleTypeError, p.field, at, "type has more than %d parts", MaxTypeNodes)
	}
	return t, nil
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
	if err := p.count(t.pos); err != nil {
		return nil, err
	}
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
	h := p.h
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	body, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.built(at, max(h, p.h)); err != nil {
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
	h := p.h
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
	h = max(h, p.h)
	if err := p.expectKeyword("else"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.built(at, max(h, p.h)); err != nil {
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
	h := p.h
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
	if err := p.built(at, max(h, p.h)); err != nil {
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
		lh := p.h
		p.next()
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		// The chain grows a left-nested tree: each operator is one level
		// above the longer of its operands.
		if err := p.built(t.pos, max(lh, p.h)); err != nil {
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
		if err := p.built(t.pos, p.h); err != nil {
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
	case tkInt, tkDec, tkString:
		if err := p.built(t.pos, 0); err != nil {
			return nil, err
		}
	}
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
			// Parentheses make no node: the expression keeps its height
			// (their nesting counts in expr's depth).
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
			if err := p.built(t.pos, 0); err != nil {
				return nil, err
			}
			return &BoolLit{At: t.pos, Val: t.text == "true"}, nil
		case "none":
			if err := p.built(t.pos, 0); err != nil {
				return nil, err
			}
			return &NoneLit{At: t.pos}, nil
		}
		if reserved[t.text] && t.text != "field" {
			return nil, p.errf(t.pos, "unexpected keyword '%s'", t.text)
		}
		if !p.isPunct("(") {
			if err := p.built(t.pos, 0); err != nil {
				return nil, err
			}
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
	if err := p.built(at, p.h); err != nil {
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
	if err := p.built(at, 0); err != nil {
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
	h := 0
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
		h = max(h, p.h)
		c.Args = append(c.Args, a)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	if err := p.built(name.pos, h); err != nil {
		return nil, err
	}
	return c, nil
}

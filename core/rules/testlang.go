package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
)

// MaxCases bounds cases(N) of one property.
const MaxCases = 1_000_000

// genBound bounds the explicit range of a generated Int(lo, hi).
const genBound = 1_000_000_000_000_000

// TestSuite is a parsed and type-checked tests source bound to a Program.
type TestSuite struct {
	prog   *Program
	tests  []ruleTest
	limits Limits
	// cases is the number of cases a run has: one per example, N per property.
	cases int64
}

// ruleTest is one example or property.
type ruleTest struct {
	name string
	pos  Pos
	// example
	facts   FactSet
	expects []expectation
	// property
	cases  int
	seed   uint64
	varNm  string
	gen    genSpec
	pre    Expr
	post   Expr
	isProp bool
}

// expectation is expect(path, op, literal) or expect_error("CODE").
type expectation struct {
	pos     Pos
	path    string
	op      string
	lit     Expr
	cmp     *Binary // $field op lit, type-checked
	errCode string  // set for expect_error
}

// genSpec describes how to generate values of a type; lo/hi bound a top-level Int.
type genSpec struct {
	typ    *Type
	lo, hi int64
}

// TestReport is the outcome of a test run.
type TestReport struct {
	TotalCases   int          `json:"total_cases"`
	Passed       int          `json:"passed"`
	Failed       int          `json:"failed"`
	FirstFailure *TestFailure `json:"first_failure"`
}

// TestFailure describes the first failing case of a run.
type TestFailure struct {
	Test     string          `json:"test"`
	Case     int             `json:"case"`
	Inputs   json.RawMessage `json:"inputs"`
	Expected string          `json:"expected"`
	Actual   string          `json:"actual"`
}

// RunTests checks the tests source against prog and runs it with runSeed,
// within DefaultLimits; see Limits.RunTests.
func RunTests(ctx context.Context, prog *Program, testSrc string, runSeed uint64) (*TestReport, error) {
	return DefaultLimits().RunTests(ctx, prog, testSrc, runSeed)
}

// RunTests checks the tests source against prog within l and runs it with
// runSeed until it ends or ctx is done (see TestSuite.Run).
func (l Limits) RunTests(ctx context.Context, prog *Program, testSrc string, runSeed uint64) (*TestReport, error) {
	s, err := l.CheckTests(prog, testSrc)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, runSeed)
}

// CheckTests parses and type-checks a tests source with DefaultLimits; see
// Limits.CheckTests.
func CheckTests(prog *Program, src string) (*TestSuite, error) {
	return DefaultLimits().CheckTests(prog, src)
}

// CheckTests parses and type-checks a tests source against prog; errors are
// RULE_PARSE_ERROR / RULE_TYPE_ERROR naming the test and position. The
// source is bounded like a rule source (MaxDepth, l.MaxNodes, the JSON of
// facts included), and the cases it asks for in total by l.MaxCases
// (VALIDATION_ERROR at the test that crosses it).
func (l Limits) CheckTests(prog *Program, src string) (*TestSuite, error) {
	l = l.effective()
	p := newParser(src, l)
	suite := &TestSuite{prog: prog, limits: l}
	seen := map[string]bool{}
	for p.peek().kind != tkEOF {
		t, err := catch(p, func() ruleTest { return p.testDecl(prog) })
		if err != nil {
			return nil, err
		}
		if seen[t.name] {
			return nil, errAt(errcode.RuleTypeError, t.name, t.pos, "duplicate test %s", t.name)
		}
		seen[t.name] = true
		suite.tests = append(suite.tests, t)
		suite.cases += t.numCases()
		if suite.cases > int64(l.MaxCases) {
			return nil, casesLimitError(t.name, t.pos, suite.cases, l.MaxCases)
		}
	}
	if p.lexErr != nil {
		return nil, p.lexErr
	}
	return suite, nil
}

// numCases is how many cases the test contributes to a run.
func (t *ruleTest) numCases() int64 {
	if t.isProp {
		return int64(t.cases)
	}
	return 1
}

func (p *parser) testDecl(prog *Program) ruleTest {
	p.field = ""
	kw := p.peek()
	if kw.kind != tkIdent || (kw.text != "example" && kw.text != "property") {
		p.failf(kw.pos, "expected 'example' or 'property', found %s", describe(kw))
	}
	p.next()
	name := p.ident()
	p.field = name.text
	t := ruleTest{name: name.text, pos: name.pos}
	p.expect(":")
	if kw.text == "example" {
		p.example(prog, &t)
	} else {
		p.property(&t)
	}
	return t
}

func (p *parser) example(prog *Program, t *ruleTest) {
	p.expect("{")
	for !p.isPunct("}") {
		t.facts = append(t.facts, p.factDecl())
	}
	p.next()
	p.expect("=>")
	for {
		t.expects = append(t.expects, p.expectation(prog, t.name))
		p.expect(";")
		if n := p.peek(); n.kind != tkIdent || (n.text != "expect" && n.text != "expect_error") {
			return
		}
	}
}

// factDecl parses fact f("Type", "key") = {json};
func (p *parser) factDecl() Fact {
	p.expectKeyword("fact")
	p.expectKeyword("f")
	p.expect("(")
	typ := p.str()
	p.expect(",")
	key := p.str()
	p.expect(")")
	p.expect("=")
	payload := p.rawJSON()
	p.expect(";")
	return Fact{FactType: typ.text, FactKey: key.text, Payload: payload}
}

// rawJSON reads one JSON value directly from the source after the current
// token and returns its canonical form.
func (p *parser) rawJSON() []byte {
	if p.i != len(p.toks) {
		p.failf(p.peek().pos, "internal: JSON after lookahead")
	}
	lx := p.lx
	for lx.off < len(lx.src) && strings.ContainsRune(" \t\r\n", rune(lx.src[lx.off])) {
		lx.advance()
	}
	start := lx.pos()
	// The JSON is a construct of the source like any other: nested at most
	// MaxDepth deep (reported at the bracket that goes deeper) and charged
	// about one node per value, before anything decodes it.
	values, deepAt := jsonShape(lx.src[lx.off:], MaxDepth)
	if deepAt >= 0 {
		at := *lx
		for at.off < lx.off+deepAt {
			at.advance()
		}
		p.failf(at.pos(), "nesting deeper than %d", MaxDepth)
	}
	p.nodes += values - 1
	p.count(start)
	dec := json.NewDecoder(strings.NewReader(lx.src[lx.off:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		p.failf(start, "invalid JSON payload: %v", err)
	}
	end := lx.off + int(dec.InputOffset())
	for lx.off < end {
		lx.advance()
	}
	out, err := canonjson.Canonicalize(raw)
	if err != nil {
		p.failf(start, "invalid fact payload: %v", err)
	}
	return out
}

// jsonShape scans the JSON value at the start of s, which may be followed by
// more source, up to its end (or the end of s when it is malformed). It
// returns about how many values it holds (brackets, separators and scalars
// each count one) and the offset of the first bracket nested deeper than
// maxDepth, or -1.
func jsonShape(s string, maxDepth int) (values, deepAt int) {
	depth, inString, escaped := 0, false, false
	values = 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return values, -1
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			values++
			if depth > maxDepth {
				return values, i
			}
		case '}', ']':
			depth--
			if depth <= 0 {
				return values, -1
			}
		case ',', ':':
			values++
		case ';':
			if depth == 0 {
				return values, -1
			}
		}
	}
	return values, -1
}

// expectation parses expect(path, op, literal) or expect_error("CODE").
func (p *parser) expectation(prog *Program, test string) expectation {
	kw := p.ident()
	x := expectation{pos: kw.pos}
	if kw.text != "expect" && kw.text != "expect_error" {
		p.failf(kw.pos, "expected 'expect' or 'expect_error', found %s", describe(kw))
	}
	p.expect("(")
	if kw.text == "expect_error" {
		code := p.str()
		if !codeRe.MatchString(code.text) {
			p.fail(errAt(errcode.RuleTypeError, test, code.pos, "error code %q must match ^[A-Z][A-Z0-9_]{2,63}$", code.text))
		}
		x.errCode = code.text
		p.expect(")")
		return x
	}
	path, ppos := p.path()
	x.path = path
	p.expect(",")
	op := p.peek()
	if op.kind != tkPunct || !contains([]string{"==", "!=", "<", "<=", ">", ">="}, op.text) {
		p.failf(op.pos, "expected a comparison operator, found %s", describe(op))
	}
	p.next()
	x.op = op.text
	p.expect(",")
	x.lit = p.expr()
	p.expect(")")
	d := prog.Field(path)
	if d == nil {
		p.fail(errAt(errcode.RuleTypeError, test, ppos, "unknown field %q", path))
	}
	x.cmp = &Binary{At: op.pos, Op: op.text, L: &Ident{At: ppos, Name: "$field"}, R: x.lit}
	c := &checker{decls: map[string]*FieldDecl{}, cur: test}
	if _, err := c.expr(x.cmp, &scope{name: "$field", typ: d.Type}); err != nil {
		p.fail(err)
	}
	return x
}

// property parses cases(N) seed(S) => forall x: Type. implies(pre, post);
func (p *parser) property(t *ruleTest) {
	t.isProp = true
	n := p.intCall("cases")
	if n < 1 || n > MaxCases {
		p.fail(errAt(errcode.RuleTypeError, t.name, t.pos, "cases(%d) must be within 1..%d", n, MaxCases))
	}
	t.cases = int(n)
	seed := p.intCall("seed")
	if seed < 0 {
		p.fail(errAt(errcode.RuleTypeError, t.name, t.pos, "seed(%d) must not be negative", seed))
	}
	t.seed = uint64(seed)
	p.expect("=>")
	p.expectKeyword("forall")
	t.varNm = p.varName().text
	p.expect(":")
	t.gen = p.genType()
	p.expect(".")
	p.expectKeyword("implies")
	p.expect("(")
	t.pre = p.expr()
	p.expect(",")
	t.post = p.expr()
	p.expect(")")
	p.expect(";")
	c := &checker{decls: map[string]*FieldDecl{}, deps: map[string]map[string]bool{t.name: {}}, cur: t.name}
	s := &scope{name: t.varNm, typ: t.gen.typ}
	for _, e := range []Expr{t.pre, t.post} {
		et, err := c.expr(e, s)
		if err != nil {
			p.fail(err)
		}
		if et.Kind != KindBool {
			p.fail(errAt(errcode.RuleTypeError, t.name, e.Position(), "implies needs Bool expressions, found %s", et))
		}
	}
}

// intCall parses name(INT).
func (p *parser) intCall(name string) int64 {
	p.expectKeyword(name)
	p.expect("(")
	v := p.signedInt()
	p.expect(")")
	return v
}

func (p *parser) signedInt() int64 {
	neg := p.isPunct("-")
	if neg {
		p.next()
	}
	t := p.peek()
	if t.kind != tkInt {
		p.failf(t.pos, "expected an integer, found %s", describe(t))
	}
	p.next()
	v, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil {
		p.failf(t.pos, "integer %s out of range", t.text)
	}
	if neg {
		v = -v
	}
	return v
}

// genType parses a generatable type; a top-level Int may carry bounds Int(lo, hi).
func (p *parser) genType() genSpec {
	t := p.peek()
	if t.kind == tkIdent && t.text == "Int" && p.peekAt(1).kind == tkPunct && p.peekAt(1).text == "(" {
		p.next()
		p.next()
		lo := p.signedInt()
		p.expect(",")
		hi := p.signedInt()
		p.expect(")")
		if lo > hi || lo < -genBound || hi > genBound {
			p.fail(errAt(errcode.RuleTypeError, p.field, t.pos, "Int(%d, %d) needs lo ≤ hi within ±10^18", lo, hi))
		}
		return genSpec{typ: tInt, lo: lo, hi: hi}
	}
	typ := p.declType()
	if !generatable(typ) {
		p.fail(errAt(errcode.RuleTypeError, p.field, t.pos, "cannot generate values of %s", typ))
	}
	if n := genParts(typ); n > maxGenNodes {
		p.fail(errAt(errcode.RuleTypeError, p.field, t.pos,
			"cannot generate values of %s: one case may draw up to %d parts, the limit is %d", typ, n, maxGenNodes))
	}
	return genSpec{typ: typ, lo: -1000, hi: 1000}
}

// genParts is the most parts generate may draw for one value of t (a List
// has up to 5 elements), saturating.
func genParts(t *Type) int {
	switch t.Kind {
	case KindOpt:
		return min(1+genParts(t.Elem), maxSize)
	case KindList:
		return min(1+5*genParts(t.Elem), maxSize)
	case KindRecord:
		n := 1
		for _, f := range t.Fields {
			n = min(n+genParts(f.Type), maxSize)
		}
		return n
	}
	return 1
}

// generatable reports whether the property generator supports t.
func generatable(t *Type) bool {
	switch t.Kind {
	case KindBool, KindInt, KindText, KindDate, KindDec, KindQty:
		return true
	case KindOpt, KindList:
		return generatable(t.Elem)
	case KindRecord:
		for _, f := range t.Fields {
			if !generatable(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// casesPerLook is how many cases run between two looks at the context (the
// evaluator also looks every few thousand steps within a case).
const casesPerLook = 64

// Run executes every test: an example is one case, a property N cases. The
// values of a property are drawn from a PCG (math/rand/v2) seeded with the
// property's seed and runSeed, so equal seeds give equal cases.
//
// The number of cases was checked against the suite's MaxCases by
// CheckTests, and is again before anything runs. Once ctx is done the run
// stops within milliseconds and returns ctx's error and no report.
func (s *TestSuite) Run(ctx context.Context, runSeed uint64) (*TestReport, error) {
	if limit := s.limits.effective().MaxCases; s.cases > int64(limit) {
		return nil, casesLimitError("", Pos{Line: 1, Col: 1}, s.cases, limit)
	}
	rep := &TestReport{}
	for _, t := range s.tests {
		// run runs case i of t; an example is its one case.
		run := func(int) (*TestFailure, error) { return s.runExample(ctx, t) }
		if t.isProp {
			rng := rand.New(rand.NewPCG(t.seed, runSeed))
			run = func(i int) (*TestFailure, error) {
				return runProperty(ctx, t, i, generate(rng, t.gen.typ, t.gen.lo, t.gen.hi))
			}
		}
		for i := range t.numCases() {
			if i%casesPerLook == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			rep.TotalCases++
			f, err := run(int(i))
			switch {
			case err != nil:
				return nil, err
			case f != nil:
				rep.Failed++
				if rep.FirstFailure == nil {
					rep.FirstFailure = f
				}
			default:
				rep.Passed++
			}
		}
	}
	return rep, nil
}

// interrupted returns ctx's error when err is the evaluator giving up
// because ctx is done: the run stops instead of recording a failure.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errcode.As(err) == nil {
		return ctx.Err()
	}
	return nil
}

// runExample runs one example; a non-nil error means ctx ended the run.
func (s *TestSuite) runExample(ctx context.Context, t ruleTest) (*TestFailure, error) {
	inputs := make([]map[string]any, len(t.facts))
	for i, f := range t.facts {
		inputs[i] = map[string]any{"fact_type": f.FactType, "fact_key": f.FactKey, "payload": json.RawMessage(f.Payload)}
	}
	raw, _ := canonjson.Marshal(map[string]any{"facts": inputs})
	failure := func(expected, actual string) (*TestFailure, error) {
		return &TestFailure{Test: t.name, Case: 0, Inputs: raw, Expected: expected, Actual: actual}, nil
	}
	res, err := s.prog.evaluate(ctx, t.facts)
	if err := interrupted(ctx, err); err != nil {
		return nil, err
	}
	for _, x := range t.expects {
		if x.errCode != "" {
			if err == nil {
				return failure("error "+x.errCode, "no error")
			}
			if string(errcode.CodeOf(err)) != x.errCode {
				return failure("error "+x.errCode, err.Error())
			}
			continue
		}
		if err != nil {
			return failure(x.path+" "+x.op+" …", err.Error())
		}
		got, _ := res.Value(x.path)
		ev := &evaluator{quiet: 1, ctx: ctx}
		ok, _, cerr := ev.eval(x.cmp, &env{name: "$field", val: got})
		if err := interrupted(ctx, cerr); err != nil {
			return nil, err
		}
		litVal, _, _ := ev.eval(x.lit, nil)
		if cerr != nil {
			return failure(x.path+" "+x.op+" "+brief(litVal), cerr.Error())
		}
		if !ok.B {
			return failure(x.path+" "+x.op+" "+brief(litVal), brief(got))
		}
	}
	return nil, nil
}

// runProperty runs case i of a property; a non-nil error means ctx ended
// the run.
func runProperty(ctx context.Context, t ruleTest, i int, x Value) (*TestFailure, error) {
	failure := func(expected, actual string) (*TestFailure, error) {
		// The inputs are encoded for a failure only: a passing case needs none.
		raw, _ := canonjson.Marshal(map[string]any{t.varNm: x.jsonValue()})
		return &TestFailure{Test: t.name, Case: i, Inputs: raw, Expected: expected, Actual: actual}, nil
	}
	ev := &evaluator{quiet: 1, cur: t.name, ctx: ctx}
	en := &env{name: t.varNm, val: x}
	pre, _, err := ev.eval(t.pre, en)
	if err := interrupted(ctx, err); err != nil {
		return nil, err
	}
	if err != nil {
		return failure("precondition evaluates", err.Error())
	}
	if !pre.B {
		return nil, nil
	}
	post, _, err := ev.eval(t.post, en)
	if err := interrupted(ctx, err); err != nil {
		return nil, err
	}
	if err != nil {
		return failure("postcondition holds", err.Error())
	}
	if !post.B {
		return failure("postcondition holds", "postcondition is false")
	}
	return nil, nil
}

// briefBytes bounds a value quoted in a failure report.
const briefBytes = 1024

// brief renders v as its canonical JSON text, cut after briefBytes bytes
// (a report quotes a value; it need not hold a large one whole).
func brief(v Value) string {
	b, err := v.appendCanonical(nil, briefBytes)
	switch {
	case errors.Is(err, ErrEncodingTooLarge):
		return strings.ToValidUTF8(string(b[:briefBytes]), "") + "…"
	case err != nil:
		return "<invalid>"
	}
	return string(b)
}

// generate draws a value of type t (see LANGUAGE.md §11 for distributions).
func generate(r *rand.Rand, t *Type, lo, hi int64) Value {
	switch t.Kind {
	case KindBool:
		return boolVal(r.IntN(2) == 1)
	case KindInt:
		return intVal(lo + r.Int64N(hi-lo+1))
	case KindText:
		n := r.IntN(9)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return textVal(string(b))
	case KindDate:
		d := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(10000))
		return dateVal(d.Format(time.DateOnly))
	case KindDec, KindQty:
		scale := t.Scale
		if t.Kind == KindQty {
			scale = QtyScale
		}
		c := r.Int64N(2_000_001) - 1_000_000
		return Value{Kind: t.Kind, D: apd.New(c, int32(-scale)), Scale: t.Scale, Unit: t.Unit}
	case KindOpt:
		if r.IntN(4) == 0 {
			return noneVal()
		}
		return someVal(generate(r, t.Elem, -1000, 1000))
	case KindList:
		elems := make([]Value, r.IntN(6))
		for i := range elems {
			elems[i] = generate(r, t.Elem, -1000, 1000)
		}
		return listVal(elems)
	case KindRecord:
		v := Value{Kind: KindRecord}
		for _, f := range t.Fields {
			v.Keys = append(v.Keys, f.Name)
			v.Elems = append(v.Elems, generate(r, f.Type, -1000, 1000))
		}
		return shaped(v)
	}
	return Value{}
}

// String summarises the report on one line.
func (r *TestReport) String() string {
	s := fmt.Sprintf("%d cases, %d passed, %d failed", r.TotalCases, r.Passed, r.Failed)
	if f := r.FirstFailure; f != nil {
		s += fmt.Sprintf("; first failure: %s case %d: expected %s, got %s", f.Test, f.Case, f.Expected, f.Actual)
	}
	return s
}

package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
)

// Fact is one fact of a snapshot: its type, key and canonical JSON payload.
type Fact struct {
	FactType string
	FactKey  string
	Payload  []byte
}

// FactSet is the facts a program is evaluated against; order does not matter.
type FactSet []Fact

// NodeType is the type of a derivation trace node (BPC-PROOF-1).
type NodeType string

// The node types of BPC-PROOF-1.
const (
	NodeConst          NodeType = "CONST"
	NodeFactGet        NodeType = "FACT_GET"
	NodeFieldRef       NodeType = "FIELD_REF"
	NodeOp             NodeType = "OP"
	NodeAssert         NodeType = "ASSERT"
	NodeComplianceEmit NodeType = "COMPLIANCE_EMIT"
)

// Node is one node of a field's derivation trace. Its Data holds only
// strings, booleans, Values (which encode themselves canonically, see
// Value.AppendCanonical; values are immutable once built) and slices of maps
// of those, so canonjson encodes it directly and deterministically.
type Node struct {
	Type     NodeType `json:"type"`
	Data     Data     `json:"data"`
	Children []*Node  `json:"children"`
}

// MarshalCanonical encodes the node tree as BPC-CJSON-1.
func (n *Node) MarshalCanonical() ([]byte, error) { return canonjson.Marshal(n) }

// FieldResult is the value and derivation trace of one field.
type FieldResult struct {
	Path  string
	Type  *Type
	Value Value
	Trace *Node
}

// ComplianceResult is one emitCompliance(...) call that was evaluated.
type ComplianceResult struct {
	Field  string
	Code   string
	OK     bool
	Detail string
}

// Result is the outcome of evaluating a Program: the fields in evaluation
// order and the compliance results in the order they were emitted.
type Result struct {
	Fields     []FieldResult
	Compliance []ComplianceResult
}

// Value returns the value of field path and whether it exists.
func (r *Result) Value(path string) (Value, bool) {
	for _, f := range r.Fields {
		if f.Path == path {
			return f.Value, true
		}
	}
	return Value{}, false
}

// MaxSteps bounds the expression evaluations of one Evaluate call so that
// nested lambdas over long lists cannot run unbounded; exceeding it is a
// VALIDATION_ERROR. It is a count, not a time, so the outcome is deterministic.
const MaxSteps = 5_000_000

// MaxTextBytes bounds the length of a Text value built by concat.
const MaxTextBytes = 1 << 20

// textBytesPerStep is how many bytes of text concat builds per step it is
// charged beyond its own (at most 80 MB of text per MaxSteps).
const textBytesPerStep = 16

// evaluator holds the state of one Evaluate call. It recurses once per level
// of the expression tree (lambda bodies included: they are nested in their
// call), which Parse keeps within MaxDepth; depth is the guard against any
// other tree. Values can outgrow their static type only through fold's
// accumulator and shared parts, so every call's result is held to
// MaxValueDepth and MaxValueNodes.
type evaluator struct {
	steps      int
	depth      int
	ctx        context.Context // nil: not cancellable
	quiet      int             // > 0 while evaluating lambda bodies, whose trace is folded away
	facts      []Fact
	decoded    map[int]any
	values     map[string]Value
	cur        string
	compliance []ComplianceResult
}

// env is an immutable linked list of variable values.
type env struct {
	name string
	val  Value
	next *env
}

func (e *env) lookup(name string) Value {
	for ; e != nil; e = e.next {
		if e.name == name {
			return e.val
		}
	}
	return Value{}
}

// Evaluate evaluates every field in the program's order against facts. Facts
// must have distinct (type, key) pairs and canonical JSON payloads, else
// VALIDATION_ERROR. Runtime failures (division by zero, a failed assert, a
// none passed to requireSome, malformed fact data, overflow) stop the
// evaluation with a typed error naming the field and position.
func (p *Program) Evaluate(facts FactSet) (*Result, error) {
	return p.evaluate(context.Background(), facts)
}

// evaluate is Evaluate, stopped with ctx's error once ctx is done (checked
// every few thousand steps). A compile passes a context that never ends:
// MaxSteps bounds it.
func (p *Program) evaluate(ctx context.Context, facts FactSet) (*Result, error) {
	sorted := slices.Clone(facts)
	slices.SortFunc(sorted, compareFacts)
	for i, f := range sorted {
		if i > 0 && compareFacts(sorted[i-1], f) == 0 {
			return nil, errcode.Invalid("facts", "duplicate fact (%s, %s)", f.FactType, f.FactKey)
		}
		if !canonjson.Valid(f.Payload) {
			return nil, errcode.Invalid("facts", "payload of fact (%s, %s) is not canonical JSON", f.FactType, f.FactKey)
		}
	}
	ev := &evaluator{ctx: ctx, facts: sorted, decoded: map[int]any{}, values: map[string]Value{}}
	res := &Result{}
	for _, d := range p.Fields {
		ev.cur = d.Path
		v, n, err := ev.eval(d.Expr, nil)
		if err != nil {
			return nil, err
		}
		ev.values[d.Path] = v
		res.Fields = append(res.Fields, FieldResult{Path: d.Path, Type: d.Type, Value: v, Trace: n})
	}
	res.Compliance = ev.compliance
	return res, nil
}

func compareFacts(a, b Fact) int {
	if c := strings.Compare(a.FactType, b.FactType); c != 0 {
		return c
	}
	return strings.Compare(a.FactKey, b.FactKey)
}

// fact returns the decoded payload of sorted fact i.
func (ev *evaluator) fact(i int) any {
	if v, ok := ev.decoded[i]; ok {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(ev.facts[i].Payload))
	dec.UseNumber()
	var v any
	// The payload was validated as canonical JSON, so decoding cannot fail.
	_ = dec.Decode(&v)
	ev.decoded[i] = v
	return v
}

func (ev *evaluator) rtErr(code errcode.Code, pos Pos, format string, args ...any) error {
	return errAt(code, ev.cur, pos, format, args...)
}

func (ev *evaluator) badData(pos Pos, format string, args ...any) error {
	return ev.rtErr(errcode.Validation, pos, format, args...)
}

// node builds a trace node, dropping nil children.
func node(t NodeType, data Data, children ...*Node) *Node {
	kids := make([]*Node, 0, len(children))
	for _, c := range children {
		if c != nil {
			kids = append(kids, c)
		}
	}
	return &Node{Type: t, Data: data, Children: kids}
}

// opNode builds an OP node; inside lambda bodies (quiet > 0) no trace is built.
func (ev *evaluator) opNode(op string, v Value, children ...*Node) *Node {
	if ev.quiet > 0 {
		return nil
	}
	return node(NodeOp, valueData(op, v), children...)
}

// constant is what a literal evaluates to: its value v and a CONST node
// (none inside a lambda body).
func (ev *evaluator) constant(v Value) (Value, *Node, error) {
	if ev.quiet > 0 {
		return v, nil, nil
	}
	return v, node(NodeConst, valueData("", v)), nil
}

// checkEvery is how many steps pass between two looks at the context: a
// step takes well under a microsecond, so a cancel is seen within
// milliseconds at a cost too small to measure.
const checkEvery = 1 << 12

// eval evaluates e and returns its value and trace node (nil for a variable reference).
func (ev *evaluator) eval(e Expr, en *env) (Value, *Node, error) {
	ev.steps++
	if ev.steps > MaxSteps {
		return Value{}, nil, ev.rtErr(errcode.Validation, e.Position(), "evaluation exceeded %d steps", MaxSteps)
	}
	if ev.steps%checkEvery == 0 && ev.ctx != nil {
		if err := ev.ctx.Err(); err != nil {
			return Value{}, nil, err
		}
	}
	if ev.depth >= guardDepth {
		return Value{}, nil, ev.rtErr(errcode.RuleParseError, e.Position(), "nesting deeper than %d", MaxDepth)
	}
	ev.depth++
	v, n, err := ev.evalNode(e, en)
	ev.depth--
	return v, n, err
}

// evalNode evaluates one expression node for eval.
func (ev *evaluator) evalNode(e Expr, en *env) (Value, *Node, error) {
	switch e := e.(type) {
	case *BoolLit:
		return ev.constant(boolVal(e.Val))
	case *IntLit:
		return ev.constant(intVal(e.Val))
	case *DecLit:
		d := e.val
		if d == nil { // a DecLit built without the parser
			var err error
			if d, _, err = apd.NewFromString(e.Text); err != nil {
				return Value{}, nil, ev.badData(e.At, "bad decimal literal %s", e.Text)
			}
		}
		return ev.constant(Value{Kind: KindDec, D: d, Scale: decLitScale(e.Text)})
	case *StringLit:
		return ev.constant(textVal(e.Val))
	case *DateLit:
		return ev.constant(dateVal(e.Val))
	case *NoneLit:
		return ev.constant(noneVal())
	case *Ident:
		return en.lookup(e.Name), nil, nil
	case *Unary:
		x, xn, err := ev.eval(e.X, en)
		if err != nil {
			return Value{}, nil, err
		}
		var v Value
		switch {
		case e.Op == "!":
			v = boolVal(!x.B)
		case x.Kind == KindInt:
			if x.I == math.MinInt64 {
				return Value{}, nil, ev.rtErr(errcode.Validation, e.At, "Int overflow in unary -")
			}
			v = intVal(-x.I)
		default:
			d := new(apd.Decimal).Neg(x.D)
			if d.IsZero() {
				d.Negative = false
			}
			v = x
			v.D = d
		}
		op := "neg"
		if e.Op == "!" {
			op = "not"
		}
		return v, ev.opNode(op, v, xn), nil
	case *Binary:
		return ev.binary(e, en)
	case *If:
		c, cn, err := ev.eval(e.Cond, en)
		if err != nil {
			return Value{}, nil, err
		}
		branch := e.Else
		if c.B {
			branch = e.Then
		}
		v, bn, err := ev.eval(branch, en)
		if err != nil {
			return Value{}, nil, err
		}
		return v, ev.opNode("if", v, cn, bn), nil
	case *Let:
		x, xn, err := ev.eval(e.Value, en)
		if err != nil {
			return Value{}, nil, err
		}
		v, bn, err := ev.eval(e.Body, &env{name: e.Name, val: x, next: en})
		if err != nil {
			return Value{}, nil, err
		}
		if ev.quiet > 0 {
			return v, nil, nil
		}
		n := node(NodeOp, valueData("let", v, Member{"name", e.Name}), xn, bn)
		return v, n, nil
	case *Assert:
		c, cn, err := ev.eval(e.Cond, en)
		if err != nil {
			return Value{}, nil, err
		}
		if !c.B {
			return Value{}, nil, ev.rtErr(errcode.Code(e.Code), e.At, "assertion failed: %s", e.Message)
		}
		v, bn, err := ev.eval(e.Body, en)
		if err != nil {
			return Value{}, nil, err
		}
		return v, node(NodeAssert, Data{Members: []Member{{"code", e.Code}, {"ok", true}}}, cn, bn), nil
	case *Call:
		v, n, err := ev.call(e, en)
		if err == nil && (int(v.depth) > MaxValueDepth || v.size() > MaxValueNodes) {
			return Value{}, nil, ev.rtErr(errcode.Validation, e.At,
				"%s builds a value nested deeper than %d or with more than %d parts", e.Name, MaxValueDepth, MaxValueNodes)
		}
		return v, n, err
	}
	return Value{}, nil, ev.rtErr(errcode.Internal, e.Position(), "unsupported expression")
}

func (ev *evaluator) binary(e *Binary, en *env) (Value, *Node, error) {
	l, ln, err := ev.eval(e.L, en)
	if err != nil {
		return Value{}, nil, err
	}
	// && and || short-circuit: the right side is neither evaluated nor traced.
	if (e.Op == "&&" && !l.B) || (e.Op == "||" && l.B) {
		return l, ev.opNode(e.Op, l, ln), nil
	}
	r, rn, err := ev.eval(e.R, en)
	if err != nil {
		return Value{}, nil, err
	}
	v, err := ev.apply(e, l, r)
	if err != nil {
		return Value{}, nil, err
	}
	return v, ev.opNode(e.Op, v, ln, rn), nil
}

// apply computes a binary operator on two evaluated operands.
func (ev *evaluator) apply(e *Binary, l, r Value) (Value, error) {
	switch e.Op {
	case "&&", "||":
		return r, nil
	case "==":
		return boolVal(valueEqual(l, r)), nil
	case "!=":
		return boolVal(!valueEqual(l, r)), nil
	case "<":
		return boolVal(compareValues(l, r) < 0), nil
	case "<=":
		return boolVal(compareValues(l, r) <= 0), nil
	case ">":
		return boolVal(compareValues(l, r) > 0), nil
	case ">=":
		return boolVal(compareValues(l, r) >= 0), nil
	}
	if l.Kind == KindInt {
		return ev.intOp(e, l.I, r.I)
	}
	var d *apd.Decimal
	var out Value
	var err error
	switch {
	case e.Op == "+" || e.Op == "-":
		d = new(apd.Decimal)
		if e.Op == "+" {
			_, err = decCtx.Add(d, l.D, r.D)
		} else {
			_, err = decCtx.Sub(d, l.D, r.D)
		}
		out = l
	case e.Op == "*":
		d = new(apd.Decimal)
		_, err = decCtx.Mul(d, l.D, r.D)
		switch {
		case l.Kind == KindQty:
			out = l
		case r.Kind == KindQty:
			out = r
		default:
			out = Value{Kind: KindDec, Scale: l.Scale + r.Scale}
		}
	default: // "/": Dec/Dec or Qty/Dec, result at the dividend's scale.
		if r.D.IsZero() {
			return Value{}, ev.rtErr(errcode.DivisionByZero, e.At, "division by zero")
		}
		out = l
		d, err = divRound(l.D, r.D, valueScale(l))
	}
	if err != nil {
		return Value{}, ev.rtErr(errcode.Validation, e.At, "decimal arithmetic failed: %v", err)
	}
	if d, err = quantize(d, valueScale(out)); err != nil {
		return Value{}, ev.rtErr(errcode.Validation, e.At, "decimal arithmetic failed: %v", err)
	}
	if !inRange(d) {
		return Value{}, ev.rtErr(errcode.Validation, e.At, "decimal overflow: |result| must be below 10^%d", maxIntDigits)
	}
	out.D = d
	return out, nil
}

// valueScale is the number of fractional digits of a Dec or Qty value.
func valueScale(v Value) int {
	if v.Kind == KindQty {
		return QtyScale
	}
	return v.Scale
}

func (ev *evaluator) intOp(e *Binary, a, b int64) (Value, error) {
	overflow := false
	var r int64
	switch e.Op {
	case "+":
		r = a + b
		overflow = (b > 0 && r < a) || (b < 0 && r > a)
	case "-":
		r = a - b
		overflow = (b < 0 && r < a) || (b > 0 && r > a)
	case "*":
		r = a * b
		overflow = a != 0 && (r/a != b || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64))
	}
	if overflow {
		return Value{}, ev.rtErr(errcode.Validation, e.At, "Int overflow in %d %s %d", a, e.Op, b)
	}
	return intVal(r), nil
}

// valueEqual compares two values of equatable, unified types.
func valueEqual(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindOpt:
		if a.IsSome() != b.IsSome() {
			return false
		}
		return !a.IsSome() || valueEqual(a.Elems[0], b.Elems[0])
	case KindList:
		if len(a.Elems) != len(b.Elems) {
			return false
		}
		for i := range a.Elems {
			if !valueEqual(a.Elems[i], b.Elems[i]) {
				return false
			}
		}
		return true
	}
	return compareValues(a, b) == 0
}

// compareValues orders two scalar values of the same kind.
func compareValues(a, b Value) int {
	switch a.Kind {
	case KindBool:
		switch {
		case a.B == b.B:
			return 0
		case b.B:
			return -1
		}
		return 1
	case KindInt:
		switch {
		case a.I < b.I:
			return -1
		case a.I > b.I:
			return 1
		}
		return 0
	case KindDec, KindQty:
		return a.D.Cmp(b.D)
	case KindText, KindDate:
		return strings.Compare(a.S, b.S)
	}
	return 0
}

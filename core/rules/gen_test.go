package rules

import (
	"fmt"
	"slices"
	"strings"
)

// progGen turns fuzz input into sources: each input byte chooses a
// construct, a type, a size or a literal, and a source grows until the
// input (or a byte budget) runs out, then closes every open construct with
// leaves. The sources are well formed and mostly well typed, so the fuzzer
// spends its time in the checker and evaluator rather than on syntax
// errors; sizes are mostly small but often far beyond MaxDepth (operator
// chains, unary runs, parentheses, lets, declared types, JSON), so deep and
// wide programs are the common case, not a lucky one.
//
// It mirrors the parser's accounting: every expression reports its height
// and every syntax node is counted, so a target can check that the parser
// admits exactly what the limits allow.
type progGen struct {
	in     []byte
	pos    int
	b      strings.Builder
	maxLen int

	nodes     int  // syntax nodes written, counted as Parse counts them
	tooDeep   bool // a construct was written more than MaxDepth deep
	vars      []genVar
	fields    []string // Int fields declared so far
	nextVar   int
	lambdaLvl int
}

type genVar struct {
	name string
	typ  genType
}

// genType is the small set of types the generator writes expressions of.
type genType int

const (
	gInt genType = iota
	gBool
	gDec
	gText
	gOptInt
	gListInt
	numGenTypes
)

func (t genType) String() string {
	return [...]string{"Int", "Bool", "Dec(2)", "Text", "Opt(Int)", "List(Int)"}[t]
}

func newProgGen(in []byte, maxLen int) *progGen { return &progGen{in: in, maxLen: maxLen} }

// pick returns the next input byte modulo n (0 once the input is used up).
func (g *progGen) pick(n int) int {
	if g.pos >= len(g.in) {
		return 0
	}
	c := g.in[g.pos]
	g.pos++
	return int(c) % n
}

// size returns a repetition count: mostly 1 to 8, often just within
// MaxDepth, sometimes several times beyond it.
func (g *progGen) size() int {
	switch b := g.pick(256); {
	case b < 224:
		return b%8 + 1
	case b < 248:
		return MaxDepth - 24 + (b - 224) // 176 … 199
	default:
		return MaxDepth + (b-247)*120 // 320 … 1160
	}
}

// done reports whether the generator should only close what is open.
func (g *progGen) done() bool { return g.pos >= len(g.in) || g.b.Len() > g.maxLen }

func (g *progGen) w(s ...string) {
	for _, x := range s {
		g.b.WriteString(x)
	}
}

// node counts one syntax node of height childH+1 and returns its height.
func (g *progGen) node(childH int) int {
	g.nodes++
	if childH+1 > MaxDepth {
		g.tooDeep = true
	}
	return childH + 1
}

func (g *progGen) freshVar(t genType) string {
	g.nextVar++
	name := fmt.Sprintf("v%d", g.nextVar)
	g.vars = append(g.vars, genVar{name, t})
	return name
}

// varOf returns a variable of type t in scope, if any.
func (g *progGen) varOf(t genType) (string, bool) {
	var names []string
	for _, v := range g.vars {
		if v.typ == t {
			names = append(names, v.name)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	return names[g.pick(len(names))], true
}

// source writes a rule source of a few fields (some with deep declared
// types) and returns it.
func (g *progGen) source() string {
	for i := 0; i == 0 || (!g.done() && i < 12); i++ {
		g.vars = g.vars[:0]
		path := fmt.Sprintf("f.n%d", i)
		if g.pick(8) == 0 {
			// A declared type nested k levels deep; its value is none.
			k := g.size()
			g.w("field ", path, " : ", strings.Repeat("Opt(", k), "Int", strings.Repeat(")", k), " = none;\n")
			g.nodes += k + 2
			if k+1 > MaxDepth {
				g.tooDeep = true
			}
			continue
		}
		t := genType(g.pick(int(numGenTypes)))
		g.w("field ", path, " : ", t.String(), " = ")
		g.nodes++ // the declared type (List(Int) and Opt(Int) are two)
		if t == gOptInt || t == gListInt {
			g.nodes++
		}
		g.expr(t, 0)
		g.w(";\n")
		if t == gInt {
			g.fields = append(g.fields, path)
		}
	}
	return g.b.String()
}

// leaf writes a literal of t (or a variable) and returns its height.
func (g *progGen) leaf(t genType) int {
	if name, ok := g.varOf(t); ok && g.pick(2) == 0 {
		g.w(name)
		return g.node(0)
	}
	switch t {
	case gInt:
		g.w(fmt.Sprint(g.pick(100)))
	case gBool:
		g.w([...]string{"true", "false"}[g.pick(2)])
	case gDec:
		g.w(fmt.Sprintf("%d.%02d", g.pick(10), g.pick(100)))
	case gText:
		g.w(fmt.Sprintf("%q", strings.Repeat("x", g.pick(4))))
	case gOptInt:
		g.w("none")
	case gListInt:
		g.w("list(")
		h := g.leaf(gInt)
		g.w(")")
		return g.node(h)
	}
	return g.node(0)
}

// operand writes an operand of an operator: a leaf, or any expression in
// parentheses (a let, if or assert would otherwise swallow what follows,
// and a looser operator would regroup the chain).
func (g *progGen) operand(t genType, d int) int {
	if g.pick(3) == 0 {
		return g.leaf(t)
	}
	g.w("(")
	h := g.expr(t, d+1)
	g.w(")")
	return h
}

// call writes a call of the built-in name with arguments of the types args
// and returns its height.
func (g *progGen) call(name string, d int, args ...genType) int {
	g.w(name, "(")
	h := 0
	for i, t := range args {
		if i > 0 {
			g.w(", ")
		}
		h = max(h, g.expr(t, d+1))
	}
	g.w(")")
	return g.node(h)
}

// prefixRun writes a run of the unary operator op (as many as size draws)
// before an operand of t and returns its height.
func (g *progGen) prefixRun(op string, t genType, d int) int {
	k := g.size()
	g.w(strings.Repeat(op, k))
	h := g.operand(t, d+k)
	for range k {
		h = g.node(h)
	}
	return h
}

// chain writes n operands of t joined by operators of one precedence level,
// chosen from levels: a left-nested tree n-1 operators tall.
func (g *progGen) chain(t genType, levels [][]string, n, d int) int {
	ops := levels[g.pick(len(levels))]
	h := g.operand(t, d+1)
	for range n - 1 {
		g.w(" ", ops[g.pick(len(ops))], " ")
		h = g.node(max(h, g.operand(t, d+1)))
	}
	return h
}

// expr writes an expression of type t at generator depth d and returns
// its height.
func (g *progGen) expr(t genType, d int) int {
	if g.done() || d > 2*MaxDepth {
		return g.leaf(t)
	}
	switch c := g.pick(16); {
	case c < 3:
		return g.leaf(t)
	case c == 3: // parentheses, possibly very many
		k := g.size()
		g.w(strings.Repeat("(", k))
		h := g.expr(t, d+k)
		g.w(strings.Repeat(")", k))
		if k+1 > MaxDepth {
			g.tooDeep = true // parentheses nest like everything else
		}
		return h
	case c == 4: // let
		vt := genType(g.pick(int(numGenTypes)))
		g.w("let ")
		saved := len(g.vars)
		g.nextVar++
		name := fmt.Sprintf("v%d", g.nextVar)
		g.w(name, " = ")
		hv := g.expr(vt, d+1)
		g.w("; ")
		g.vars = append(g.vars, genVar{name, vt})
		hb := g.expr(t, d+1)
		g.vars = g.vars[:saved]
		return g.node(max(hv, hb))
	case c == 5: // if
		g.w("if (")
		hc := g.expr(gBool, d+1)
		g.w(") then ")
		ha := g.expr(t, d+1)
		g.w(" else ")
		hb := g.expr(t, d+1)
		return g.node(max(hc, ha, hb))
	case c == 6: // assert
		g.w("assert(")
		hc := g.expr(gBool, d+1)
		g.w(`, "GEN_ASSERT", "m"); `)
		hb := g.expr(t, d+1)
		return g.node(max(hc, hb))
	}
	switch t {
	case gInt:
		return g.intExpr(d)
	case gBool:
		return g.boolExpr(d)
	case gDec:
		return g.decExpr(d)
	case gText:
		return g.textExpr(d)
	case gOptInt:
		return g.call("some", d, gInt)
	case gListInt:
		return g.listExpr(d)
	}
	return g.leaf(t)
}

func (g *progGen) intExpr(d int) int {
	switch g.pick(9) {
	case 0:
		return g.chain(gInt, [][]string{{"+", "-"}, {"*"}}, g.size(), d)
	case 1:
		return g.prefixRun("- ", gInt, d)
	case 2:
		return g.call("len", d, gListInt)
	case 3:
		return g.call("unwrapOr", d, gOptInt, gInt)
	case 4:
		if g.lambdaLvl >= 2 {
			return g.leaf(gInt)
		}
		g.w("fold(")
		hl := g.expr(gListInt, d+1)
		g.w(", ")
		hi := g.expr(gInt, d+1)
		saved := len(g.vars)
		acc, x := g.freshVar(gInt), g.freshVar(gInt)
		g.w(", (", acc, ", ", x, ") => ")
		g.lambdaLvl++
		hb := g.expr(gInt, d+2)
		g.lambdaLvl--
		g.vars = g.vars[:saved]
		g.w(")")
		return g.node(max(hl, hi, g.node(hb)))
	case 5:
		if len(g.fields) == 0 {
			return g.leaf(gInt)
		}
		g.w(`field("`, g.fields[g.pick(len(g.fields))], `")`)
		return g.node(g.node(0))
	case 6: // a fact: toInt(requireSome(getFact("t", "kN"), "GEN_MISSING", "m"))
		g.w(fmt.Sprintf(`toInt(requireSome(getFact("t", "k%d"), "GEN_MISSING", "m"))`, g.pick(4)))
		g.nodes += 2 + 2 // the four string literals
		return g.node(g.node(g.node(1)))
	case 7:
		g.w("toInt(toText(")
		h := g.expr(gInt, d+2)
		g.w("))")
		return g.node(g.node(h))
	}
	return g.leaf(gInt)
}

func (g *progGen) boolExpr(d int) int {
	switch g.pick(6) {
	case 0:
		return g.chain(gBool, [][]string{{"&&"}, {"||"}, {"==", "!="}}, g.size(), d)
	case 1:
		return g.prefixRun("!", gBool, d)
	case 2:
		hl := g.operand(gInt, d+1)
		g.w(" ", []string{"<", "<=", ">", ">=", "==", "!="}[g.pick(6)], " ")
		hr := g.operand(gInt, d+1)
		return g.node(max(hl, hr))
	case 3:
		return g.call("isSome", d, gOptInt)
	}
	return g.leaf(gBool)
}

func (g *progGen) decExpr(d int) int {
	switch g.pick(5) {
	case 0:
		return g.chain(gDec, [][]string{{"+", "-"}, {"/"}}, g.size(), d)
	case 1:
		g.w("toDec(")
		h := g.expr(gInt, d+1)
		g.w(", 2)")
		return g.node(max(h, g.node(0)))
	case 2:
		g.w("-")
		return g.node(g.operand(gDec, d+1))
	}
	return g.leaf(gDec)
}

func (g *progGen) textExpr(d int) int {
	switch g.pick(3) {
	case 0:
		return g.call("concat", d, slices.Repeat([]genType{gText}, g.pick(4)+1)...)
	case 1:
		return g.call("toText", d, gInt)
	}
	return g.leaf(gText)
}

func (g *progGen) listExpr(d int) int {
	switch g.pick(4) {
	case 0, 1: // list(…), sometimes wide
		n := g.pick(6) + 1
		if g.pick(8) == 0 {
			n = g.size() * 2
		}
		return g.call("list", d, slices.Repeat([]genType{gInt}, n)...)
	case 2:
		if g.lambdaLvl >= 2 {
			return g.leaf(gListInt)
		}
		fn, bt := "map", gInt
		if g.pick(2) == 0 {
			fn, bt = "filter", gBool
		}
		g.w(fn, "(")
		hl := g.expr(gListInt, d+1)
		saved := len(g.vars)
		x := g.freshVar(gInt)
		g.w(", (", x, ") => ")
		g.lambdaLvl++
		hb := g.expr(bt, d+2)
		g.lambdaLvl--
		g.vars = g.vars[:saved]
		g.w(")")
		return g.node(max(hl, g.node(hb)))
	}
	return g.leaf(gListInt)
}

// json writes a JSON value, arrays and objects nested up to size() deep.
func (g *progGen) json() string {
	var b strings.Builder
	var value func(depth int)
	value = func(depth int) {
		switch c := g.pick(8); {
		case g.done() || c < 3:
			b.WriteString([...]string{"1", `"s"`, "null", "true", "-7", `"1.50"`}[g.pick(6)])
		case c == 3: // a run of nesting, often deeper than MaxDepth
			k := g.size()
			if k+depth > MaxDepth {
				g.tooDeep = true
			}
			b.WriteString(strings.Repeat(`[{"k":`, k/2+1))
			value(depth + k)
			b.WriteString(strings.Repeat(`}]`, k/2+1))
		case c < 6:
			b.WriteString("[")
			for i := range g.pick(4) {
				if i > 0 {
					b.WriteString(",")
				}
				value(depth + 1)
			}
			b.WriteString("]")
		default:
			b.WriteString("{")
			for i := range g.pick(4) {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"m%d":`, i)
				value(depth + 1)
			}
			b.WriteString("}")
		}
	}
	value(0)
	return b.String()
}

// facts returns a fact set for the generated programs (keys k0 … k3 of type t).
func (g *progGen) facts() FactSet {
	var fs FactSet
	for i := range g.pick(5) {
		fs = append(fs, Fact{FactType: "t", FactKey: fmt.Sprintf("k%d", i), Payload: []byte(g.json())})
	}
	return fs
}

// testsSource writes a tests source against a program with Int fields
// f.n0 … (the names in fields): examples with facts and expectations,
// properties with generated types. It returns the source and the number of
// cases it asks for.
func (g *progGen) testsSource(fields []string) (string, int64) {
	g.fields = nil // tests' expressions have no fields to reference
	var cases int64
	for i := 0; i == 0 || (!g.done() && i < 8); i++ {
		g.vars = g.vars[:0]
		if g.pick(2) == 0 && len(fields) > 0 {
			fmt.Fprintf(&g.b, "example e%d: {\n", i)
			for j := range g.pick(3) {
				fmt.Fprintf(&g.b, "  fact f(\"t\", \"k%d\") = %s;\n", j, g.json())
			}
			g.w("} => ")
			for j := range g.pick(3) + 1 {
				if j > 0 {
					g.w(" ")
				}
				if g.pick(4) == 0 {
					g.w(`expect_error("GEN_MISSING");`)
					continue
				}
				g.w("expect(", fields[g.pick(len(fields))], ", ", []string{"==", "!=", "<", ">="}[g.pick(4)], ", ")
				g.expr(gInt, 1)
				g.w(");")
			}
			g.w("\n")
			cases++
			continue
		}
		n := []int{1, 10, 100, 500, 1000}[g.pick(5)]
		typ := []string{"Int", "Bool", "Dec(2)", "Text", "Date", "Opt(Int)", "List(Int)", "Record(a: Int, b: Opt(Bool))", "Int(-3, 3)"}[g.pick(9)]
		if g.pick(8) == 0 {
			k := g.size()
			typ = strings.Repeat("List(Opt(", k) + "Int" + strings.Repeat("))", k)
			if 2*k+1 > MaxDepth {
				g.tooDeep = true
			}
		}
		fmt.Fprintf(&g.b, "property p%d: cases(%d) seed(%d) => forall x: %s. implies(", i, n, g.pick(256), typ)
		if typ == "Int" || typ == "Int(-3, 3)" {
			g.vars = append(g.vars, genVar{"x", gInt})
		}
		g.expr(gBool, 1)
		g.w(", ")
		g.expr(gBool, 1)
		g.w(");\n")
		cases += int64(n)
	}
	return g.b.String(), cases
}

package rules

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpc-platform/bpc/core/errcode"
)

// The fuzz targets below feed the parser, the checker, the evaluator and the
// tests language with programs built by progGen from the fuzz input, so
// that deep and wide programs (operator chains, unary runs, parentheses,
// lets, declared types and JSON far beyond MaxDepth, lists thousands wide)
// are what the fuzzer explores. Each asserts that nothing panics, that an
// outcome is a result or an *errcode.Error with one of the codes its stage
// may give (located at a real line:col), and that the limits hold exactly.
// `make fuzz` runs each for FUZZTIME; scripts/test.sh for a few seconds.

// Codes each stage may return for a generated source.
var (
	parseCodes = []errcode.Code{errcode.RuleParseError, errcode.RuleTypeError, errcode.UnitMismatch}
	checkCodes = append(slices.Clone(parseCodes), errcode.RuleCycleDetected)
	evalCodes  = []errcode.Code{errcode.Validation, errcode.DivisionByZero, "GEN_ASSERT", "GEN_MISSING"}
)

// requireTyped fails unless err is an *errcode.Error with one of codes,
// located at a real position when it has one.
func requireTyped(t *testing.T, src string, err error, codes []errcode.Code) {
	t.Helper()
	e := errcode.As(err)
	if e == nil {
		t.Fatalf("untyped error %v\nsource: %.500s", err, src)
	}
	if !slices.Contains(codes, e.Code) {
		t.Fatalf("unexpected code %s: %v\nsource: %.500s", e.Code, err, src)
	}
	if _, pos, ok := ErrorLocation(err); ok && (pos.Line < 1 || pos.Col < 1) {
		t.Fatalf("bad position %v: %v", pos, err)
	}
}

// fileShape measures a parsed file without recursion (it must not trust the
// limits it checks): the height of its tallest expression or declared type
// and its syntax nodes, counted as Parse counts them.
func fileShape(f *File) (height, nodes int) {
	type item struct {
		e     Expr
		t     *Type
		level int
	}
	var stack []item
	for _, d := range f.Fields {
		stack = append(stack, item{e: d.Expr, level: 1}, item{t: d.Type, level: 1})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nodes++
		height = max(height, it.level)
		push := func(e Expr) { stack = append(stack, item{e: e, level: it.level + 1}) }
		pushT := func(t *Type) { stack = append(stack, item{t: t, level: it.level + 1}) }
		if it.t != nil {
			switch it.t.Kind {
			case KindOpt, KindList, KindMap:
				pushT(it.t.Elem)
			case KindRecord:
				for _, m := range it.t.Fields {
					pushT(m.Type)
				}
			}
			continue
		}
		switch e := it.e.(type) {
		case *Unary:
			push(e.X)
		case *Binary:
			push(e.L)
			push(e.R)
		case *If:
			push(e.Cond)
			push(e.Then)
			push(e.Else)
		case *Let:
			push(e.Value)
			push(e.Body)
		case *Assert:
			push(e.Cond)
			push(e.Body)
		case *Call:
			for _, a := range e.Args {
				push(a)
			}
		case *Lambda:
			push(e.Body)
		}
	}
	return height, nodes
}

// seed encodes generator choices as fuzz input (pick(n) reads byte % n).
func seed(choices ...int) []byte {
	b := make([]byte, len(choices))
	for i, c := range choices {
		b[i] = byte(c)
	}
	return b
}

// repeat is choices repeated n times.
func repeat(n int, choices ...int) []int {
	var out []int
	for range n {
		out = append(out, choices...)
	}
	return out
}

// generatorSeeds are inputs that make progGen write the reported
// reproductions, each beyond MaxDepth: `field f.n0 : Int = 1 + 1 + …`
// (1160 operands), a `true && true && …` chain, a run of unary minus,
// parentheses and a deeply nested declared type; plus inputs of all zeros
// and all ones.
func generatorSeeds() [][]byte {
	// source: not a deep type (1), type Int (0) or Bool (1); expr: go to
	// the type's own productions (7); intExpr/boolExpr: chain (0); size
	// 255; level (0); then per operand: a leaf (0) of value 1 (1 for Int),
	// and per operator the first of the level (0).
	plus := seed(append([]int{1, 0, 7, 0, 255, 0, 0, 1}, repeat(1159, 0, 0, 1)...)...)
	and := seed(append([]int{1, 1, 7, 0, 255, 0, 0, 0}, repeat(1159, 0, 0, 0)...)...)
	// intExpr: unary run (1) of 255; operand: a leaf (0) 1.
	minus := seed(1, 0, 7, 1, 255, 0, 1)
	// expr: parentheses (3), 255 of them around a leaf.
	parens := seed(1, 0, 3, 255, 0, 1)
	// source: a deep declared type (0) of 255 levels.
	deepType := seed(0, 255)
	return [][]byte{plus, and, minus, parens, deepType, nil, bytes.Repeat([]byte{0}, 64), bytes.Repeat([]byte{0xff}, 64),
		[]byte("field a : Int = 1+1+1+1;"), bytes.Repeat([]byte{7, 4, 1, 200}, 50)}
}

// FuzzParseGenerated: the parser admits a generated source exactly when it
// is within the limits. An admitted file is at most MaxDepth tall with at
// most MaxNodes nodes (measured without recursion), counted as the
// generator counted them; a source with any construct deeper than MaxDepth
// is a RULE_PARSE_ERROR.
func FuzzParseGenerated(f *testing.F) {
	for _, s := range generatorSeeds() {
		f.Add(uint16(0), s)
		f.Add(uint16(300), s)
	}
	f.Fuzz(func(t *testing.T, budget uint16, in []byte) {
		limits := Limits{MaxNodes: int(budget)} // 0: the default
		g := newProgGen(in, 64<<10)
		src := g.source()
		file, err := limits.Parse(src)
		if err != nil {
			requireTyped(t, src, err, parseCodes)
			return
		}
		if g.tooDeep {
			t.Fatalf("admitted a construct deeper than %d:\n%.500s", MaxDepth, src)
		}
		height, nodes := fileShape(file)
		if height > MaxDepth || nodes > limits.effective().MaxNodes {
			t.Fatalf("admitted height %d, %d nodes (limit %d)", height, nodes, limits.effective().MaxNodes)
		}
		if nodes != g.nodes || nodes != file.nodes {
			t.Fatalf("nodes: walked %d, generated %d, parser counted %d\n%.500s", nodes, g.nodes, file.nodes, src)
		}
	})
}

// FuzzCheckGenerated: the checker gives a program or a typed error for
// every generated source, deep, wide and badly typed ones alike.
func FuzzCheckGenerated(f *testing.F) {
	for _, s := range generatorSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		g := newProgGen(in, 64<<10)
		src := g.source()
		p, err := Check(src)
		if err != nil {
			requireTyped(t, src, err, checkCodes)
			return
		}
		if g.tooDeep {
			t.Fatalf("checked a construct deeper than %d", MaxDepth)
		}
		if len(p.Order()) == 0 {
			t.Fatal("a checked program without fields")
		}
	})
}

// FuzzEvaluateGenerated: a checked program evaluates against generated
// facts (JSON nested far beyond what canonical JSON allows, at times) to a
// result for every field, or to a typed runtime error; its traces and
// values encode or fail with an error, never a panic.
func FuzzEvaluateGenerated(f *testing.F) {
	for _, s := range generatorSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		g := newProgGen(in, 16<<10)
		src := g.source()
		facts := g.facts()
		p, err := Check(src)
		if err != nil {
			requireTyped(t, src, err, checkCodes)
			return
		}
		res, err := p.Evaluate(facts)
		if err != nil {
			requireTyped(t, src, err, evalCodes)
			return
		}
		if len(res.Fields) != len(p.Fields) {
			t.Fatalf("%d results for %d fields", len(res.Fields), len(p.Fields))
		}
		for _, fr := range res.Fields {
			_, _ = fr.Value.MarshalCanonical()
			_, _ = fr.Trace.MarshalCanonical()
		}
	})
}

// FuzzTestsGenerated: a generated tests source (examples with deep JSON
// facts, properties of deep generated types, expressions like the rules')
// checks within the limits, including the cases budget, and runs to a
// report or stops with its context's error.
func FuzzTestsGenerated(f *testing.F) {
	for _, s := range generatorSeeds() {
		f.Add(uint16(2000), s)
	}
	f.Fuzz(func(t *testing.T, maxCases uint16, in []byte) {
		g := newProgGen(in, 16<<10)
		prog, err := Check(g.source())
		fields := g.fields
		if err != nil {
			prog, fields = mustProgram(t, "field f.n0 : Int = 1;\nfield f.n1 : Int = 2;\n"), []string{"f.n0", "f.n1"}
		}
		g = newProgGen(in, 16<<10)
		g.pos = len(in) / 2 // the second half of the input writes the tests
		src, cases := g.testsSource(fields)
		limits := Limits{MaxCases: int(maxCases) + 1}
		suite, err := limits.CheckTests(prog, src)
		if err != nil {
			requireTyped(t, src, err, append(slices.Clone(parseCodes), errcode.Validation))
			return
		}
		if g.tooDeep || cases > int64(limits.MaxCases) {
			t.Fatalf("admitted a tests source beyond the limits (%d cases, limit %d):\n%.500s", cases, limits.MaxCases, src)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		rep, err := suite.Run(ctx, 1)
		switch {
		case err != nil && ctx.Err() == nil:
			t.Fatalf("run error without a cancel: %v", err)
		case err == nil && int64(rep.TotalCases) != cases:
			t.Fatalf("%d cases run, %d asked for", rep.TotalCases, cases)
		}
	})
}

// addNestingSeeds adds every nesting just within and just beyond MaxDepth
// to a string target's corpus (the 1 MiB versions are unit tests).
func addNestingSeeds(f *testing.F, tests bool) {
	for _, c := range nestings() {
		if (c.tests != nil) != tests {
			continue
		}
		for _, n := range []int{MaxDepth - 1, MaxDepth + 1} {
			src, _ := c.source(n)
			f.Add(src)
		}
	}
	if !tests {
		f.Add("field a : Int = " + strings.Repeat("1+", 2000) + "1;")
	}
}

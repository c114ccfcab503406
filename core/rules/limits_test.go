package rules

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

// allocated runs f and returns how many heap objects and bytes it
// allocated: the work counter of the tests below, which a busy machine
// does not change the way it changes a clock. The caller must not be a
// parallel test (others would allocate meanwhile).
func allocated(f func()) (objects, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// requireLinear asserts that work(n) grows linearly: the work added by
// going from 2n to 4n is at most 1.5 times twice that from n to 2n
// (quadratic work would make it four times).
func requireLinear(t *testing.T, what string, n int, work func(n int) uint64) {
	t.Helper()
	w1, w2, w4 := work(n), work(2*n), work(4*n)
	require.Greater(t, w2, w1, what)
	first, second := w2-w1, w4-w2
	t.Logf("%s: %d, %d, %d at %d, %d, %d", what, w1, w2, w4, n, 2*n, 4*n)
	require.Less(t, float64(second), 1.5*2*float64(first),
		"%s: the work from %d to %d (%d) grows faster than linearly over that from %d to %d (%d)", what, 2*n, 4*n, second, n, 2*n, first)
}

// requireLimitError asserts err is code at a real line:col, found early in
// the source (at most `within` columns into its line).
func requireLimitError(t *testing.T, err error, code errcode.Code, message string, within int) Pos {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, errcode.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), message)
	_, pos, ok := ErrorLocation(err)
	require.True(t, ok, "no position in %v", err)
	require.GreaterOrEqual(t, pos.Line, 1)
	require.GreaterOrEqual(t, pos.Col, 1)
	require.LessOrEqual(t, pos.Col, within, "the error is found where the limit is crossed: %v", err)
	return pos
}

// The reported reproduction: `field a : Int = 1+1+1+…;` of 1 MiB crashed
// the process with a stack overflow in the type checker. Every operator
// chain is now refused at the operator that makes it 201 levels deep.
func TestOneMebibyteOperatorChainIsParseError(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"+", "-", "*", "/", "&&", "||", "==", "!=", "<", "<=", ">", ">="} {
		src := "field a : Int = " + chain("1", op, "1", (1<<20)/(len(op)+1))
		require.GreaterOrEqual(t, len(src), 1<<20-8)
		_, err := Check(src)
		// 1 at column 17; the k-th operator at 17 + k + (k-1)·len(op).
		pos := requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 1000)
		require.Equal(t, Pos{Line: 1, Col: 17 + MaxDepth + (MaxDepth-1)*len(op)}, pos, "op %s: %v", op, err)
		var fe *errcode.Error
		require.True(t, errors.As(err, &fe))
		require.Equal(t, "a", fe.Details["field"])
	}
}

// A chain of MaxDepth operands (MaxDepth-1 operators) is exactly MaxDepth
// deep and is admitted; one more operand is not.
func TestOperatorChainLimitIsExact(t *testing.T) {
	t.Parallel()
	res := evaluate(t, "field a : Int = "+chain("1", "+", "1", MaxDepth)+";", nil)
	require.Equal(t, "200", res.Fields[0].Value.String())
	_, err := Check("field a : Int = " + chain("1", "+", "1", MaxDepth+1) + ";")
	requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 1000)
	// Parentheses keep chains short: (199 ones) + (199 ones) is 201 operands.
	half := "(" + chain("1", "+", "1", MaxDepth-1) + ")"
	res = evaluate(t, "field a : Int = "+half+" + "+half+";", nil)
	require.Equal(t, "398", res.Fields[0].Value.String())
}

// Every construct that nests, at about 1 MiB, is a RULE_PARSE_ERROR found
// where it crosses MaxDepth, with line:col.
func TestOneMebibyteNestingIsParseError(t *testing.T) {
	t.Parallel()
	for _, c := range nestings() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, isTests := c.source(1)
			src := sizedTo(c, 1<<20)
			var err error
			if isTests {
				_, err = CheckTests(mustProgram(t, nestingProgram), src)
			} else {
				_, err = Check(src)
			}
			requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 20_000)
		})
	}
}

// The deepest source the parser admits, of every construct, checks and
// evaluates (or fails with a typed error) on a goroutine whose stack may
// not grow past 8 MiB, a 128th of Go's 1 GiB default: the recursion the
// limits allow is far from any stack's end. (Not parallel: SetMaxStack is
// process-wide, and parallel tests start only after this one returns.)
func TestDeepestAdmittedSourcesRunOnASmallStack(t *testing.T) {
	type admitted struct {
		c   nesting
		n   int
		src string
	}
	var deepest []admitted
	for _, c := range nestings() {
		n := 1
		for ; ; n++ {
			_, _, err := checkNesting(Limits{}, c, n+1)
			if err != nil && strings.Contains(err.Error(), "nesting deeper than") {
				break
			}
			require.Less(t, n, 2*MaxDepth, "%s: no limit", c.name)
		}
		require.GreaterOrEqual(t, n, MaxDepth/4, "%s: only %d levels admitted", c.name, n)
		src, _ := c.source(n)
		deepest = append(deepest, admitted{c, n, src})
	}

	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, a := range deepest {
			prog, suite, err := checkNesting(Limits{}, a.c, a.n)
			if err != nil {
				if errcode.As(err) == nil {
					t.Errorf("%s at %d: untyped error %v", a.c.name, a.n, err)
				}
				continue
			}
			if suite != nil {
				_, err = suite.Run(context.Background(), 1)
			} else {
				var res *Result
				if res, err = prog.Evaluate(nil); err == nil {
					_, err = res.Fields[0].Trace.MarshalCanonical()
				}
			}
			if err != nil && errcode.As(err) == nil {
				t.Errorf("%s at %d: untyped error %v", a.c.name, a.n, err)
			}
		}
	})
	wg.Wait()
}

// The node budget bounds a wide source: beyond BPC_RULES_MAX_NODES the
// source is refused at the node that crosses it; the largest admitted one
// checks and evaluates.
func TestNodeBudget(t *testing.T) {
	t.Parallel()
	list := func(n int) string { return "field a : Int = len(list(" + chain("1", ",", "1", n) + "));" }
	// Nodes: the type Int, len, list and the n literals.
	res := evaluate(t, list(DefaultMaxNodes-3), nil)
	require.Equal(t, fmt.Sprint(DefaultMaxNodes-3), res.Fields[0].Value.String())

	_, err := Check(list(DefaultMaxNodes))
	pos := requireLimitError(t, err, errcode.RuleParseError, "more than 200000 syntax nodes (BPC_RULES_MAX_NODES)", 1<<20)
	// Nodes are counted as they are built, children first: the type, then
	// the literals; the one that crosses the budget is literal 200000.
	require.Equal(t, Pos{Line: 1, Col: len("field a : Int = len(list(") + 1 + 2*(DefaultMaxNodes-1)}, pos)

	// A lower budget, and the tests language under it.
	small := Limits{MaxNodes: 10}
	_, err = small.Check("field a : Int = 1 + 2 + 3 + 4 + 5 + 6;")
	requireLimitError(t, err, errcode.RuleParseError, "more than 10 syntax nodes", 100)
	prog := mustProgram(t, nestingProgram)
	_, err = small.CheckTests(prog, "example e: { } => expect(a, ==, 1 + 2 + 3 + 4 + 5 + 6);")
	requireLimitError(t, err, errcode.RuleParseError, "more than 10 syntax nodes", 100)
	_, err = small.CheckTests(prog, `example e: { fact f("t", "k") = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]; } => expect(a, ==, 1);`)
	requireLimitError(t, err, errcode.RuleParseError, "more than 10 syntax nodes", 100)
	_, err = small.CheckTests(prog, `example e: { fact f("t", "k") = [1, 2]; } => expect(a, ==, 1);`)
	require.NoError(t, err)
}

// The largest source within both limits at once — MaxDepth-deep chains in
// as many fields as the node budget allows — checks, evaluates and encodes
// its trace (how fast is BenchmarkCheck's and bench/'s question).
func TestLargestAdmittedSource(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	perField := 2 * MaxDepth // the type, MaxDepth literals, MaxDepth-1 operators
	for i := range DefaultMaxNodes / perField {
		fmt.Fprintf(&b, "field f%d : Int = %s;\n", i, chain("1", "+", "1", MaxDepth))
	}
	res := evaluate(t, b.String(), nil)
	require.Len(t, res.Fields, DefaultMaxNodes/perField)
	for _, f := range res.Fields[:3] {
		_, err := f.Trace.MarshalCanonical()
		require.NoError(t, err)
	}
}

// The checker's work grows linearly with a source within the limits: many
// fields that become ready at once, a record of many members, a list of
// many large records. Work is counted in allocations, not time. (Not
// parallel: the count is process-wide.)
func TestWideSourcesCheckInLinearWork(t *testing.T) {
	fields := func(n int) string {
		var b strings.Builder
		b.WriteString("field a : Int = 1;\n")
		for i := range n {
			fmt.Fprintf(&b, "field b%d : Int = field(\"a\");\nfield z%d : Int = 1;\n", i, i)
		}
		return b.String()
	}
	p, err := Check(fields(30_000))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b0", "b1", "b10", "b100"}, p.Order()[:5])
	requireLinear(t, "fields ready at once", 5_000, func(n int) uint64 {
		src := fields(n)
		objects, _ := allocated(func() { _, err = Check(src) })
		require.NoError(t, err)
		return objects
	})

	var members []string
	for i := range 50_000 {
		members = append(members, fmt.Sprintf("m%d: 1", i))
	}
	_, err = Check("field a : Int = len(list(record(" + strings.Join(members, ", ") + ")));")
	requireLimitError(t, err, errcode.RuleTypeError, "a type has at most 1000 parts", 100)
	requireLinear(t, "a record of many members", 5_000, func(n int) uint64 {
		src := "field a : Int = len(list(record(" + strings.Join(members[:n], ", ") + ")));"
		objects, _ := allocated(func() { _, err = Check(src) })
		require.Error(t, err)
		return objects
	})

	// A list's type is unified with each element's: when they are the same
	// record type that costs nothing, never a copy of the record (900
	// members, some 40 bytes each) per element.
	rec := "record(" + strings.Join(members[:900], ", ") + ")"
	records := func(n int) string {
		return "field a : Int = let r = " + rec + "; let s = " + rec + "; len(list(r" + strings.Repeat(", s", n) + "));"
	}
	_, err = Check(records(90_000))
	require.NoError(t, err)
	checkBytes := func(n int) uint64 {
		src := records(n)
		_, bytes := allocated(func() { _, err = Check(src) })
		require.NoError(t, err)
		return bytes
	}
	const n = 20_000
	perElement := (checkBytes(2*n) - checkBytes(n)) / n
	require.Less(t, perElement, uint64(1000), "bytes allocated per element of a list of one large record type")
}

// CheckFile takes any File, not only one from Parse: a tree deeper than the
// parser admits is refused by the checker's guard instead of overflowing.
// The evaluator has the same guard.
func TestCheckerAndEvaluatorGuardDeepTrees(t *testing.T) {
	t.Parallel()
	var e Expr = &IntLit{At: Pos{1, 1}, Val: 1}
	for range 100_000 {
		e = &Binary{At: Pos{1, 2}, Op: "+", L: e, R: &IntLit{At: Pos{1, 3}, Val: 1}}
	}
	_, err := CheckFile(&File{Fields: []*FieldDecl{{Path: "a", Pos: Pos{1, 1}, Type: tInt, Expr: e}}})
	requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 10)

	p := mustProgram(t, "field a : Int = 1;")
	p.Fields[0].Expr = e
	_, err = p.Evaluate(nil)
	requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 10)
}

// Types are shared, so lets can double a type's size each time: a type with
// more than MaxTypeNodes parts is a RULE_TYPE_ERROR, declared or inferred.
func TestTypeSizeLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("field a : Int = let r0 = record(x: 1, y: 1);\n")
	for i := 1; i < 60; i++ {
		fmt.Fprintf(&b, "let r%d = record(x: r%d, y: r%d);\n", i, i-1, i-1)
	}
	b.WriteString("if (true) then 1 else len(list(r59));")
	_, err := Check(b.String())
	requireLimitError(t, err, errcode.RuleTypeError, "more than 1000 parts", 100)

	var members []string
	for i := range MaxTypeNodes {
		members = append(members, fmt.Sprintf("m%d: Int", i))
	}
	_, err = Check("field a : Opt(Record(" + strings.Join(members, ", ") + ")) = none;")
	requireLimitError(t, err, errcode.RuleTypeError, "type has more than 1000 parts", 100)
}

// Values can outgrow their static type only through shared parts and
// fold's accumulator; both are held to MaxValueNodes and MaxValueDepth.
func TestValueLimits(t *testing.T) {
	t.Parallel()
	// A list that doubles per let would hold 2^40 elements.
	var b strings.Builder
	b.WriteString("field a : Int = let l0 = list(1, 1);\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "let l%d = list(l%d, l%d);\n", i, i-1, i-1)
	}
	b.WriteString("len(l40);")
	p, err := Check(b.String())
	require.NoError(t, err)
	_, err = p.Evaluate(nil)
	requireLimitError(t, err, errcode.Validation, "more than 1048576 parts", 1000)

	// fold's accumulator nests one level deeper per element.
	ones := "list(" + chain("1", ",", "1", 2000) + ")"
	p, err = Check("field a : Opt(Opt(Int)) = fold(" + ones + ", none, (acc, x) => some(acc));")
	require.NoError(t, err)
	_, err = p.Evaluate(nil)
	requireLimitError(t, err, errcode.Validation, "nested deeper than 1000", 10_000)

	// Text counts against the steps by its length: a megabyte of text,
	// copied per element, ends the evaluation long before memory does.
	p, err = Check(`field a : Int = let t = fold(list(` + chain("1", ",", "1", 20) + `), "a", (acc, x) => concat(acc, acc));
		len(map(list(` + chain("1", ",", "1", 5000) + `), (x) => concat(t, "")));`)
	require.NoError(t, err)
	_, err = p.Evaluate(nil)
	requireLimitError(t, err, errcode.Validation, "exceeded 5000000 steps", 20_000)
}

// A value that holds one long text many times encodes to far more bytes
// than it holds: its encoding stops at MaxEncodedBytes.
func TestEncodingStopsAtMaxEncodedBytes(t *testing.T) {
	t.Parallel()
	text := textVal(strings.Repeat("x", MaxTextBytes))
	elems := make([]Value, 100)
	for i := range elems {
		elems[i] = text
	}
	v := listVal(elems)
	b, err := v.AppendCanonical(nil)
	require.ErrorIs(t, err, ErrEncodingTooLarge)
	require.Less(t, len(b), MaxEncodedBytes+2*MaxTextBytes)
	require.Equal(t, briefBytes+len("…"), len(brief(v)))
	require.Equal(t, `[1,2]`, brief(listVal([]Value{intVal(1), intVal(2)})))
}

// A property's generator draws a bounded value per case: List(List(…))
// would otherwise grow five-fold per level.
func TestGeneratorSizeLimit(t *testing.T) {
	t.Parallel()
	prog := mustProgram(t, nestingProgram)
	_, err := CheckTests(prog, "property p: cases(1) seed(1) => forall x: "+wrap("List(", "Int", ")", 6)+". implies(true, true);")
	requireLimitError(t, err, errcode.RuleTypeError, "the limit is 10000", 100)
	_, err = CheckTests(prog, "property p: cases(1) seed(1) => forall x: "+wrap("List(", "Int", ")", 5)+". implies(true, true);")
	require.NoError(t, err)
}

// The cases of one run are bounded in total (BPC_RULES_MAX_CASES), before
// anything runs: cases(1000000) is allowed once, not eighty times.
func TestCasesBudget(t *testing.T) {
	t.Parallel()
	prog := mustProgram(t, nestingProgram)
	var b strings.Builder
	for i := range 80 {
		fmt.Fprintf(&b, "property p%d: cases(1000000) seed(%d) => forall x: Int. implies(true, x == x);\n", i, i)
	}
	_, err := CheckTests(prog, b.String())
	pos := requireLimitError(t, err, errcode.Validation, "more than the limit of 1000000 per run (BPC_RULES_MAX_CASES)", 100)
	require.Equal(t, Pos{Line: 2, Col: 10}, pos, "at the second property")
	require.Equal(t, "BPC_RULES_MAX_CASES", errcode.As(err).Details["limit"])
	require.Equal(t, "p1", errcode.As(err).Field)

	_, err = RunTests(t.Context(), prog, b.String(), 1)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))

	// Examples count one each, under a configured limit.
	small := Limits{MaxCases: 100}
	src := "example e: { } => expect(a, ==, 1);\nproperty p: cases(99) seed(1) => forall x: Int. implies(true, x == x);\n"
	rep, err := small.RunTests(t.Context(), prog, src, 1)
	require.NoError(t, err)
	require.Equal(t, 100, rep.TotalCases)
	_, err = small.RunTests(t.Context(), prog, src+"example f: { } => expect(a, ==, 1);", 1)
	requireLimitError(t, err, errcode.Validation, "ask for 101 cases", 100)

	// A suite checked under a larger limit is held to its own.
	s, err := Limits{MaxCases: 1000}.CheckTests(prog, src+"example f: { } => expect(a, ==, 1);")
	require.NoError(t, err)
	s.limits.MaxCases = 100
	_, err = s.Run(t.Context(), 1)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
}

// A run follows its context: a cancel stops it, whether its cases are many
// and cheap, few and expensive, or examples.
func TestRunStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ones := "list(" + chain("1", ",", "1", 2000) + ")"
	heavy := "fold(" + ones + ", 0, (a, x) => fold(" + ones + ", a, (b, y) => b + 1))" // 4M steps
	prog := mustProgram(t, nestingProgram+"field heavy : Int = "+heavy+";\n")
	var examples strings.Builder
	for i := range 200 {
		fmt.Fprintf(&examples, "example e%d: { } => expect(heavy, >, 0);\n", i)
	}
	cases := map[string]string{
		"many cheap cases": "property p: cases(1000000) seed(1) => forall x: Int. implies(true, len(map(" + ones + ", (y) => y + x)) == 2000);",
		"expensive cases":  "property p: cases(1000) seed(1) => forall x: Int. implies(true, " + heavy + " > x);",
		"examples":         examples.String(),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			suite, err := CheckTests(prog, src)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			// Each run is hundreds of millions of steps at least: ending in
			// context.Canceled, not in a report, is the cancel taking effect.
			rep, err := suite.Run(ctx, 1)
			require.ErrorIs(t, err, context.Canceled)
			require.Nil(t, rep)
		})
	}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := RunTests(ctx, prog, cases["expensive cases"], 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// Test facts' JSON is a construct like any other: nested at most MaxDepth
// deep, reported at the bracket that goes deeper.
func TestFactJSONDepth(t *testing.T) {
	t.Parallel()
	prog := mustProgram(t, nestingProgram)
	src := "example e: {\n  fact f(\"t\", \"k\") = " + wrap("[", "1", "]", MaxDepth+1) + ";\n} => expect(a, ==, 1);"
	_, err := CheckTests(prog, src)
	pos := requireLimitError(t, err, errcode.RuleParseError, "nesting deeper than 200", 1000)
	require.Equal(t, Pos{Line: 2, Col: len(`  fact f("t", "k") = `) + MaxDepth + 1}, pos)
	_, err = CheckTests(prog, "example e: {\n  fact f(\"t\", \"k\") = "+wrap(`{"a\"[{":`, `"]}"`, "}", MaxDepth)+";\n} => expect(a, ==, 1);")
	require.NoError(t, err, "brackets inside strings do not nest")
}

package rules

import (
	"strings"
)

// A nesting is one construct of the language repeated n levels deep (or,
// for operator chains, n operands long), as a hostile source would: the
// reproductions of stack overflows, at any size.
type nesting struct {
	name string
	// rules builds a rule source whose field a nests n levels; tests, when
	// set, builds a tests source (against nestingProgram) instead.
	rules func(n int) string
	tests func(n int) string
}

// nestingProgram is the rule source the tests-source nestings run against.
const nestingProgram = `field a : Int = 1;
field b : Bool = true;
`

// chain is `first op x op x …` with n operands.
func chain(first, op, x string, n int) string {
	var b strings.Builder
	b.Grow(len(first) + (n-1)*(len(op)+len(x)))
	b.WriteString(first)
	for range n - 1 {
		b.WriteString(op)
		b.WriteString(x)
	}
	return b.String()
}

// wrap is open × n, inner, close × n.
func wrap(open, inner, close string, n int) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// nestings lists every construct that nests, operator chains included.
func nestings() []nesting {
	field := func(typ string, expr func(n int) string) func(int) string {
		return func(n int) string { return "field a : " + typ + " = " + expr(n) + ";" }
	}
	binary := func(typ, first, op, x string) func(int) string {
		return field(typ, func(n int) string { return chain(first, op, x, n) })
	}
	testsExpr := func(expr func(n int) string) func(int) string {
		return func(n int) string { return "example e: { } => expect(a, ==, " + expr(n) + ");" }
	}
	return []nesting{
		{name: "plus", rules: binary("Int", "1", "+", "1")},
		{name: "minus", rules: binary("Int", "1", "-", "1")},
		{name: "times", rules: binary("Int", "1", "*", "1")},
		{name: "divide", rules: binary("Dec(1)", "1.0", "/", "1.0")},
		{name: "and", rules: binary("Bool", "true", "&&", "true")},
		{name: "or", rules: binary("Bool", "false", "||", "false")},
		{name: "equals", rules: binary("Bool", "true", "==", "true")},
		{name: "not equals", rules: binary("Bool", "true", "!=", "true")},
		{name: "less", rules: binary("Bool", "1", "<", "1")},
		{name: "greater or equal", rules: binary("Bool", "1", ">=", "1")},
		{name: "mixed precedence", rules: binary("Int", "1", "*1+", "1")},
		{name: "not", rules: field("Bool", func(n int) string { return strings.Repeat("!", n) + "true" })},
		{name: "negate", rules: field("Int", func(n int) string { return strings.Repeat("- ", n) + "1" })},
		{name: "parens", rules: field("Int", func(n int) string { return wrap("(", "1", ")", n) })},
		{name: "lets", rules: field("Int", func(n int) string { return chain("", "", "let x = 1; ", n) + "x" })},
		{name: "let values", rules: field("Int", func(n int) string { return wrap("let x = ", "1", "; x", n) })},
		{name: "asserts", rules: field("Int", func(n int) string { return chain("", "", `assert(true, "OK_CODE", "m"); `, n) + "1" })},
		{name: "else if", rules: field("Int", func(n int) string { return chain("", "", "if (true) then 1 else ", n) + "1" })},
		{name: "if conditions", rules: field("Bool", func(n int) string { return wrap("if (", "true", ") then true else false", n) })},
		{name: "calls", rules: field("Opt(Int)", func(n int) string { return wrap("unwrapOr(some(", "some(1)", "), none)", n) })},
		{name: "lists", rules: field("Int", func(n int) string { return "len(" + wrap("list(", "1", ")", n) + ")" })},
		{name: "records", rules: field("Int", func(n int) string { return "len(list(" + wrap("record(x: ", "1", ")", n) + "))" })},
		{name: "lambdas", rules: field("Int", func(n int) string {
			return "len(" + wrap("map(list(1), (x) => ", "x", ")", n) + ")"
		})},
		{name: "opt types", rules: func(n int) string { return "field a : " + wrap("Opt(", "Int", ")", n) + " = none;" }},
		{name: "list types", rules: func(n int) string { return "field a : Opt(" + wrap("List(", "Int", ")", n) + ") = none;" }},
		{name: "record types", rules: func(n int) string { return "field a : Opt(" + wrap("Record(x: ", "Int", ")", n) + ") = none;" }},
		{name: "map types", rules: func(n int) string { return "field a : Opt(" + wrap("Map(Text, ", "Int", ")", n) + ") = none;" }},
		{name: "tests: expect chain", tests: testsExpr(func(n int) string { return chain("1", "+", "1", n) })},
		{name: "tests: expect parens", tests: testsExpr(func(n int) string { return wrap("(", "1", ")", n) })},
		{name: "tests: property chain", tests: func(n int) string {
			return "property p: cases(1) seed(1) => forall x: Bool. implies(true, " + chain("x", "&&", "x", n) + ");"
		}},
		{name: "tests: property type", tests: func(n int) string {
			return "property p: cases(1) seed(1) => forall x: " + wrap("Opt(", "Int", ")", n) + ". implies(true, true);"
		}},
		{name: "tests: fact array", tests: func(n int) string {
			return `example e: { fact f("t", "k") = ` + wrap("[", "1", "]", n) + "; } => expect(a, ==, 1);"
		}},
		{name: "tests: fact object", tests: func(n int) string {
			return `example e: { fact f("t", "k") = ` + wrap(`{"a":`, "1", "}", n) + "; } => expect(a, ==, 1);"
		}},
	}
}

// source returns the nesting's source at size n and whether it is a tests source.
func (c nesting) source(n int) (string, bool) {
	if c.tests != nil {
		return c.tests(n), true
	}
	return c.rules(n), false
}

// checkNesting parses and checks the nesting's source at size n within l.
func checkNesting(l Limits, c nesting, n int) (*Program, *TestSuite, error) {
	src, isTests := c.source(n)
	if !isTests {
		p, err := l.Check(src)
		return p, nil, err
	}
	prog, err := Check(nestingProgram)
	if err != nil {
		panic(err)
	}
	s, err := l.CheckTests(prog, src)
	return prog, s, err
}

// sizedTo repeats n-sized construct builder until the source is about
// bytes long (n grows geometrically).
func sizedTo(c nesting, bytes int) string {
	n := 16
	for {
		src, _ := c.source(n)
		if len(src) >= bytes {
			return src
		}
		n *= 2
	}
}

package rules

import (
	"slices"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Program is a type-checked rule source with its fields in evaluation order.
type Program struct {
	// Fields holds the declarations in dependency order (Kahn's algorithm,
	// ties broken by field path in byte order).
	Fields []*FieldDecl
	// Deps maps each field path to the sorted paths it references via field(...).
	Deps   map[string][]string
	byPath map[string]*FieldDecl
	nodes  int
}

// Within reports whether the program's source fits l: a program checked
// once may be reused (by a cache keyed on its source) under other limits.
func (p *Program) Within(l Limits) bool { return p.nodes <= l.effective().MaxNodes }

// Order returns the field paths in evaluation order.
func (p *Program) Order() []string {
	out := make([]string, len(p.Fields))
	for i, f := range p.Fields {
		out[i] = f.Path
	}
	return out
}

// Field returns the declaration of path, or nil.
func (p *Program) Field(path string) *FieldDecl { return p.byPath[path] }

// Check parses and checks src with DefaultLimits; see Limits.Check.
func Check(src string) (*Program, error) { return DefaultLimits().Check(src) }

// Check parses src within l, type-checks every field against its declared
// type and orders the fields by their field(...) dependencies. Of all errors
// found it returns the one at the earliest source position (a cycle is
// reported only when there is no other error).
func (l Limits) Check(src string) (*Program, error) {
	file, err := l.Parse(src)
	if err != nil {
		return nil, err
	}
	return CheckFile(file)
}

// CheckFile type-checks and orders an already parsed File. A File from
// Parse is at most MaxDepth deep; one built otherwise that nests deeper
// than the checker's guard is a RULE_PARSE_ERROR, not a deeper recursion.
func CheckFile(file *File) (*Program, error) {
	c := &checker{decls: map[string]*FieldDecl{}, deps: map[string]map[string]bool{}}
	var errs []*errcode.Error
	for _, d := range file.Fields {
		if prev, dup := c.decls[d.Path]; dup {
			errs = append(errs, errAt(errcode.RuleTypeError, d.Path, d.Pos,
				"duplicate field %s (first declared at %s)", d.Path, prev.Pos))
			continue
		}
		c.decls[d.Path] = d
	}
	for _, d := range file.Fields {
		if c.decls[d.Path] != d {
			continue
		}
		c.cur = d.Path
		c.deps[d.Path] = map[string]bool{}
		t, err := c.expr(d.Expr, nil)
		if err != nil {
			errs = append(errs, errcode.As(err))
			continue
		}
		if _, ok := unify(d.Type, t); !ok {
			errs = append(errs, errAt(errcode.RuleTypeError, d.Path, d.Expr.Position(),
				"field %s is declared %s but its expression is %s", d.Path, d.Type, t))
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *errcode.Error) int {
			_, pa, _ := ErrorLocation(a)
			_, pb, _ := ErrorLocation(b)
			switch {
			case pa.before(pb):
				return -1
			case pb.before(pa):
				return 1
			}
			return 0
		})
		return nil, errs[0]
	}
	prog, err := c.order()
	if err != nil {
		return nil, err
	}
	prog.nodes = file.nodes
	return prog, nil
}

// checker holds the state of type-checking one source. It recurses once per
// level of the expression tree (expr → exprType → expr), which Parse keeps
// within MaxDepth; depth is the guard against any other tree.
type checker struct {
	decls map[string]*FieldDecl
	deps  map[string]map[string]bool
	cur   string
	depth int
}

// scope is an immutable linked list of variable bindings.
type scope struct {
	name string
	typ  *Type
	next *scope
}

func (s *scope) lookup(name string) (*Type, bool) {
	for ; s != nil; s = s.next {
		if s.name == name {
			return s.typ, true
		}
	}
	return nil, false
}

func (c *checker) typeErr(pos Pos, format string, args ...any) error {
	return errAt(errcode.RuleTypeError, c.cur, pos, format, args...)
}

// order sorts the fields topologically and reports a cycle.
func (c *checker) order() (*Program, error) {
	paths := make([]string, 0, len(c.decls))
	for p := range c.decls {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	deps := make(map[string][]string, len(paths))
	indeg := make(map[string]int, len(paths))
	users := make(map[string][]string, len(paths))
	for _, p := range paths {
		ds := make([]string, 0, len(c.deps[p]))
		for d := range c.deps[p] {
			ds = append(ds, d)
		}
		slices.Sort(ds)
		deps[p] = ds
		indeg[p] = len(ds)
		for _, d := range ds {
			users[d] = append(users[d], p)
		}
	}
	// ready is a min-heap, so the lexically smallest ready path goes first
	// (a sorted slice would cost a copy of its tail per insertion: quadratic
	// in the fields of a large source).
	var ready pathHeap
	for _, p := range paths {
		if indeg[p] == 0 {
			ready = append(ready, p) // paths is sorted: already a heap
		}
	}
	prog := &Program{Deps: deps, byPath: c.decls}
	done := map[string]bool{}
	for len(ready) > 0 {
		p := ready.pop()
		done[p] = true
		prog.Fields = append(prog.Fields, c.decls[p])
		for _, u := range users[p] {
			indeg[u]--
			if indeg[u] == 0 {
				ready.push(u)
			}
		}
	}
	if len(prog.Fields) == len(paths) {
		return prog, nil
	}
	cycle := findCycle(paths, deps, done)
	first := c.decls[cycle[0]]
	e := errAt(errcode.RuleCycleDetected, first.Path, first.Pos,
		"dependency cycle: %s -> %s", strings.Join(cycle, " -> "), cycle[0])
	e.Details["cycle"] = cycle
	return nil, e
}

// pathHeap is a binary min-heap of field paths.
type pathHeap []string

func (h *pathHeap) push(p string) {
	*h = append(*h, p)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent] <= s[i] {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *pathHeap) pop() string {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l] < s[small] {
			small = l
		}
		if r < len(s) && s[r] < s[small] {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*h = s
	return top
}

// findCycle walks from the smallest unfinished field along its smallest
// unfinished dependency until a field repeats, and returns that cycle rotated
// to start at its lexically smallest field.
func findCycle(paths []string, deps map[string][]string, done map[string]bool) []string {
	var start string
	for _, p := range paths {
		if !done[p] {
			start = p
			break
		}
	}
	seen := map[string]int{}
	var walk []string
	for p := start; ; {
		if i, ok := seen[p]; ok {
			cyc := walk[i:]
			m := 0
			for j := range cyc {
				if cyc[j] < cyc[m] {
					m = j
				}
			}
			return append(slices.Clone(cyc[m:]), cyc[:m]...)
		}
		seen[p] = len(walk)
		walk = append(walk, p)
		for _, d := range deps[p] {
			if !done[d] {
				p = d
				break
			}
		}
	}
}

// expr returns the static type of e in scope s; it never returns a nil type
// without an error.
func (c *checker) expr(e Expr, s *scope) (*Type, error) {
	if c.depth >= guardDepth {
		return nil, errAt(errcode.RuleParseError, c.cur, e.Position(), "nesting deeper than %d", MaxDepth)
	}
	c.depth++
	t, err := c.exprType(e, s)
	c.depth--
	switch {
	case err != nil:
		return nil, err
	case t == nil:
		return nil, c.typeErr(e.Position(), "cannot infer the type of this expression (a bare none needs a typed context)")
	case t.size > MaxTypeNodes:
		// Types are shared, so a few lets can double a type's size each
		// time; past the bound, printing or comparing it would not end.
		return nil, c.typeErr(e.Position(), "the type of this expression has more than %d parts", MaxTypeNodes)
	}
	return t, nil
}

func (c *checker) exprType(e Expr, s *scope) (*Type, error) {
	switch e := e.(type) {
	case *BoolLit:
		return tBool, nil
	case *IntLit:
		return tInt, nil
	case *DecLit:
		return decType(decLitScale(e.Text)), nil
	case *StringLit:
		return tText, nil
	case *DateLit:
		return tDate, nil
	case *NoneLit:
		return optType(nil), nil
	case *Ident:
		t, ok := s.lookup(e.Name)
		if !ok {
			return nil, c.typeErr(e.At, "unknown variable %q", e.Name)
		}
		return t, nil
	case *Unary:
		t, err := c.expr(e.X, s)
		if err != nil {
			return nil, err
		}
		if e.Op == "!" {
			if t.Kind != KindBool {
				return nil, c.typeErr(e.At, "operator ! needs Bool, found %s", t)
			}
			return t, nil
		}
		if t.Kind != KindInt && t.Kind != KindDec && t.Kind != KindQty {
			return nil, c.typeErr(e.At, "unary - needs Int, Dec or Qty, found %s", t)
		}
		return t, nil
	case *Binary:
		return c.binary(e, s)
	case *If:
		if err := c.condition(e.Cond, s, "if"); err != nil {
			return nil, err
		}
		a, err := c.expr(e.Then, s)
		if err != nil {
			return nil, err
		}
		b, err := c.expr(e.Else, s)
		if err != nil {
			return nil, err
		}
		t, ok := unify(a, b)
		if !ok {
			return nil, c.typeErr(e.At, "if branches differ: then is %s, else is %s", a, b)
		}
		return t, nil
	case *Let:
		vt, err := c.expr(e.Value, s)
		if err != nil {
			return nil, err
		}
		return c.expr(e.Body, &scope{name: e.Name, typ: vt, next: s})
	case *Assert:
		if err := c.condition(e.Cond, s, "assert"); err != nil {
			return nil, err
		}
		if !codeRe.MatchString(e.Code) {
			return nil, c.typeErr(e.CodePos, "assert code %q must match ^[A-Z][A-Z0-9_]{2,63}$", e.Code)
		}
		return c.expr(e.Body, s)
	case *Lambda:
		return nil, c.typeErr(e.At, "a lambda is only allowed as an argument of map, filter, fold or toMap")
	case *Call:
		return c.call(e, s)
	}
	return nil, c.typeErr(e.Position(), "unsupported expression")
}

// decLitScale returns the number of fractional digits of a decimal literal.
func decLitScale(text string) int {
	if i := strings.IndexByte(text, '.'); i >= 0 {
		return len(text) - i - 1
	}
	return 0
}

// condition checks the condition of an if or an assert (what), which must be
// Bool.
func (c *checker) condition(cond Expr, s *scope, what string) error {
	t, err := c.expr(cond, s)
	if err != nil {
		return err
	}
	if t.Kind != KindBool {
		return c.typeErr(cond.Position(), "%s condition must be Bool, found %s", what, t)
	}
	return nil
}

func (c *checker) binary(e *Binary, s *scope) (*Type, error) {
	l, err := c.expr(e.L, s)
	if err != nil {
		return nil, err
	}
	r, err := c.expr(e.R, s)
	if err != nil {
		return nil, err
	}
	mismatch := func() error {
		return c.typeErr(e.At, "operator %s cannot combine %s and %s", e.Op, l, r)
	}
	unitCheck := func() error {
		if l.Kind == KindQty && r.Kind == KindQty && l.Unit != r.Unit {
			return errAt(errcode.UnitMismatch, c.cur, e.At,
				"operator %s needs equal units, found %s and %s (use convert)", e.Op, l, r)
		}
		return nil
	}
	switch e.Op {
	case "||", "&&":
		if l.Kind != KindBool || r.Kind != KindBool {
			return nil, mismatch()
		}
		return tBool, nil
	case "==", "!=":
		if err := unitCheck(); err != nil {
			return nil, err
		}
		if l.Kind == KindDec && r.Kind == KindDec {
			return tBool, nil
		}
		if _, ok := unify(l, r); !ok || !equatable(l) || !equatable(r) {
			return nil, mismatch()
		}
		return tBool, nil
	case "<", "<=", ">", ">=":
		if err := unitCheck(); err != nil {
			return nil, err
		}
		if l.Kind != r.Kind || !slices.Contains([]Kind{KindInt, KindDec, KindQty, KindText, KindDate}, l.Kind) {
			return nil, mismatch()
		}
		return tBool, nil
	case "+", "-":
		if err := unitCheck(); err != nil {
			return nil, err
		}
		if l.Kind != r.Kind || (l.Kind != KindInt && l.Kind != KindDec && l.Kind != KindQty) {
			return nil, mismatch()
		}
		if l.Kind == KindDec && l.Scale != r.Scale {
			return nil, c.typeErr(e.At, "operator %s needs equal scales, found %s and %s (use toDec)", e.Op, l, r)
		}
		return l, nil
	case "*":
		switch {
		case l.Kind == KindInt && r.Kind == KindInt:
			return tInt, nil
		case l.Kind == KindDec && r.Kind == KindDec:
			if l.Scale+r.Scale > MaxScale {
				return nil, c.typeErr(e.At, "product of %s and %s would have scale %d > %d (use toDec first)", l, r, l.Scale+r.Scale, MaxScale)
			}
			return decType(l.Scale + r.Scale), nil
		case l.Kind == KindQty && r.Kind == KindDec:
			return l, nil
		case l.Kind == KindDec && r.Kind == KindQty:
			return r, nil
		}
		if err := unitCheck(); err != nil {
			return nil, err
		}
		return nil, mismatch()
	case "/":
		switch {
		case l.Kind == KindDec && r.Kind == KindDec:
			return l, nil
		case l.Kind == KindQty && r.Kind == KindDec:
			return l, nil
		}
		return nil, mismatch()
	}
	return nil, mismatch()
}

// equatable reports whether == and != are defined on values of t.
func equatable(t *Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind {
	case KindBool, KindInt, KindDec, KindQty, KindText, KindDate:
		return true
	case KindOpt:
		return equatable(t.Elem)
	}
	return false
}

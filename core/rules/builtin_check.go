package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
)

// builtinArity gives the exact argument count of each fixed-arity built-in;
// list, record and concat take one or more arguments.
var builtinArity = map[string]int{
	"getFact": 2, "getFactsByPrefix": 2, "field": 1, "recordGet": 2,
	"isSome": 1, "unwrapOr": 2, "requireSome": 3, "some": 1,
	"toDec": 2, "toQty": 2, "qty": 2, "convert": 2, "sumQty": 1, "sumDec": 1,
	"map": 2, "filter": 2, "fold": 3, "toMap": 3, "mapGet": 2, "len": 1,
	"emitCompliance": 3, "toText": 1, "toInt": 1, "toBool": 1, "toDate": 1,
}

// signatures gives the built-ins whose result type is fixed and whose
// arguments need only be of some kinds: argument i one of args[i].
var signatures = map[string]struct {
	args   [][]Kind
	result *Type
}{
	"getFact":          {[][]Kind{{KindText}, {KindText}}, optType(tFact)},
	"getFactsByPrefix": {[][]Kind{{KindText}, {KindText}}, listType(tFact)},
	"isSome":           {[][]Kind{{KindOpt}}, tBool},
	"len":              {[][]Kind{{KindList, KindMap}}, tInt},
	"emitCompliance":   {[][]Kind{{KindText}, {KindBool}, {KindText}}, complianceType},
	"toText":           {[][]Kind{{KindFact, KindText, KindInt, KindDec, KindDate, KindBool}}, tText},
	"toInt":            {[][]Kind{{KindFact, KindText}}, tInt},
	"toBool":           {[][]Kind{{KindFact}}, tBool},
	"toDate":           {[][]Kind{{KindFact, KindText}}, tDate},
}

// variadic built-ins need at least one argument.
var variadic = map[string]bool{"list": true, "record": true, "concat": true}

func (c *checker) call(e *Call, s *scope) (*Type, error) {
	t, err := c.callType(e, s)
	e.typ = t
	return t, err
}

func (c *checker) callType(e *Call, s *scope) (*Type, error) {
	if n, ok := builtinArity[e.Name]; ok {
		if len(e.Args) != n {
			return nil, c.typeErr(e.At, "wrong number of arguments: %s expects %d, got %d", e.Name, n, len(e.Args))
		}
	} else if variadic[e.Name] {
		if len(e.Args) == 0 {
			return nil, c.typeErr(e.At, "wrong number of arguments: %s expects at least 1, got 0", e.Name)
		}
	} else {
		return nil, c.typeErr(e.At, "unknown function %q", e.Name)
	}
	// arg type-checks argument i and requires one of the given kinds.
	arg := func(i int, kinds ...Kind) (*Type, error) {
		t, err := c.expr(e.Args[i], s)
		if err != nil {
			return nil, err
		}
		if len(kinds) > 0 && !slices.Contains(kinds, t.Kind) {
			names := make([]string, len(kinds))
			for j, k := range kinds {
				names[j] = kindName(k)
			}
			return nil, c.typeErr(e.Args[i].Position(), "argument %d of %s must be %s, found %s",
				i+1, e.Name, strings.Join(names, " or "), t)
		}
		return t, nil
	}
	if sig, ok := signatures[e.Name]; ok {
		for i, kinds := range sig.args {
			if _, err := arg(i, kinds...); err != nil {
				return nil, err
			}
		}
		return sig.result, nil
	}
	switch e.Name {
	case "field":
		p, err := c.stringArg(e, 0)
		if err != nil {
			return nil, err
		}
		d, ok := c.decls[p]
		if !ok {
			return nil, c.typeErr(e.Args[0].Position(), "unknown field %q", p)
		}
		c.deps[c.cur][p] = true
		return d.Type, nil
	case "recordGet":
		t, err := arg(0, KindFact, KindRecord)
		if err != nil {
			return nil, err
		}
		name, err := c.stringArg(e, 1)
		if err != nil {
			return nil, err
		}
		if t.Kind == KindFact {
			return optType(tFact), nil
		}
		ft, ok := t.recordFieldType(name)
		if !ok {
			return nil, c.typeErr(e.Args[1].Position(), "record %s has no member %q", t, name)
		}
		return ft, nil
	case "some":
		t, err := arg(0)
		if err != nil {
			return nil, err
		}
		return optType(t), nil
	case "unwrapOr":
		o, err := arg(0, KindOpt)
		if err != nil {
			return nil, err
		}
		d, err := arg(1)
		if err != nil {
			return nil, err
		}
		t, ok := unify(o.Elem, d)
		if !ok {
			return nil, c.typeErr(e.Args[1].Position(), "default of unwrapOr must be %s, found %s", o.Elem, d)
		}
		return t, nil
	case "requireSome":
		o, err := arg(0, KindOpt)
		if err != nil {
			return nil, err
		}
		if err := c.codeArgs(e, 1); err != nil {
			return nil, err
		}
		return o.Elem, nil
	case "toDec":
		if _, err := arg(0, KindFact, KindText, KindInt, KindDec, KindQty); err != nil {
			return nil, err
		}
		sc, err := c.scaleArg(e, 1)
		if err != nil {
			return nil, err
		}
		return decType(sc), nil
	case "toQty", "qty":
		kinds := []Kind{KindFact, KindText, KindInt, KindDec}
		if e.Name == "qty" {
			kinds = []Kind{KindInt, KindDec}
		}
		if _, err := arg(0, kinds...); err != nil {
			return nil, err
		}
		u, err := c.unitArg(e, 1)
		if err != nil {
			return nil, err
		}
		return qtyType(u), nil
	case "convert":
		q, err := arg(0, KindQty)
		if err != nil {
			return nil, err
		}
		u, err := c.unitArg(e, 1)
		if err != nil {
			return nil, err
		}
		if units[u].dimension != units[q.Unit].dimension {
			return nil, errAt(errcode.UnitMismatch, c.cur, e.Args[1].Position(),
				"cannot convert %s (%s) to %s (%s)", q.Unit, units[q.Unit].dimension, u, units[u].dimension)
		}
		return qtyType(u), nil
	case "sumQty", "sumDec":
		t, err := arg(0, KindList)
		if err != nil {
			return nil, err
		}
		want := KindQty
		if e.Name == "sumDec" {
			want = KindDec
		}
		if t.Elem == nil || t.Elem.Kind != want {
			return nil, c.typeErr(e.Args[0].Position(), "argument 1 of %s must be List(%s), found %s", e.Name, kindName(want), t)
		}
		return t.Elem, nil
	case "map", "filter", "toMap":
		lt, err := arg(0, KindList)
		if err != nil {
			return nil, err
		}
		bodies := make([]*Type, 0, 2)
		for i := 1; i < len(e.Args); i++ {
			bt, err := c.lambda(e, i, []*Type{lt.Elem}, s)
			if err != nil {
				return nil, err
			}
			bodies = append(bodies, bt)
		}
		switch e.Name {
		case "map":
			return listType(bodies[0]), nil
		case "filter":
			if bodies[0].Kind != KindBool {
				return nil, c.typeErr(e.Args[1].Position(), "filter predicate must return Bool, found %s", bodies[0])
			}
			return lt, nil
		}
		if bodies[0].Kind != KindText {
			return nil, c.typeErr(e.Args[1].Position(), "toMap key function must return Text, found %s", bodies[0])
		}
		return mapType(bodies[1]), nil
	case "fold":
		lt, err := arg(0, KindList)
		if err != nil {
			return nil, err
		}
		init, err := arg(1)
		if err != nil {
			return nil, err
		}
		bt, err := c.lambda(e, 2, []*Type{init, lt.Elem}, s)
		if err != nil {
			return nil, err
		}
		t, ok := unify(init, bt)
		if !ok {
			return nil, c.typeErr(e.Args[2].Position(), "fold step returns %s but the accumulator is %s", bt, init)
		}
		return t, nil
	case "mapGet":
		m, err := arg(0, KindMap)
		if err != nil {
			return nil, err
		}
		if _, err := arg(1, KindText); err != nil {
			return nil, err
		}
		return optType(m.Elem), nil
	case "concat":
		for i := range e.Args {
			if _, err := arg(i, KindText); err != nil {
				return nil, err
			}
		}
		return tText, nil
	case "list":
		var t *Type
		for i := range e.Args {
			at, err := arg(i)
			if err != nil {
				return nil, err
			}
			u, ok := unify(t, at)
			if !ok {
				return nil, c.typeErr(e.Args[i].Position(), "list element %d is %s, expected %s", i+1, at, t)
			}
			t = u
		}
		return listType(t), nil
	case "record":
		if len(e.Args) >= MaxTypeNodes {
			return nil, c.typeErr(e.At, "record has %d members; a type has at most %d parts", len(e.Args), MaxTypeNodes)
		}
		fs := make([]RecordField, len(e.Args))
		seen := make(map[string]bool, len(e.Args))
		for i := range e.Args {
			if seen[e.Names[i]] {
				return nil, c.typeErr(e.Args[i].Position(), "duplicate record member %q", e.Names[i])
			}
			seen[e.Names[i]] = true
			at, err := arg(i)
			if err != nil {
				return nil, err
			}
			fs[i] = RecordField{Name: e.Names[i], Type: at}
		}
		return recordType(fs), nil
	}
	return nil, c.typeErr(e.At, "unknown function %q", e.Name)
}

// lambda checks argument i of call e as a lambda with the given parameter types.
func (c *checker) lambda(e *Call, i int, params []*Type, s *scope) (*Type, error) {
	l, ok := e.Args[i].(*Lambda)
	if !ok {
		return nil, c.typeErr(e.Args[i].Position(), "argument %d of %s must be a lambda with %d parameter(s)", i+1, e.Name, len(params))
	}
	if len(l.Params) != len(params) {
		return nil, c.typeErr(l.At, "wrong number of arguments: the lambda of %s takes %d parameter(s), got %d", e.Name, len(params), len(l.Params))
	}
	for j, p := range l.Params {
		s = &scope{name: p, typ: params[j], next: s}
	}
	return c.expr(l.Body, s)
}

// stringArg requires argument i to be a string literal and returns it.
func (c *checker) stringArg(e *Call, i int) (string, error) {
	lit, ok := e.Args[i].(*StringLit)
	if !ok {
		return "", c.typeErr(e.Args[i].Position(), "argument %d of %s must be a string literal", i+1, e.Name)
	}
	return lit.Val, nil
}

// codeArgs checks the "CODE", "message" pair starting at argument i.
func (c *checker) codeArgs(e *Call, i int) error {
	code, err := c.stringArg(e, i)
	if err != nil {
		return err
	}
	if !codeRe.MatchString(code) {
		return c.typeErr(e.Args[i].Position(), "error code %q must match ^[A-Z][A-Z0-9_]{2,63}$", code)
	}
	_, err = c.stringArg(e, i+1)
	return err
}

// scaleArg requires argument i to be an integer literal in 0..MaxScale.
func (c *checker) scaleArg(e *Call, i int) (int, error) {
	lit, ok := e.Args[i].(*IntLit)
	if !ok || lit.Val < 0 || lit.Val > MaxScale {
		return 0, c.typeErr(e.Args[i].Position(), "argument %d of %s must be a scale literal 0..%d", i+1, e.Name, MaxScale)
	}
	return int(lit.Val), nil
}

// unitArg requires argument i to be a known unit name.
func (c *checker) unitArg(e *Call, i int) (string, error) {
	id, ok := e.Args[i].(*Ident)
	if !ok {
		return "", c.typeErr(e.Args[i].Position(), "argument %d of %s must be a unit name", i+1, e.Name)
	}
	if _, known := units[id.Name]; !known {
		return "", errAt(errcode.UnitMismatch, c.cur, id.At, "unknown unit %q", id.Name)
	}
	return id.Name, nil
}

// kindName names a kind in messages.
func kindName(k Kind) string {
	switch k {
	case KindBool:
		return "Bool"
	case KindInt:
		return "Int"
	case KindText:
		return "Text"
	case KindDate:
		return "Date"
	case KindDec:
		return "Dec"
	case KindQty:
		return "Qty"
	case KindOpt:
		return "Opt"
	case KindList:
		return "List"
	case KindMap:
		return "Map"
	case KindRecord:
		return "Record"
	case KindFact:
		return "Fact"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

package rules

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// call evaluates a built-in call. Arguments are evaluated left to right,
// except that lambda arguments are applied per element and not traced.
func (ev *evaluator) call(e *Call, en *env) (Value, *Node, error) {
	switch e.Name {
	case "field":
		p := e.Args[0].(*StringLit).Val
		v := ev.values[p]
		return v, node(NodeFieldRef, valueData("", v, Member{"field", p})), nil
	case "map", "filter", "fold", "toMap":
		return ev.higherOrder(e, en)
	}
	// Evaluate the value arguments; unit names and scale literals are static.
	// Most built-ins take at most four arguments: keep them on the stack
	// (nothing below retains the slice; "list" copies it).
	var small [4]Value
	args := small[:0]
	if len(e.Args) <= len(small) {
		args = small[:len(e.Args)]
	} else {
		args = make([]Value, len(e.Args))
	}
	kids := make([]*Node, 0, len(e.Args))
	var extra []Member
	for i, a := range e.Args {
		// Static string arguments (a member name, an error code and message)
		// are recorded in the node's data instead of as CONST children.
		if lit, ok := a.(*StringLit); ok && staticStringArg(e.Name, i) {
			args[i] = textVal(lit.Val)
			if ev.quiet == 0 { // lambda bodies are not traced
				extra = append(extra, Member{staticArgNames[e.Name][i-1], lit.Val})
			}
			continue
		}
		if id, ok := a.(*Ident); ok && isUnitArg(e.Name, i) {
			args[i] = textVal(id.Name)
			continue
		}
		if lit, ok := a.(*IntLit); ok && e.Name == "toDec" && i == 1 {
			args[i] = intVal(lit.Val)
			continue
		}
		v, n, err := ev.eval(a, en)
		if err != nil {
			return Value{}, nil, err
		}
		args[i] = v
		kids = append(kids, n)
	}
	switch e.Name {
	case "getFact":
		return ev.getFact(args[0].S, args[1].S, kids)
	case "getFactsByPrefix":
		return ev.getFactsByPrefix(args[0].S, args[1].S, kids)
	case "emitCompliance":
		r := ComplianceResult{Field: ev.cur, Code: args[0].S, OK: args[1].B, Detail: args[2].S}
		ev.compliance = append(ev.compliance, r)
		v := shaped(Value{Kind: KindRecord, Keys: []string{"code", "detail", "ok"},
			Elems: []Value{args[0], args[2], args[1]}})
		return v, node(NodeComplianceEmit, Data{Members: []Member{{"code", r.Code}, {"ok", r.OK}, {"detail", r.Detail}}}, kids...), nil
	case "requireSome":
		if !args[0].IsSome() {
			return Value{}, nil, ev.rtErr(errcode.Code(args[1].S), e.At, "required value is none: %s", args[2].S)
		}
		v := args[0].Elems[0]
		return v, withData(ev.opNode(e.Name, v, kids...), extra), nil
	}
	v, err := ev.pure(e, args)
	if err != nil {
		return Value{}, nil, err
	}
	return v, withData(ev.opNode(e.Name, v, kids...), extra), nil
}

// staticArgNames names the static string arguments (from index 1) recorded in trace data.
var staticArgNames = map[string][]string{
	"recordGet":   {"name"},
	"requireSome": {"code", "message"},
}

func staticStringArg(name string, i int) bool {
	return i >= 1 && i <= len(staticArgNames[name])
}

// withData adds extra entries to a node's data.
func withData(n *Node, extra []Member) *Node {
	if n == nil {
		return nil
	}
	for _, m := range extra {
		n.Data.Set(m.Key, m.Val)
	}
	return n
}

// isUnitArg reports whether argument i of built-in name is a unit name.
func isUnitArg(name string, i int) bool {
	return i == 1 && (name == "toQty" || name == "qty" || name == "convert")
}

// pure computes the built-ins whose result depends only on their arguments.
func (ev *evaluator) pure(e *Call, args []Value) (Value, error) {
	a := args[0]
	switch e.Name {
	case "recordGet":
		name := args[1].S
		if a.Kind == KindRecord {
			i, _ := slices.BinarySearch(a.Keys, name)
			return a.Elems[i], nil
		}
		obj, ok := a.Fact.(map[string]any)
		if !ok {
			return Value{}, ev.badData(e.At, "recordGet(%q) on a fact value that is not an object", name)
		}
		m, ok := obj[name]
		if !ok || m == nil {
			return noneVal(), nil
		}
		return someVal(factVal(m)), nil
	case "isSome":
		return boolVal(a.IsSome()), nil
	case "some":
		return someVal(a), nil
	case "unwrapOr":
		if a.IsSome() {
			return a.Elems[0], nil
		}
		return args[1], nil
	case "toDec":
		d, err := ev.decimalOf(e, a)
		if err != nil {
			return Value{}, err
		}
		return ev.decValue(e, d, Value{Kind: KindDec, Scale: int(args[1].I)})
	case "toQty", "qty":
		d, err := ev.decimalOf(e, a)
		if err != nil {
			return Value{}, err
		}
		return ev.decValue(e, d, Value{Kind: KindQty, Unit: args[1].S})
	case "convert":
		from, to := units[a.Unit], units[args[1].S]
		d := new(apd.Decimal)
		if _, err := decCtx.Mul(d, a.D, apd.New(from.factor, 0)); err != nil {
			return Value{}, ev.badData(e.At, "conversion failed: %v", err)
		}
		q, err := divRound(d, apd.New(to.factor, 0), QtyScale)
		if err != nil {
			return Value{}, ev.badData(e.At, "conversion failed: %v", err)
		}
		return ev.decValue(e, q, Value{Kind: KindQty, Unit: args[1].S})
	case "sumQty", "sumDec":
		sum := new(apd.Decimal)
		for _, x := range a.Elems {
			if _, err := decCtx.Add(sum, sum, x.D); err != nil {
				return Value{}, ev.badData(e.At, "sum failed: %v", err)
			}
		}
		out := Value{Kind: e.typ.Kind, Scale: e.typ.Scale, Unit: e.typ.Unit}
		return ev.decValue(e, sum, out)
	case "mapGet":
		i, ok := slices.BinarySearch(a.Keys, args[1].S)
		if !ok {
			return noneVal(), nil
		}
		return someVal(a.Elems[i]), nil
	case "len":
		return intVal(int64(len(a.Elems))), nil
	case "toText":
		switch a.Kind {
		case KindInt:
			return textVal(strconv.FormatInt(a.I, 10)), nil
		case KindDec:
			return textVal(decText(a.D)), nil
		case KindBool:
			return textVal(strconv.FormatBool(a.B)), nil
		}
		s, err := ev.text(e, a)
		if err != nil {
			return Value{}, err
		}
		return textVal(s), nil
	case "toInt":
		s := a.S
		if a.Kind == KindFact {
			n, ok := a.Fact.(json.Number)
			if !ok {
				return Value{}, ev.badData(e.At, "toInt: fact value is not an integer")
			}
			s = n.String()
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Value{}, ev.badData(e.At, "toInt: %q is not an Int", s)
		}
		return intVal(i), nil
	case "toBool":
		b, ok := a.Fact.(bool)
		if !ok {
			return Value{}, ev.badData(e.At, "toBool: fact value is not a boolean")
		}
		return boolVal(b), nil
	case "toDate":
		s, err := ev.text(e, a)
		if err != nil {
			return Value{}, err
		}
		if !validDate(s) {
			return Value{}, ev.badData(e.At, "toDate: %q is not a YYYY-MM-DD date", s)
		}
		return dateVal(s), nil
	case "concat":
		var b strings.Builder
		for _, x := range args {
			if b.Len()+len(x.S) > MaxTextBytes {
				return Value{}, ev.badData(e.At, "concat: text longer than %d bytes", MaxTextBytes)
			}
			b.WriteString(x.S)
		}
		// Text is the one thing a single step can build a megabyte of: it
		// counts against MaxSteps by its length, so that an evaluation
		// cannot build (and hold) gigabytes of it in a few thousand steps.
		ev.steps += b.Len() / textBytesPerStep
		if ev.steps > MaxSteps {
			return Value{}, ev.rtErr(errcode.Validation, e.At, "evaluation exceeded %d steps", MaxSteps)
		}
		return textVal(b.String()), nil
	case "list":
		return listVal(slices.Clone(args)), nil
	case "record":
		idx := make([]int, len(args))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(x, y int) int { return strings.Compare(e.Names[x], e.Names[y]) })
		v := Value{Kind: KindRecord}
		for _, i := range idx {
			v.Keys = append(v.Keys, e.Names[i])
			v.Elems = append(v.Elems, args[i])
		}
		return shaped(v), nil
	}
	return Value{}, ev.rtErr(errcode.Internal, e.At, "unknown function %q", e.Name)
}

// decimalOf converts a Fact, Text, Int, Dec or Qty value to an exact decimal.
func (ev *evaluator) decimalOf(e *Call, a Value) (*apd.Decimal, error) {
	switch a.Kind {
	case KindInt:
		return apd.New(a.I, 0), nil
	case KindDec, KindQty:
		return a.D, nil
	case KindText:
		d, ok := parseDec(a.S)
		if !ok {
			return nil, ev.badData(e.At, "%s: %q is not a decimal string", e.Name, a.S)
		}
		return d, nil
	}
	var s string
	switch f := a.Fact.(type) {
	case string:
		s = f
	case json.Number:
		s = f.String()
	default:
		return nil, ev.badData(e.At, "%s: fact value is neither a decimal string nor an integer", e.Name)
	}
	d, ok := parseDec(s)
	if !ok {
		return nil, ev.badData(e.At, "%s: %q is not a decimal string", e.Name, s)
	}
	return d, nil
}

// decValue rounds d half-even to the scale of out (Dec scale or QtyScale),
// checks its range and stores it in out.
func (ev *evaluator) decValue(e *Call, d *apd.Decimal, out Value) (Value, error) {
	q, err := quantize(d, valueScale(out))
	if err != nil || !inRange(q) {
		return Value{}, ev.badData(e.At, "%s: decimal out of range (|x| must be below 10^%d)", e.Name, maxIntDigits)
	}
	out.D = q
	return out, nil
}

// getFact looks up one fact by type and key.
func (ev *evaluator) getFact(typ, key string, kids []*Node) (Value, *Node, error) {
	i, ok := slices.BinarySearchFunc(ev.facts, Fact{FactType: typ, FactKey: key}, compareFacts)
	data := Data{Members: []Member{{"fn", "getFact"}, {"fact_type", typ}, {"fact_key", key}, {"found", ok}}}
	if !ok {
		return noneVal(), node(NodeFactGet, data, kids...), nil
	}
	data.Set("payload_hash", hash.SHA256Hex(ev.facts[i].Payload))
	return someVal(factVal(ev.fact(i))), node(NodeFactGet, data, kids...), nil
}

// getFactsByPrefix returns the facts of a type whose key starts with prefix, ordered by key.
func (ev *evaluator) getFactsByPrefix(typ, prefix string, kids []*Node) (Value, *Node, error) {
	i, _ := slices.BinarySearchFunc(ev.facts, Fact{FactType: typ, FactKey: prefix}, compareFacts)
	var vals []Value
	listed := []map[string]any{}
	for ; i < len(ev.facts) && ev.facts[i].FactType == typ && strings.HasPrefix(ev.facts[i].FactKey, prefix); i++ {
		vals = append(vals, factVal(ev.fact(i)))
		listed = append(listed, map[string]any{"fact_key": ev.facts[i].FactKey, "payload_hash": hash.SHA256Hex(ev.facts[i].Payload)})
	}
	if vals == nil {
		vals = []Value{}
	}
	data := Data{Members: []Member{{"fn", "getFactsByPrefix"}, {"fact_type", typ}, {"key_prefix", prefix}, {"facts", listed}}}
	return listVal(vals), node(NodeFactGet, data, kids...), nil
}

// higherOrder evaluates map, filter, fold and toMap. Only the list (and the
// fold's initial value) are traced as children; lambda applications are
// folded into the call's OP node.
func (ev *evaluator) higherOrder(e *Call, en *env) (Value, *Node, error) {
	list, ln, err := ev.eval(e.Args[0], en)
	if err != nil {
		return Value{}, nil, err
	}
	apply := func(argIdx int, params ...Value) (Value, error) {
		l := e.Args[argIdx].(*Lambda)
		inner := en
		for j, p := range l.Params {
			inner = &env{name: p, val: params[j], next: inner}
		}
		ev.quiet++
		v, _, err := ev.eval(l.Body, inner)
		ev.quiet--
		return v, err
	}
	var out Value
	kids := []*Node{ln}
	switch e.Name {
	case "map", "filter":
		elems := []Value{}
		for _, x := range list.Elems {
			y, err := apply(1, x)
			if err != nil {
				return Value{}, nil, err
			}
			switch {
			case e.Name == "map":
				elems = append(elems, y)
			case y.B:
				elems = append(elems, x)
			}
		}
		out = listVal(elems)
	case "fold":
		acc, in, err := ev.eval(e.Args[1], en)
		if err != nil {
			return Value{}, nil, err
		}
		kids = append(kids, in)
		for _, x := range list.Elems {
			if acc, err = apply(2, acc, x); err != nil {
				return Value{}, nil, err
			}
		}
		out = acc
	case "toMap":
		type pair struct {
			k string
			v Value
		}
		pairs := make([]pair, 0, len(list.Elems))
		for _, x := range list.Elems {
			k, err := apply(1, x)
			if err != nil {
				return Value{}, nil, err
			}
			v, err := apply(2, x)
			if err != nil {
				return Value{}, nil, err
			}
			pairs = append(pairs, pair{k.S, v})
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
		out = Value{Kind: KindMap, Keys: []string{}, Elems: []Value{}}
		for i, p := range pairs {
			if i > 0 && pairs[i-1].k == p.k {
				return Value{}, nil, ev.badData(e.At, "toMap: duplicate key %q", p.k)
			}
			out.Keys = append(out.Keys, p.k)
			out.Elems = append(out.Elems, p.v)
		}
		out = shaped(out)
	}
	return out, ev.opNode(e.Name, out, kids...), nil
}

// text returns the text of a, the argument of the conversion e: a Text or
// Date value's own, or the string a Fact holds (a fact holding anything else
// is bad data).
func (ev *evaluator) text(e *Call, a Value) (string, error) {
	if a.Kind != KindFact {
		return a.S, nil
	}
	s, ok := a.Fact.(string)
	if !ok {
		return "", ev.badData(e.At, "%s: fact value is not a string", e.Name)
	}
	return s, nil
}

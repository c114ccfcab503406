package compiler

import (
	"slices"
	"strings"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
)

// PassportFormat is the passport_format of every BPC-PASSPORT-1 payload.
const PassportFormat = "BPC-PASSPORT-1"

// buildPayload returns the canonical BPC-PASSPORT-1 bytes of an evaluation.
// The document is built from maps, strings and rules.Values, which canonjson
// writes directly (sorting keys). Paths were checked by checkPathConflicts,
// so every segment before the last is an object.
func buildPayload(in Input, snapshotHash string, res *rules.Result) ([]byte, error) {
	fields := map[string]any{}
	for _, f := range res.Fields {
		segs := strings.Split(f.Path, ".")
		obj := fields
		for _, s := range segs[:len(segs)-1] {
			next, ok := obj[s].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[s] = next
			}
			obj = next
		}
		obj[segs[len(segs)-1]] = f.Value
	}
	compliance := make([]map[string]any, len(res.Compliance))
	for i, c := range res.Compliance {
		compliance[i] = map[string]any{"field": c.Field, "code": c.Code, "ok": c.OK, "detail": c.Detail}
	}
	doc := map[string]any{
		"passport_format":         PassportFormat,
		"tenant_id":               in.TenantID,
		"passport_version_id":     in.PassportVersionID,
		"passport_id":             in.PassportID,
		"battery_product_id":      in.BatteryProductID,
		"snapshot_id":             in.SnapshotID,
		"snapshot_hash":           snapshotHash,
		"rule_package_version_id": in.RulePackageVersionID,
		"fields":                  fields,
		"compliance":              compliance,
	}
	b, err := canonjson.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding the payload: %s", err.Error())
	}
	return b, nil
}

// checkPathConflicts rejects two fields of which one's path is a segment
// prefix of the other's ("a.b" and "a.b.c"): in the nested payload "a.b"
// cannot be a value and an object at once. The error is RULE_TYPE_ERROR at
// the later declaration of the two, naming both.
func checkPathConflicts(prog *rules.Program) error {
	paths := prog.Order()
	slices.Sort(paths)
	// Path characters are [a-z0-9_.] and '.' sorts before all others, so if
	// any path extends p by a segment, the smallest such path directly
	// follows p in byte order.
	for i := 1; i < len(paths); i++ {
		short, long := paths[i-1], paths[i]
		if !strings.HasPrefix(long, short+".") {
			continue
		}
		first, second := prog.Field(short), prog.Field(long)
		if second.Pos.Line < first.Pos.Line || second.Pos.Line == first.Pos.Line && second.Pos.Col < first.Pos.Col {
			first, second = second, first
		}
		e := errcode.New(errcode.RuleTypeError,
			"field %s at %s: paths %s and %s collide in the payload (%s would be both a value and an object)",
			second.Path, second.Pos, short, long, short)
		e.Field = second.Path
		e.Details = map[string]any{
			"field":          second.Path,
			"line":           second.Pos.Line,
			"col":            second.Pos.Col,
			"conflicts_with": first.Path,
		}
		return e
	}
	return nil
}

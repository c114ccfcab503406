package compiler

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
)

// PassportFormat is the passport_format of every BPC-PASSPORT-1 payload.
const PassportFormat = "BPC-PASSPORT-1"

// passportDoc is the BPC-PASSPORT-1 payload; canonjson sorts its keys.
type passportDoc struct {
	PassportFormat       string            `json:"passport_format"`
	TenantID             string            `json:"tenant_id"`
	PassportVersionID    string            `json:"passport_version_id"`
	PassportID           string            `json:"passport_id"`
	BatteryProductID     string            `json:"battery_product_id"`
	SnapshotID           string            `json:"snapshot_id"`
	SnapshotHash         string            `json:"snapshot_hash"`
	RulePackageVersionID string            `json:"rule_package_version_id"`
	Fields               map[string]any    `json:"fields"`
	Compliance           []complianceEntry `json:"compliance"`
}

type complianceEntry struct {
	Field  string `json:"field"`
	Code   string `json:"code"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// buildPayload returns the canonical BPC-PASSPORT-1 bytes of an evaluation.
// Paths were checked by checkPathConflicts, so every segment before the last
// is an object.
func buildPayload(in Input, snapshotHash string, res *rules.Result) ([]byte, error) {
	doc := passportDoc{
		PassportFormat:       PassportFormat,
		TenantID:             in.TenantID,
		PassportVersionID:    in.PassportVersionID,
		PassportID:           in.PassportID,
		BatteryProductID:     in.BatteryProductID,
		SnapshotID:           in.SnapshotID,
		SnapshotHash:         snapshotHash,
		RulePackageVersionID: in.RulePackageVersionID,
		Fields:               map[string]any{},
		Compliance:           make([]complianceEntry, len(res.Compliance)),
	}
	for _, f := range res.Fields {
		value, err := f.Value.MarshalCanonical()
		if err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "error encoding the value of field %s: %s", f.Path, err.Error())
		}
		segs := strings.Split(f.Path, ".")
		obj := doc.Fields
		for _, s := range segs[:len(segs)-1] {
			next, ok := obj[s].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[s] = next
			}
			obj = next
		}
		obj[segs[len(segs)-1]] = json.RawMessage(value)
	}
	for i, c := range res.Compliance {
		doc.Compliance[i] = complianceEntry(c)
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

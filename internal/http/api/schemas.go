package api

import (
	"maps"
	"reflect"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// What the response types' Go types cannot say, said once from the
// constants that define it: the closed sets of their string members
// (enums) and the shape of their JSON members (json.RawMessage, which Huma
// documents as any value). refineMembers applies them to every schema of
// the type, embedded structs included (batchItem embeds bpctype.Job).

// memberRefinement changes the schema of one member of a struct type.
type memberRefinement func(reg huma.Registry, p *huma.Schema) *huma.Schema

// enumOf sets the member's enum to values.
func enumOf[S ~string](values []S) memberRefinement {
	return func(_ huma.Registry, p *huma.Schema) *huma.Schema {
		p.Enum = nil
		for _, v := range values {
			p.Enum = append(p.Enum, string(v))
		}
		return p
	}
}

// typedAs replaces the member's schema by s (keeping its description).
func typedAs(s func() *huma.Schema) memberRefinement {
	return func(_ huma.Registry, p *huma.Schema) *huma.Schema {
		n := s()
		if n.Description == "" {
			n.Description = p.Description
		}
		return n
	}
}

// jobTypes sets Job.type's enum to the job types of the document's
// enqueue request (kindSchemas: the registered kinds), when it has one.
func jobTypes(reg huma.Registry, p *huma.Schema) *huma.Schema {
	union := reg.Map()["EnqueueRequest"]
	if union == nil || union.Discriminator == nil {
		return p
	}
	p.Enum = nil
	for _, k := range slices.Sorted(maps.Keys(union.Discriminator.Mapping)) {
		p.Enum = append(p.Enum, k)
	}
	return p
}

func strSchema(desc string) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Description: desc}
}

// jobError is Job.last_error as bpc_last_error (migrations) writes it.
func jobError() *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true,
		Description: "The last attempt's error, null when no attempt failed.",
		Properties: map[string]*huma.Schema{
			"code":    strSchema("Error code (SPEC §4), e.g. VALIDATION_ERROR, INTERNAL_ERROR, CANCELLED."),
			"message": {Type: huma.TypeString, MaxLength: ptr(500), Description: "One line."},
			"attempt": {Type: huma.TypeInteger, Nullable: true, Description: "The attempt that failed (1 is the first)."},
			"at":      {Type: huma.TypeString, Nullable: true, Format: "date-time", Description: "When it failed."},
		},
		Required: []string{"code", "message"},
	}
}

// firstFailure is RuleTestsRun.first_failure: the first failing test case
// (core/rules.TestFailure), or a message when the run had too few cases.
func firstFailure() *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true,
		Description: "The first failing case; {\"message\"} when the run failed for having too few cases; null when the run passed.",
		Properties: map[string]*huma.Schema{
			"test":     strSchema("The test's name."),
			"case":     {Type: huma.TypeInteger, Description: "The case's index within the test."},
			"inputs":   {Description: "The case's inputs (JSON)."},
			"expected": strSchema("What the test expected."),
			"actual":   strSchema("What the rules answered."),
			"message":  strSchema("Why the run failed without a failing case."),
		},
	}
}

// documentError is DocumentVersion.error as the store writes it when the
// parser rejects a version.
func documentError() *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true,
		Description: "Why the version was REJECTED; null otherwise.",
		Properties: map[string]*huma.Schema{
			"code":    strSchema("Error code, e.g. VALIDATION_ERROR."),
			"message": strSchema("What is wrong with the document."),
			"field":   strSchema("The document member at fault, when one is."),
		},
		Required: []string{"code", "message"},
	}
}

func objectSchema(desc string) func() *huma.Schema {
	return func() *huma.Schema { return &huma.Schema{Type: huma.TypeObject, Description: desc} }
}

func responseHeadersSchema() *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true, AdditionalProperties: &huma.Schema{Type: huma.TypeString},
		Description: "The endpoint's response headers of the last attempt; null before any response."}
}

var memberRefinements = map[reflect.Type]map[string]memberRefinement{
	reflect.TypeFor[bpctype.Job](): {
		"status":     enumOf(bpctype.Statuses),
		"type":       jobTypes,
		"last_error": typedAs(jobError),
		"payload":    typedAs(objectSchema("The job's arguments: the payload schema of its type (EnqueueRequest's oneOf).")),
	},
	reflect.TypeFor[bpctype.APIKey]():             {"role": enumOf(passport.Roles)},
	reflect.TypeFor[bpctype.Document]():           {"kind": enumOf(facts.Kinds)},
	reflect.TypeFor[bpctype.DocumentVersion]():    {"status": enumOf(bpctype.DocumentVersionStatuses), "error": typedAs(documentError)},
	reflect.TypeFor[bpctype.Fact]():               {"payload": typedAs(objectSchema("The fact's canonical JSON (BPC-CJSON-1)."))},
	reflect.TypeFor[bpctype.Snapshot]():           {"status": enumOf(bpctype.SnapshotStatuses)},
	reflect.TypeFor[bpctype.PassportVersion]():    {"status": enumOf(bpctype.PassportStatuses)},
	reflect.TypeFor[bpctype.PassportExport]():     {"format": enumOf([]string{jobargs.ExportFormatJSON, jobargs.ExportFormatPDF})},
	reflect.TypeFor[bpctype.RulePackageVersion](): {"status": enumOf(bpctype.RuleVersionStatuses)},
	reflect.TypeFor[bpctype.RuleTestsRun]():       {"status": enumOf(bpctype.RuleTestsStatuses), "first_failure": typedAs(firstFailure)},
	reflect.TypeFor[bpctype.WebhookDelivery]():    {"status": enumOf(bpctype.DeliveryStatuses), "response_headers": typedAs(responseHeadersSchema)},
	reflect.TypeFor[breaker.View]():               {"state": enumOf(bpctype.BreakerStates)},
	reflect.TypeFor[public.VerifiedVersion](): {
		"status":  enumOf(bpctype.PublishedPassportStatuses),
		"payload": typedAs(objectSchema("The stored BPC-PASSPORT-1 payload.")),
		"receipt": typedAs(objectSchema("The signed BPC-RECEIPT-1 receipt.")),
	},
}

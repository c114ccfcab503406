package rules

import (
	"github.com/bpc-platform/bpc/core/errcode"
)

// MaxDepth bounds the nesting of every construct of a rule or tests source:
// expressions (a chain of binary operators counts one level per operator, as
// the left-nested tree it builds does), types, parentheses, lets and the
// JSON of test facts. It is what keeps the recursive parser, checker and
// evaluator far from the end of a goroutine's stack, so it is a language
// constant, not a setting.
const MaxDepth = 200

// DefaultMaxNodes is the default of Limits.MaxNodes (BPC_RULES_MAX_NODES).
const DefaultMaxNodes = 200_000

// DefaultMaxCases is the default of Limits.MaxCases (BPC_RULES_MAX_CASES).
const DefaultMaxCases = 1_000_000

// guardDepth is how deep the checker and the evaluator recurse before they
// give up. The parser admits trees at most MaxDepth deep; the tests language
// wraps an expectation's expression in one comparison. The guard is a
// backstop for trees built some other way (CheckFile takes any File), so
// that no future change to the parser can reopen a stack overflow.
const guardDepth = MaxDepth + 8

// MaxTypeNodes bounds the size of a type (its parts, counted as a tree),
// declared or inferred, so that comparing, unifying and printing types
// stays cheap however a source combines them.
const MaxTypeNodes = 1000

// MaxValueNodes bounds the parts of one runtime value (list elements, record
// members, nested options, each counted once per occurrence).
const MaxValueNodes = 1 << 20

// MaxValueDepth bounds the nesting of one runtime value: the deepest that a
// BPC-CJSON-1 document may nest (canonjson.MaxDepth).
const MaxValueDepth = 1000

// maxGenNodes bounds the parts a property's generator may draw for one case
// (List(List(…)) would otherwise grow exponentially with its nesting).
const maxGenNodes = 10_000

// Limits bounds the work one source may ask of the engine. Read from the
// configuration by the service and passed down; a zero member means its
// default. The methods Parse, Check, CheckTests and RunTests apply them; the
// package functions of the same names use DefaultLimits.
type Limits struct {
	// MaxNodes bounds the syntax nodes (expressions, types, JSON values of
	// test facts) of one source; beyond it the source is a RULE_PARSE_ERROR
	// at the node that crossed it.
	MaxNodes int
	// MaxCases bounds the cases of one test run in total: one per example
	// plus N per property with cases(N). A tests source asking for more is a
	// VALIDATION_ERROR at the property that crosses the limit, before
	// anything runs.
	MaxCases int
}

// DefaultLimits returns the limits of SPEC §12 (BPC_RULES_MAX_NODES 200000,
// BPC_RULES_MAX_CASES 1000000).
func DefaultLimits() Limits {
	return Limits{MaxNodes: DefaultMaxNodes, MaxCases: DefaultMaxCases}
}

// effective fills zero members with their defaults.
func (l Limits) effective() Limits {
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxCases <= 0 {
		l.MaxCases = DefaultMaxCases
	}
	return l
}

// casesLimitError reports a tests source that asks for more cases than a
// run may have.
func casesLimitError(test string, pos Pos, total int64, limit int) *errcode.Error {
	e := errAt(errcode.Validation, test, pos,
		"the tests ask for %d cases or more in total (one per example, N per property), more than the limit of %d per run (BPC_RULES_MAX_CASES)",
		total, limit)
	e.Details["limit"] = "BPC_RULES_MAX_CASES"
	e.Details["max_cases"] = limit
	return e
}

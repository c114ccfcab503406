package rules

import (
	"regexp"

	"github.com/cockroachdb/apd/v3"
)

// decCtx is the context of every decimal operation. Its precision (100
// digits) exceeds any intermediate result the language can produce (operands
// are below 10^30 with at most 18 fractional digits), so additions,
// subtractions and multiplications are exact; the only roundings are the
// explicit half-even quantizations in quantize and divRound.
var decCtx = apd.Context{
	Precision:   100,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
	Rounding:    apd.RoundHalfEven,
}

// decLimit is 10^30: every Dec and Qty magnitude must be strictly below it in absolute value.
var decLimit = apd.New(1, maxIntDigits)

// decStringRe is the accepted syntax of decimal strings in facts and Text.
var decStringRe = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,40})?$`)

// parseDec parses a plain decimal string exactly (no exponent, no '+').
func parseDec(s string) (*apd.Decimal, bool) {
	if !decStringRe.MatchString(s) {
		return nil, false
	}
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return nil, false
	}
	return d, true
}

// quantize returns d rounded half-even to exactly scale fractional digits.
func quantize(d *apd.Decimal, scale int) (*apd.Decimal, error) {
	out := new(apd.Decimal)
	if _, err := decCtx.Quantize(out, d, int32(-scale)); err != nil {
		return nil, err
	}
	if out.IsZero() {
		out.Negative = false
	}
	return out, nil
}

// inRange reports whether |d| < 10^30.
func inRange(d *apd.Decimal) bool {
	var abs apd.Decimal
	abs.Abs(d)
	return abs.Cmp(decLimit) < 0
}

// divRound returns a/b rounded half-even to exactly scale fractional digits,
// computed with integer division and remainder so that there is a single
// rounding step. b must not be zero.
func divRound(a, b *apd.Decimal, scale int) (*apd.Decimal, error) {
	x := new(apd.Decimal).Set(a)
	x.Exponent += int32(scale) // x = a * 10^scale
	q, r := new(apd.Decimal), new(apd.Decimal)
	if _, err := decCtx.QuoInteger(q, x, b); err != nil {
		return nil, err
	}
	if _, err := decCtx.Rem(r, x, b); err != nil {
		return nil, err
	}
	// Compare 2|r| with |b| to decide the rounding of the truncated quotient.
	var twoR, absB apd.Decimal
	twoR.Abs(r)
	if _, err := decCtx.Add(&twoR, &twoR, &twoR); err != nil {
		return nil, err
	}
	absB.Abs(b)
	cmp := twoR.Cmp(&absB)
	roundAway := cmp > 0
	if cmp == 0 {
		var parity apd.Decimal
		if _, err := decCtx.Rem(&parity, q, apd.New(2, 0)); err != nil {
			return nil, err
		}
		roundAway = !parity.IsZero()
	}
	if roundAway && !r.IsZero() {
		step := apd.New(1, 0)
		if x.Negative != b.Negative {
			step.Negative = true
		}
		if _, err := decCtx.Add(q, q, step); err != nil {
			return nil, err
		}
	}
	q.Exponent -= int32(scale)
	return quantize(q, scale)
}

package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/internal/rulebench"
)

// benchProgram is rulebench's 40-field program over 10 material facts.
func benchProgram() (string, FactSet) {
	src, facts := rulebench.Program()
	set := make(FactSet, len(facts))
	for i, f := range facts {
		set[i] = Fact(f)
	}
	return src, set
}

func TestBenchProgramEvaluates(t *testing.T) {
	t.Parallel()
	src, facts := benchProgram()
	p, err := Check(src)
	require.NoError(t, err)
	require.Len(t, p.Fields, 40)
	r, err := p.Evaluate(facts)
	require.NoError(t, err)
	v, _ := r.Value("total.mass_kg")
	require.Equal(t, `{"unit":"kg","value":"11.667500"}`, v.String())
	v, _ = r.Value("circ.count")
	require.Equal(t, `10`, v.String())
}

func BenchmarkCheck(b *testing.B) {
	src, _ := benchProgram()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Check(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	src, facts := benchProgram()
	p, err := Check(src)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.Evaluate(facts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunTests500(b *testing.B) {
	p, err := Check(testRules)
	if err != nil {
		b.Fatal(err)
	}
	src := `
example ok: { fact f("pcf", "total") = {"value": "61.20"}; } => expect(cf.total, ==, 61.20);
property a: cases(499) seed(7) => forall x: Dec(2). implies(x > 0.00, x + x > x);
`
	s, err := CheckTests(p, src)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r, err := s.Run(b.Context(), 1); err != nil || r.Failed != 0 || r.TotalCases != 500 {
			b.Fatal(r, err)
		}
	}
}

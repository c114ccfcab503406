package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/internal/rulebench"
	"github.com/bpc-platform/bpc/core/rules"
)

// benchInput40 is rulebench's 40-field program over ten materials and a
// PCF, the size of a realistic passport rule package.
func benchInput40() Input {
	src, facts := rulebench.Program()
	in := baseInput()
	in.DSLSource = src
	in.Facts = make([]rules.Fact, len(facts))
	for i, f := range facts {
		in.Facts[i] = rules.Fact(f)
	}
	return in
}

func TestBenchInput40Compiles(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(benchInput40())
	require.NoError(t, err)
	require.Len(t, out.Compliance, 2)
	require.NoError(t, VerifyProof(out.Proof))
}

// BenchmarkCompile compiles the pcf_asserts fixture (14 fields, 11 facts);
// the goal is at most 2 ms per compile.
func BenchmarkCompile(b *testing.B) {
	in := loadFixture(b, "pcf_asserts")
	for b.Loop() {
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile40 compiles a 40-field program over 11 facts.
func BenchmarkCompile40(b *testing.B) {
	in := benchInput40()
	for b.Loop() {
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyProof verifies the proof of the pcf_asserts fixture.
func BenchmarkVerifyProof(b *testing.B) {
	out, err := CompilePassport(loadFixture(b, "pcf_asserts"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out.Proof)))
	for b.Loop() {
		if err := VerifyProof(out.Proof); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileSampleCold compiles the NMC811 sample with the program
// cache emptied before every compile: the first compile against a rule
// package version (BenchmarkCompileSample in examples/nmc811 is the warm case).
func BenchmarkCompileSampleCold(b *testing.B) {
	in := loadFixture(b, "nmc811")
	b.ReportAllocs()
	for b.Loop() {
		programs.mu.Lock()
		programs.byDigest, programs.order = map[string]*rules.Program{}, nil
		programs.mu.Unlock()
		if _, err := CompilePassport(in); err != nil {
			b.Fatal(err)
		}
	}
}

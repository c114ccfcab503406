package compiler

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

// A value that holds one long text many times is small in memory and huge
// when written: the payload and proof encodings stop at
// rules.MaxEncodedBytes with the size limit's code, instead of
// growing until the process runs out of memory.
func TestRepeatedValuesStopTheEncodingEarly(t *testing.T) {
	t.Parallel()
	mebibyte := `fold(list(` + strings.TrimSuffix(strings.Repeat("1,", 20), ",") + `), "a", (acc, x) => concat(acc, acc))`
	many := "list(" + strings.TrimSuffix(strings.Repeat("t,", 100), ",") + ")"
	for _, tc := range []struct {
		name, src string
		code      errcode.Code
	}{
		{"payload", "field a : List(Text) = let t = " + mebibyte + "; " + many + ";", errcode.PayloadTooLarge},
		{"proof", "field a : Int = let t = " + mebibyte + "; len(" + many + ");", errcode.ProofTooLarge},
	} {
		in := baseInput()
		in.DSLSource = tc.src
		start := time.Now()
		_, err := CompilePassport(in)
		// A did-not-hang bound, not a speed claim: about a second under
		// -race when idle, 46 s seen at a load average of 30; before the
		// limit, minutes and then the OOM killer (which the memory, not
		// this bound, would show).
		require.Less(t, time.Since(start), 5*time.Minute, tc.name)
		require.Equal(t, tc.code, errcode.CodeOf(err), "%s: %v", tc.name, err)
		require.Contains(t, errcode.As(err).Details, "limit")
	}
}

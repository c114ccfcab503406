package compiler

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/rules"
)

// A cached program gives the bytes of a fresh check, from many goroutines at
// once (run with -race); the cache is bounded and keeps no failing source.
func TestProgramCache(t *testing.T) {
	t.Parallel()
	c := &programCache{byDigest: map[string]*rules.Program{}}
	in := benchInput40()
	digest := hash.SHA256HexString(in.DSLSource)

	want, err := CompilePassport(in)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p, err := c.checked(digest, in.DSLSource, rules.Limits{})
			if !assertNoErr(t, err) {
				return
			}
			res, err := p.Evaluate(in.Facts)
			if !assertNoErr(t, err) {
				return
			}
			_, proofBytes, err := buildProof(res)
			if assertNoErr(t, err) && string(proofBytes) != string(want.Proof) {
				t.Errorf("a cached program yields another proof")
			}
		})
	}
	wg.Wait()
	require.Len(t, c.byDigest, 1)

	for i := range programCacheSize + 5 {
		src := fmt.Sprintf("field f.v%d : Int = %d;", i, i)
		_, err := c.checked(hash.SHA256HexString(src), src, rules.Limits{})
		require.NoError(t, err)
	}
	require.Len(t, c.byDigest, programCacheSize)
	require.Len(t, c.order, programCacheSize)
	require.NotContains(t, c.byDigest, digest, "the oldest entry is evicted first")

	bad := "field a : Int = field(\"a\");"
	for range 2 {
		_, err := c.checked(hash.SHA256HexString(bad), bad, rules.Limits{})
		require.Equal(t, errcode.RuleCycleDetected, errcode.CodeOf(err))
	}
	require.NotContains(t, c.byDigest, hash.SHA256HexString(bad))
}

// The cache is no way around the rule limits: a program cached under the
// default node budget is checked again, and refused, under a lower one.
func TestProgramCacheKeepsLimits(t *testing.T) {
	t.Parallel()
	c := &programCache{byDigest: map[string]*rules.Program{}}
	src := "field a : Int = 1 + 2 + 3 + 4;"
	digest := hash.SHA256HexString(src)
	_, err := c.checked(digest, src, rules.Limits{})
	require.NoError(t, err)
	_, err = c.checked(digest, src, rules.Limits{MaxNodes: 3})
	require.Equal(t, errcode.RuleParseError, errcode.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "BPC_RULES_MAX_NODES")
	_, err = c.checked(digest, src, rules.Limits{MaxNodes: 8})
	require.NoError(t, err, "8 nodes: the type Int, four literals and three operators")
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

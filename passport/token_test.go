package passport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		token, prefix := NewToken()
		require.Len(t, token, tokenLen)
		require.Regexp(t, `^bpc_[a-z2-7]{16}_[a-z2-7]{52}$`, token)
		require.False(t, seen[prefix])
		seen[prefix] = true
		got, ok := ParseToken(token)
		require.True(t, ok)
		require.Equal(t, prefix, got)
		require.Len(t, HashToken(token), 32)
	}
	token, _ := NewToken()
	for _, bad := range []string{"", "bpc_", token[:len(token)-1], token + "a", strings.ToUpper(token),
		strings.Replace(token, "bpc_", "bpd_", 1), token[:20] + "-" + token[21:], token[:30] + "1" + token[31:],
		token[:30] + "\x00" + token[31:], "an-admin-token-of-any-length-that-is-long-enough-for-this-test-xyz"} {
		_, ok := ParseToken(bad)
		require.False(t, ok, "%q", bad)
	}
}

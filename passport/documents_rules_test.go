package passport_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/passport"
)

func TestDocumentKindIsOneOfTheParsersKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range facts.Kinds {
		require.NoError(t, passport.CheckDocumentKind(kind), kind)
	}
	e := errcode.As(passport.CheckDocumentKind("INVOICE"))
	require.NotNil(t, e)
	require.Equal(t, errcode.Validation, e.Code)
	require.Equal(t, "kind: must be one of BOM, DUE_DILIGENCE, PCF", e.Message)
}

func TestDocumentContentIsNonEmptyAndBounded(t *testing.T) {
	t.Parallel()
	require.NoError(t, passport.CheckDocumentContent([]byte("{}")))
	require.NoError(t, passport.CheckDocumentContent(make([]byte, facts.MaxDocumentBytes)))
	for name, content := range map[string][]byte{"empty": nil, "too large": make([]byte, facts.MaxDocumentBytes+1)} {
		e := errcode.As(passport.CheckDocumentContent(content))
		require.NotNil(t, e, name)
		require.Equal(t, errcode.Validation, e.Code, name)
		require.Equal(t, "content", e.Field, name)
	}
}

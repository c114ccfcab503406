package api

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/passport"
)

// TestVerifyIssuerHandlerChecksThePlatform: the verify handler refuses any
// principal but the platform itself, not only through platformOp's
// middleware — an admin key of the tenant, called straight at the handler
// (as if the route lost its option), is FORBIDDEN before the store is
// reached (the server has none).
func TestVerifyIssuerHandlerChecksThePlatform(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	tenant := uuid.New()
	for name, p := range map[string]access.Principal{
		"admin key of the tenant":  {TenantID: tenant, Role: passport.RoleAdmin},
		"writer key of the tenant": {TenantID: tenant, Role: passport.RoleWriter},
	} {
		ctx := access.NewContext(context.Background(), p)
		in := &idParamsBody[passport.IssuerInput]{ID: ID(tenant), Body: passport.IssuerInput{
			LegalName: "Voltaris Battery Systems GmbH", Country: "DE", RegistrationID: "DE123456789012345"}}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("the handler went on to the store: %v", r)
				}
			}()
			_, err = s.handleVerifyIssuer(ctx, in)
			return err
		}()
		require.Equal(t, errcode.Forbidden, errcode.CodeOf(err), "%s: %v", name, err)
		require.ErrorContains(t, err, "takes the platform token", name)
	}
}

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/service"
)

// The platform token names a resource by its globally unique id alone: on
// every by-id read the answer without tenant_id is the answer with the
// owner's tenant_id, an id nobody owns is 404, and the actions of the
// issue (revoking a key, retrying a job) need no tenant_id either. A
// tenant key still reaches its own tenant's ids only
// (TestTenantKeysCannotReachAnotherTenant).
func TestPlatformTokenNeedsNoTenantOnByIDRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pipelineEnv(t))
	v := newVictim(t, h) // resources of the dev tenant
	tried := 0
	for _, rt := range documentedRoutes(t, h) {
		method, route := rt[0], rt[1]
		if method != http.MethodGet || !strings.Contains(route, "{") || strings.HasPrefix(route, "/public/") || strings.HasPrefix(route, "/p/") {
			continue
		}
		tried++
		path := v.fill(t, route)
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		status, without := h.raw(method, path, nil, map[string]string{"Authorization": "Bearer " + testToken})
		wantStatus, with := h.raw(method, path+sep+"tenant_id="+devTenant, nil, map[string]string{"Authorization": "Bearer " + testToken})
		require.Equal(t, wantStatus, status, "%s %s: %s", method, path, without)
		require.Less(t, status, 500, "%s %s: %s", method, path, without)
		if status == http.StatusOK && !strings.HasPrefix(route, "/v1/jobs/") && !strings.HasPrefix(route, "/v1/webhook-endpoints/") && !strings.HasPrefix(route, "/v1/tenants/") { // these move on their own
			require.Equal(t, string(with), string(without), "%s %s", method, path)
		}

		unknown := strings.Replace(path, strings.Split(strings.TrimPrefix(path, "/"), "/")[2], uuid.NewString(), 1)
		status, raw := h.raw(method, unknown, nil, map[string]string{"Authorization": "Bearer " + testToken})
		require.Equal(t, http.StatusNotFound, status, "%s %s: %s", method, unknown, raw)
		require.Equal(t, "NOT_FOUND", errorCode(t, raw))
	}
	require.Greater(t, tried, 15)

	// Actions by id: revoke a key, retry a job (a succeeded job cannot be
	// retried: 409, not a 422 asking for tenant_id).
	status, raw := h.raw(http.MethodDelete, "/v1/api-keys/"+v.ids["/v1/api-keys/"], nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusNoContent, status, "%s", raw)
	status, raw = h.raw(http.MethodPost, "/v1/jobs/"+v.ids["/v1/jobs/"]+"/retry", nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.NotEqual(t, http.StatusUnprocessableEntity, status, "%s", raw)
	require.Less(t, status, 500, "%s", raw)
	status, raw = h.raw(http.MethodPost, "/v1/snapshots/"+uuid.NewString()+"/seal", map[string]any{}, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusNotFound, status, "%s", raw)
}

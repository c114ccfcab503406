package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
)

// GET /v1/jobs as SPEC §14 has it: the platform lists across tenants unless
// it names one, a tenant key only ever its own tenant's; created_after and
// created_before bound the list; an unknown parameter is refused by name.
func TestJobListFiltersOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	mine := h.newTenant()
	key := h.createKey(mine, "reader", nil)

	enqueue := func(tenant string) bpctype.Job {
		t.Helper()
		tid := uuid.MustParse(tenant)
		var job bpctype.Job
		require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
			"type": jobargs.KindDeliverWebhook, "tenant_id": tenant, "payload": h.deliverPayloadFor(tid)}, &job))
		return job
	}
	devJob := enqueue(devTenant)
	time.Sleep(5 * time.Millisecond)
	myJob := enqueue(mine)

	list := func(token, query string) (int, []uuid.UUID, map[string]any) {
		t.Helper()
		status, body := h.as(token, http.MethodGet, "/v1/jobs?"+query, nil)
		var page struct {
			Items []bpctype.Job `json:"items"`
		}
		var env map[string]any
		_ = json.Unmarshal(body, &env)
		require.NoError(t, json.Unmarshal(body, &page))
		var ids []uuid.UUID
		for _, j := range page.Items {
			ids = append(ids, j.JobID)
		}
		return status, ids, env
	}

	status, ids, _ := list(testToken, "type="+jobargs.KindDeliverWebhook)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []uuid.UUID{myJob.JobID, devJob.JobID}, ids, "the platform lists every tenant's jobs, newest first")
	_, ids, _ = list(testToken, "tenant_id="+devTenant+"&type="+jobargs.KindDeliverWebhook)
	require.Equal(t, []uuid.UUID{devJob.JobID}, ids)

	_, ids, _ = list(key.Token, "")
	require.Equal(t, []uuid.UUID{myJob.JobID}, ids, "a tenant key lists its own tenant's jobs")
	status, _, env := list(key.Token, "tenant_id="+devTenant)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "FORBIDDEN", env["error"].(map[string]any)["code"])

	at := func(tm time.Time) string { return url.QueryEscape(tm.Format(time.RFC3339Nano)) }
	_, ids, _ = list(testToken, "type="+jobargs.KindDeliverWebhook+"&created_after="+at(myJob.CreatedAt))
	require.Equal(t, []uuid.UUID{myJob.JobID}, ids, "created_after is inclusive")
	_, ids, _ = list(testToken, "type="+jobargs.KindDeliverWebhook+"&created_before="+at(myJob.CreatedAt))
	require.Equal(t, []uuid.UUID{devJob.JobID}, ids, "created_before is exclusive")
	_, ids, _ = list(testToken, "status=DEAD_LETTER")
	require.Empty(t, ids)

	for query, field := range map[string]string{
		"tenant=" + devTenant:          "tenant",
		"created_after=last+tuesday":   "created_after",
		"created_before=1700000000":    "created_before",
		"status=DEAD":                  "status",
		"statuses=DEAD_LETTER&limit=1": "statuses",
	} {
		status, _, env := list(testToken, query)
		require.Equal(t, http.StatusUnprocessableEntity, status, query)
		require.Equal(t, field, env["error"].(map[string]any)["details"].(map[string]any)["field"], query)
	}
}

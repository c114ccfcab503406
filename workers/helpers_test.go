package workers_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/testriver"
)

// env is what every live-client test env of this package has (a test
// schema's store and a River client on it); the tests of each subject embed
// it in their own env.
type env = testriver.Env

// jobError is a job's last_error.
type jobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// lastJobError decodes the job's last_error.
func lastJobError(t *testing.T, job bpctype.Job) jobError {
	t.Helper()
	var le jobError
	require.NoError(t, json.Unmarshal(job.LastError, &le), "last_error %s", job.LastError)
	return le
}

package passport_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// The pipeline's steps, in a worker's transaction (Unread collected, as
// workers.inTx does), cost a fixed number of round trips inside their
// transaction, BEGIN and COMMIT and River's occasional insert notification
// not counted: recording the compile 3 (the passport's lock with the
// insert, the event, and the SIGN_PASSPORT insert, whose key names the new
// version and is not looked up), signing 5 (the version's lock with its chain head and key, the
// update, the event and the GENERATE_QR enqueue) and recording the QR code
// 3 (the lock with the chain head, the update, the event). Each read that
// another one could carry costs a round trip, which every step pays under
// load.
func TestPipelineStepsRoundTrips(t *testing.T) {
	t.Parallel()
	trips := &testdb.RoundTrips{}
	e := env{teststore.On(t, testdb.NewWithOptions(t, testdb.Options{Tracer: withoutNotify{trips}}))}
	signer := testSigner(t)
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, signer.KeyID, signer.PublicKeyBase64()))
	keys := fixture.Keyring(t, signer)

	// step runs fn in a worker's transaction and returns its round trips.
	step := func(fn func(tx passport.Tx) error) int64 {
		t.Helper()
		var n int64
		var unread []uuid.UUID
		require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
			ptx := passport.NewTx(tx, passport.NewTxInserter(e.River), "")
			ptx.Unread = &unread
			before := trips.Count()
			err := fn(ptx)
			n = trips.Count() - before
			return err
		}))
		require.NoError(t, e.Store.VerifyMirrored(e.Ctx, unread))
		require.Len(t, unread, 1, "the next step's job is checked by the caller, not read back")
		return n
	}
	s := e.sample(t)
	pipeline := func(jobID int64) (compile, sign, qr int64) {
		req := s.request()
		in, err := passport.LoadCompileInput(e.Ctx, e.Store, req)
		require.NoError(t, err)
		out, err := compiler.CompilePassport(in)
		require.NoError(t, err)
		compile = step(func(tx passport.Tx) error {
			_, err := passport.RecordCompiled(e.Ctx, tx, passport.Compiled{Request: req, Output: out}, jobID)
			return err
		})
		id := req.PassportVersionID
		sign = step(func(tx passport.Tx) error {
			return passport.SignPassportVersion(e.Ctx, tx, keys, store.DevTenantID, id)
		})
		v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
		require.NoError(t, err)
		code, err := passport.RenderQR("https://passports.example.com", v)
		require.NoError(t, err)
		var unread []uuid.UUID
		require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
			ptx := passport.NewTx(tx, passport.NewTxInserter(e.River), "")
			ptx.Unread = &unread
			before := trips.Count()
			err := passport.RecordQR(e.Ctx, ptx, store.DevTenantID, id, code)
			qr = trips.Count() - before
			return err
		}))
		return compile, sign, qr
	}
	pipeline(901) // the first use of each statement prepares it on the connection
	compile, sign, qr := pipeline(902)
	require.EqualValues(t, 3, compile, "recording the compile")
	require.EqualValues(t, 5, sign, "signing")
	require.EqualValues(t, 3, qr, "recording the QR code")
}

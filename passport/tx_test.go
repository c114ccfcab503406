package passport_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// published records what the RabbitMQ trigger would publish.
type published struct {
	mu    sync.Mutex
	calls [][]string
}

func (p *published) Publish(queues []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, append([]string(nil), queues...))
}

func (p *published) all() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]string(nil), p.calls...)
}

// A transaction's job inserts are published once it commits, never before
// and never when it rolls back; an enqueue that finds its job already
// there publishes nothing.
func TestInTxPublishesCommittedInsertsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.bomDocument(t, "pack bom")
	pub := &published{}
	ins := passport.Publishing(e.River, pub)
	upload := func(tx passport.Tx) error {
		_, err := passport.UploadDocumentVersion(e.Ctx, tx, passport.Upload{
			TenantID: store.DevTenantID, DocumentID: doc.DocumentID, MimeType: passport.MIMEJSON, Content: bom(t)})
		return err
	}

	rollback := errors.New("rolled back")
	err := passport.InTx(e.Ctx, e.Store, ins, "test", func(tx passport.Tx) error {
		require.NoError(t, upload(tx))
		require.Empty(t, pub.all(), "published before the commit")
		return rollback
	})
	require.ErrorIs(t, err, rollback)
	require.Empty(t, pub.all(), "a rolled-back transaction published")
	require.Equal(t, 0, e.Count(t, `SELECT count(*) FROM jobs`))

	require.NoError(t, passport.InTx(e.Ctx, e.Store, ins, "test", upload))
	require.Equal(t, [][]string{{jobargs.QueuePipeline}}, pub.all())

	require.NoError(t, passport.InTx(e.Ctx, e.Store, ins, "test", upload))
	require.Len(t, pub.all(), 1, "the same upload again inserts, and publishes, nothing")
}

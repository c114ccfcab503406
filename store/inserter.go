package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Publisher hears, after a transaction has committed, the queues its job
// inserts went to: the RabbitMQ trigger publishes them so that workers
// fetch at once instead of at their next poll.
type Publisher interface {
	Publish(queues []string)
}

// Publishing returns ins, whose committed inserts p hears of through a
// TxInserter; ins itself when p is nil.
func Publishing(ins Inserter, p Publisher) Inserter {
	if p == nil {
		return ins
	}
	return publishingInserter{Inserter: ins, Publisher: p}
}

type publishingInserter struct {
	Inserter
	Publisher
}

// TxInserter is the Inserter of one transaction: it inserts through the
// Inserter it wraps and remembers the queues, which Committed hands to that
// Inserter when it publishes (Publishing). Before the commit no worker
// could see the jobs; after a rollback there are none.
type TxInserter struct {
	ins    Inserter
	queues []string
}

// NewTxInserter returns the Inserter of a transaction about to begin.
func NewTxInserter(ins Inserter) *TxInserter { return &TxInserter{ins: ins} }

// InsertManyTx inserts through the wrapped Inserter and remembers the
// queues of the jobs it inserted.
func (t *TxInserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res, err := t.ins.InsertManyTx(ctx, tx, params)
	if err != nil {
		return res, err
	}
	for _, r := range res {
		if r != nil && r.Job != nil && !r.UniqueSkippedAsDuplicate && !slices.Contains(t.queues, r.Job.Queue) {
			t.queues = append(t.queues, r.Job.Queue)
		}
	}
	return res, nil
}

// Committed tells the wrapped Inserter's publisher the queues inserted
// into; call it once the transaction has committed.
func (t *TxInserter) Committed() {
	if p, ok := t.ins.(Publisher); ok && len(t.queues) > 0 {
		p.Publish(t.queues)
	}
}

package trigger

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Driver is River's pgx driver with the trigger's Listener in place of
// Postgres LISTEN. River then runs as with LISTEN/NOTIFY: a notifier whose
// insert notifications make producers fetch at once, with polling kept as
// the backstop.
type Driver struct {
	*riverpgxv5.Driver
	listener *Listener
}

var _ riverdriver.Driver[pgx.Tx] = (*Driver)(nil)

// NewDriver returns the driver over pool with listener.
func NewDriver(pool *pgxpool.Pool, listener *Listener) *Driver {
	return &Driver{Driver: riverpgxv5.New(pool), listener: listener}
}

// GetListener returns the trigger's listener.
func (d *Driver) GetListener(*riverdriver.GetListenenerParams) riverdriver.Listener {
	return d.listener
}

// SupportsListener is true: the listener needs no LISTEN from the database.
func (d *Driver) SupportsListener() bool { return true }

// Package trigger is the RabbitMQ job trigger. Where Postgres LISTEN/NOTIFY
// is unavailable (PgBouncer in transaction mode) River runs poll-only and a
// job waits up to the poll interval before a worker fetches it; the trigger
// brings that back to milliseconds. Every committed job insert publishes a
// small message naming the job's River queue; every worker process consumes
// them on a queue of its own and hands them to River as insert
// notifications, through a River driver whose listener is fed by the trigger
// instead of by LISTEN (Driver, Listener).
//
// Messages are hints, never the only way a job is found: the broker going
// away costs speed, not jobs. Polling continues, the trigger reconnects with
// backoff, logs QUEUE_UNAVAILABLE once per outage and reports itself down
// (bpc_queue_trigger_up, the readiness check).
package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Config says where the trigger's messages go.
type Config struct {
	// URL is the broker's AMQP URL (BPC_QUEUE_URL); it holds a password and
	// is never logged.
	URL string
	// Exchange is the direct exchange messages are published to
	// (BPC_QUEUE_EXCHANGE); the trigger declares it (durable) when absent.
	Exchange string
	// RoutingKey is the key messages are published and bound with
	// (BPC_QUEUE_ROUTING_KEY).
	RoutingKey string
	// Name names the connection in the broker's management UI (the worker id).
	Name string
	// Consume makes the trigger consume messages (for Listener): a worker
	// process running River poll-only. Other processes only publish.
	Consume bool
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, which doubles from MinBackoff (zero: 100 ms and 5 s).
	MinBackoff, MaxBackoff time.Duration
	// StableAfter is how long a connection must last for its failure to
	// begin a new outage (logged, counted) rather than continue the last
	// one (zero: 10 s).
	StableAfter time.Duration
}

// Message bounds: a consumer queue holds at most maxQueued messages, each
// for at most messageTTL. A message is only worth a fetch while the job may
// still be waiting; older ones are found by polling anyway.
const (
	maxQueued  = 1000
	messageTTL = 30 * time.Second
)

// Trigger publishes and consumes the trigger's messages over one AMQP
// connection, reconnecting with backoff while Run runs. Publish never
// blocks: queues to announce are collected in a set that the connection's
// goroutine drains, one message per queue, so a burst of inserts into one
// queue becomes one or a few messages, and the announcements of an outage
// go out once on reconnection.
type Trigger struct {
	cfg    Config
	logger *slog.Logger

	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{}

	// notifications carries consumed messages to the Listener.
	notifications chan string

	up      atomic.Bool
	lastErr atomic.Pointer[string]

	upGauge  prometheus.Gauge
	messages *prometheus.CounterVec
	outages  prometheus.Counter
}

// New returns a trigger that does nothing until Run. Its metrics are
// registered on reg.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) *Trigger {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.StableAfter <= 0 {
		cfg.StableAfter = 10 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	f := promauto.With(reg)
	t := &Trigger{
		cfg:           cfg,
		logger:        logger,
		pending:       map[string]struct{}{},
		wake:          make(chan struct{}, 1),
		notifications: make(chan string, 256),
		upGauge: f.NewGauge(prometheus.GaugeOpts{Name: "bpc_queue_trigger_up",
			Help: "1 while the RabbitMQ job trigger is connected, else 0 (jobs are then picked up by polling)."}),
		messages: f.NewCounterVec(prometheus.CounterOpts{Name: "bpc_queue_trigger_messages_total",
			Help: "RabbitMQ trigger messages, by direction: published, consumed, or dropped (invalid, or the listener's buffer full)."},
			[]string{"direction"}),
		outages: f.NewCounter(prometheus.CounterOpts{Name: "bpc_queue_trigger_outages_total",
			Help: "Times the RabbitMQ trigger lost (or could not make) its broker connection."}),
	}
	for _, d := range []string{"published", "consumed", "dropped"} {
		t.messages.WithLabelValues(d)
	}
	t.setLastErr(errors.New("not connected yet"))
	return t
}

// Publish announces that jobs were committed into queues. It returns at
// once: the message goes out from Run's goroutine, or after reconnection.
func (t *Trigger) Publish(queues []string) {
	if len(queues) == 0 {
		return
	}
	t.mu.Lock()
	for _, q := range queues {
		t.pending[q] = struct{}{}
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Up reports whether the trigger is connected to the broker.
func (t *Trigger) Up() bool { return t.up.Load() }

// Check is the readiness check: an error while the trigger is not connected.
func (t *Trigger) Check(context.Context) error {
	if t.up.Load() {
		return nil
	}
	return errcode.New(errcode.QueueUnavailable, "RabbitMQ trigger not connected: %s", *t.lastErr.Load())
}

// Run connects, and reconnects with backoff whenever the connection fails,
// until ctx ends.
func (t *Trigger) Run(ctx context.Context) {
	// failures counts the failed attempts since the last connection; the
	// first of them begins an outage.
	failures := 0
	var since time.Time
	for {
		var connectedAt time.Time
		err := t.session(ctx, func() {
			connectedAt = time.Now()
			if failures > 0 {
				t.logger.Info("queue trigger connected again; jobs are picked up at once",
					slog.String("outage", time.Since(since).Round(time.Millisecond).String()))
			} else {
				t.logger.Info("queue trigger connected", slog.String("exchange", t.cfg.Exchange),
					slog.String("routing_key", t.cfg.RoutingKey), slog.Bool("consume", t.cfg.Consume))
			}
		})
		if ctx.Err() != nil {
			t.setDown(errors.New("trigger stopped"))
			return
		}
		t.setDown(err)
		// A connection that fails soon after it opened (the broker closes
		// the channel at the first publish: no permission, a deleted
		// exchange) continues the outage instead of beginning, and logging,
		// another; its reconnections keep backing off.
		if !connectedAt.IsZero() && time.Since(connectedAt) >= t.cfg.StableAfter {
			failures = 0
		}
		if failures == 0 {
			since = time.Now()
			t.outages.Inc()
			// Once per outage: the reconnection attempts that follow log at
			// debug level until one succeeds.
			t.logger.Error("queue trigger unavailable; jobs are picked up by polling until it reconnects",
				slog.String("error_code", string(errcode.QueueUnavailable)), slog.String("error", err.Error()))
		} else {
			t.logger.Debug("queue trigger reconnection failed", slog.Int("attempt", failures), slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(t.backoff(failures)):
		}
		failures++
	}
}

// backoff is the wait before reconnection attempt n (from 0): doubling from
// MinBackoff up to MaxBackoff, less up to a fifth at random so that workers
// cut off together do not come back in step.
func (t *Trigger) backoff(n int) time.Duration {
	d := t.cfg.MaxBackoff
	if n < 30 {
		d = min(t.cfg.MaxBackoff, t.cfg.MinBackoff<<n)
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

func (t *Trigger) setDown(err error) {
	t.up.Store(false)
	t.upGauge.Set(0)
	t.setLastErr(err)
}

func (t *Trigger) setLastErr(err error) {
	s := err.Error()
	t.lastErr.Store(&s)
}

// session runs one connection: declare, consume, publish, until the
// connection fails (the error says why) or ctx ends (nil). connected runs
// once the connection is ready.
func (t *Trigger) session(ctx context.Context, connected func()) error {
	// The socket is kept so that ctx's end closes it: a publish blocked in
	// its write (a broker that stopped reading) returns then, and so does
	// conn.Close, which waits for that writer.
	var socket net.Conn
	dial := amqp.DefaultDial(5 * time.Second)
	conn, err := amqp.DialConfig(t.cfg.URL, amqp.Config{
		Heartbeat: 5 * time.Second,
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := dial(network, addr)
			socket = c
			return c, err
		},
		Properties: amqp.Table{"connection_name": "bpc " + t.cfg.Name},
	})
	if err != nil {
		return fmt.Errorf("error connecting to RabbitMQ: %w", err)
	}
	stopClosing := context.AfterFunc(ctx, func() { _ = socket.Close() })
	defer stopClosing()
	defer conn.Close()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	// A broker in a resource alarm blocks publishing connections: it stops
	// reading them (heartbeats go on), so a publish would wait for the
	// alarm to end. Blocked, the trigger is down and publishes nothing.
	blockings := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	blocked := false

	pub, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("error opening a RabbitMQ channel: %w", err)
	}
	// The broker closes a channel, not the connection, for an error of its
	// own (no permission to publish, a deleted exchange).
	pubClosed := pub.NotifyClose(make(chan *amqp.Error, 1))
	if err := pub.ExchangeDeclare(t.cfg.Exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("error declaring RabbitMQ exchange %q: %w", t.cfg.Exchange, err)
	}
	var deliveries <-chan amqp.Delivery
	if t.cfg.Consume {
		if deliveries, err = t.consume(conn); err != nil {
			return err
		}
	}
	// connected first: whoever sees Up may rely on the connection's start
	// (StableAfter counts from it) having been recorded.
	connected()
	t.up.Store(true)
	t.upGauge.Set(1)
	// Whatever was committed while the connection was down is announced
	// now: a fetch finds those jobs sooner than the next poll would.
	for {
		if !blocked {
			if err := t.publishPending(ctx, pub); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-closed:
			if !ok || e == nil {
				return errors.New("RabbitMQ connection closed")
			}
			return fmt.Errorf("RabbitMQ connection lost: %w", e)
		case e, ok := <-pubClosed:
			if !ok || e == nil {
				return errors.New("RabbitMQ channel closed")
			}
			return fmt.Errorf("RabbitMQ closed the publishing channel: %w", e)
		case b := <-blockings:
			blocked = b.Active
			if blocked {
				t.setDown(fmt.Errorf("RabbitMQ blocked the connection: %s", b.Reason))
				t.logger.Warn("queue trigger blocked by the broker (resource alarm); jobs are picked up by polling until it is unblocked",
					slog.String("error_code", string(errcode.QueueUnavailable)), slog.String("reason", b.Reason))
			} else {
				t.up.Store(true)
				t.upGauge.Set(1)
				t.logger.Info("queue trigger unblocked")
			}
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("RabbitMQ consumer cancelled")
			}
			t.deliver(d.Body)
		case <-t.wake:
		}
	}
}

// consume declares this process's queue — exclusive, deleted with the
// connection, bounded — binds it to the exchange and consumes it without
// acknowledgements: a lost hint costs one poll interval.
func (t *Trigger) consume(conn *amqp.Connection) (<-chan amqp.Delivery, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("error opening a RabbitMQ channel: %w", err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{
		"x-max-length":  int32(maxQueued),
		"x-overflow":    "drop-head",
		"x-message-ttl": int32(messageTTL / time.Millisecond),
	})
	if err != nil {
		return nil, fmt.Errorf("error declaring the RabbitMQ trigger queue: %w", err)
	}
	if err := ch.QueueBind(q.Name, t.cfg.RoutingKey, t.cfg.Exchange, false, nil); err != nil {
		return nil, fmt.Errorf("error binding the RabbitMQ trigger queue to %q: %w", t.cfg.Exchange, err)
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("error consuming the RabbitMQ trigger queue: %w", err)
	}
	return deliveries, nil
}

// message is the body of a trigger message: River's own insert
// notification payload.
type message struct {
	Queue string `json:"queue"`
}

// publishPending publishes one message per pending queue. A queue whose
// publish failed stays pending for the next connection.
func (t *Trigger) publishPending(ctx context.Context, ch *amqp.Channel) error {
	t.mu.Lock()
	queues := make([]string, 0, len(t.pending))
	for q := range t.pending {
		queues = append(queues, q)
	}
	clear(t.pending)
	t.mu.Unlock()
	sort.Strings(queues)
	for i, q := range queues {
		body, _ := json.Marshal(message{Queue: q})
		err := ch.PublishWithContext(ctx, t.cfg.Exchange, t.cfg.RoutingKey, false, false, amqp.Publishing{
			ContentType:  "application/json",
			DeliveryMode: amqp.Transient,
			Body:         body,
		})
		if err != nil {
			t.Publish(queues[i:])
			return fmt.Errorf("error publishing to RabbitMQ: %w", err)
		}
		t.messages.WithLabelValues("published").Inc()
	}
	return nil
}

// deliver hands a consumed message to the Listener. A message that is not
// a trigger's is dropped, not passed to River, which would log it as an
// error; so is one that finds the listener's buffer full, which holds
// enough to make every queue fetch.
func (t *Trigger) deliver(body []byte) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil || m.Queue == "" || len(m.Queue) > 128 {
		t.messages.WithLabelValues("dropped").Inc()
		return
	}
	payload, _ := json.Marshal(m)
	select {
	case t.notifications <- string(payload):
		t.messages.WithLabelValues("consumed").Inc()
	default:
		t.messages.WithLabelValues("dropped").Inc()
	}
}

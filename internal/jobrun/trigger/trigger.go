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
	"encoding/binary"
	"encoding/hex"
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
	// CheckInterval is how often a connected trigger checks that its
	// exchange is still there, still a direct exchange, and (consuming)
	// that its queue still receives what is published to it (zero: 5 s).
	CheckInterval time.Duration
}

// Message bounds: a consumer queue holds at most maxQueued messages, each
// for at most messageTTL. A message is only worth a fetch while the job may
// still be waiting; older ones are found by polling anyway.
const (
	maxQueued  = 1000
	messageTTL = 30 * time.Second
)

// maxWokenQueues bounds the queues a trigger holds wake-ups for: River has
// a handful; a message naming yet another queue beyond it is dropped.
const maxWokenQueues = 256

// probeMisses is how many checks in a row a consuming trigger's probe
// message may fail to come back before its queue counts as unbound: a
// probe can be lost to the queue's own bounds under a flood.
const probeMisses = 3

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

	// woken are the queues consumed messages named that the Listener has
	// not taken yet: a set, so that however many messages name a queue it
	// holds one wake-up (the Listener then spaces them by the queue's
	// fetch cooldown); woke signals that a queue was added.
	wokenMu sync.Mutex
	woken   map[string]struct{}
	woke    chan struct{}

	// probe is the body of the last probe message this trigger sent, and
	// probeSeen whether it came back (session's goroutine only).
	probe     string
	probeSeen bool

	up      atomic.Bool
	lastErr atomic.Pointer[string]

	upGauge  prometheus.Gauge
	messages *prometheus.CounterVec
	outages  prometheus.Counter
	wakeups  prometheus.Counter
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
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 5 * time.Second
	}
	f := promauto.With(reg)
	t := &Trigger{
		cfg:     cfg,
		logger:  logger,
		pending: map[string]struct{}{},
		wake:    make(chan struct{}, 1),
		woken:   map[string]struct{}{},
		woke:    make(chan struct{}, 1),
		upGauge: f.NewGauge(prometheus.GaugeOpts{Name: "bpc_queue_trigger_up",
			Help: "1 while the RabbitMQ job trigger is connected, else 0 (jobs are then picked up by polling)."}),
		messages: f.NewCounterVec(prometheus.CounterOpts{Name: "bpc_queue_trigger_messages_total",
			Help: "RabbitMQ trigger messages, by direction: published, consumed, or dropped (invalid, or naming too many queues)."},
			[]string{"direction"}),
		wakeups: f.NewCounter(prometheus.CounterOpts{Name: "bpc_queue_trigger_wakeups_total",
			Help: "Insert notifications the RabbitMQ trigger handed to River: at most one per queue per fetch cooldown, however many messages were consumed."}),
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
		return t.declareError(err)
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
	check := time.NewTicker(t.cfg.CheckInterval)
	defer check.Stop()
	t.probe, t.probeSeen = "", false
	misses := 0
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
		case <-check.C:
			if err := t.checkExchange(conn); err != nil {
				return err
			}
			if deliveries == nil || blocked {
				continue
			}
			if t.probe != "" && !t.probeSeen {
				misses++
			} else {
				misses = 0
			}
			if misses >= probeMisses {
				return fmt.Errorf("the trigger's queue no longer receives what is published to RabbitMQ exchange %q "+
					"(%d probes in a row did not come back: the queue was unbound, or the exchange deleted and declared again); "+
					"the trigger declares and binds a new queue on reconnection", t.cfg.Exchange, misses)
			}
			if err := t.sendProbe(ctx, pub); err != nil {
				return err
			}
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
	Queue string `json:"queue,omitempty"`
	// Probe is a probe message's nonce (sendProbe); such a message names
	// no queue and is not River's.
	Probe string `json:"probe,omitempty"`
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

// deliver hands a consumed message to the Listener as a wake-up of its
// queue. A message that is not a trigger's is dropped, not passed to River,
// which would log it as an error; so is one naming a queue beyond
// maxWokenQueues. A wake-up already held for the queue absorbs the message:
// a flood of messages is one wake-up per queue. A probe message is this
// trigger's own coming back (sendProbe), or another process's, ignored.
func (t *Trigger) deliver(body []byte) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil || len(m.Queue) > 128 || (m.Queue == "") == (m.Probe == "") {
		t.messages.WithLabelValues("dropped").Inc()
		return
	}
	if m.Probe != "" {
		if m.Probe == t.probe {
			t.probeSeen = true
		}
		return
	}
	t.wokenMu.Lock()
	_, held := t.woken[m.Queue]
	full := !held && len(t.woken) >= maxWokenQueues
	if !held && !full {
		t.woken[m.Queue] = struct{}{}
	}
	t.wokenMu.Unlock()
	if full {
		t.messages.WithLabelValues("dropped").Inc()
		return
	}
	t.messages.WithLabelValues("consumed").Inc()
	select {
	case t.woke <- struct{}{}:
	default:
	}
}

// takeWoken returns the queues woken since the last call, and forgets them.
func (t *Trigger) takeWoken() []string {
	t.wokenMu.Lock()
	defer t.wokenMu.Unlock()
	if len(t.woken) == 0 {
		return nil
	}
	out := make([]string, 0, len(t.woken))
	for q := range t.woken {
		out = append(out, q)
	}
	clear(t.woken)
	return out
}

// declareError says why declaring the exchange failed; the broker's 406
// means an exchange of that name exists with another type or flags, which
// only an operator can settle (the trigger keeps retrying meanwhile).
func (t *Trigger) declareError(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed {
		return fmt.Errorf("RabbitMQ exchange %q exists but is not a durable direct exchange (declared again with another type?); "+
			"delete it, or set BPC_QUEUE_EXCHANGE to another name: %w", t.cfg.Exchange, err)
	}
	return fmt.Errorf("error declaring RabbitMQ exchange %q: %w", t.cfg.Exchange, err)
}

// checkExchange checks, on channels of its own (the broker closes a
// channel at the first error), that the exchange still exists — a deleted
// exchange takes its bindings with it, and a consumer would hear nothing
// while saying it was connected — and that it is still a durable direct
// exchange: a passive declare does not compare types, the same declare as
// the session's does (and is a no-op when it matches).
func (t *Trigger) checkExchange(conn *amqp.Connection) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("error opening a RabbitMQ channel: %w", err)
	}
	err = ch.ExchangeDeclarePassive(t.cfg.Exchange, amqp.ExchangeDirect, true, false, false, false, nil)
	_ = ch.Close()
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return fmt.Errorf("RabbitMQ exchange %q no longer exists (deleted?); the trigger declares it and binds its queue again on reconnection: %w",
			t.cfg.Exchange, err)
	}
	if err != nil {
		return fmt.Errorf("error checking RabbitMQ exchange %q: %w", t.cfg.Exchange, err)
	}
	if ch, err = conn.Channel(); err != nil {
		return fmt.Errorf("error opening a RabbitMQ channel: %w", err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(t.cfg.Exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return t.declareError(err)
	}
	return nil
}

// sendProbe publishes a probe message through the exchange with the
// trigger's routing key; the next check expects it back on this process's
// queue (deliver).
func (t *Trigger) sendProbe(ctx context.Context, ch *amqp.Channel) error {
	nonce := make([]byte, 8)
	binary.LittleEndian.PutUint64(nonce, rand.Uint64())
	t.probe, t.probeSeen = hex.EncodeToString(nonce), false
	body, _ := json.Marshal(message{Probe: t.probe})
	if err := ch.PublishWithContext(ctx, t.cfg.Exchange, t.cfg.RoutingKey, false, false, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Transient, Body: body,
	}); err != nil {
		return fmt.Errorf("error publishing to RabbitMQ: %w", err)
	}
	return nil
}

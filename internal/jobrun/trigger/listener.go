package trigger

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river/riverdriver"

	"github.com/bpc-platform/bpc/store"
)

// River's notification topics: the channel names it LISTENs on (without
// the schema prefix) and its producers subscribe to.
const (
	topicInsert  = "river_insert"
	topicControl = "river_control"
)

// Control is where the Listener reads what River's control notifications
// would have said: jobs whose cancellation was requested, and which queues
// are paused. *store.Queries is one.
type Control interface {
	CancelRequestedJobs(ctx context.Context) ([]store.RiverJobRef, error)
	RiverQueuesPaused(ctx context.Context) (map[string]bool, error)
}

// Listener is a River listener (riverdriver.Listener) fed by the trigger
// instead of Postgres LISTEN. Insert notifications are the trigger's
// consumed messages. Control notifications — an operator cancelling a
// running job, pausing or resuming a queue — travel by Postgres NOTIFY,
// which a poll-only deployment cannot receive, and River, once it has a
// listener, polls for them only as a slow fallback: so the Listener reads
// the committed state itself every ControlPoll and turns what changed into
// the notifications River expects. That works for every path that cancels or
// pauses (admin API, River UI, SQL), needs no transaction hook, and does not
// depend on the broker.
//
// Connect never fails: River refuses to start when its listener's first
// connection fails, and the service must start and work by polling while
// the broker is down. The Trigger reconnects on its own.
type Listener struct {
	t       *Trigger
	control Control
	logger  *slog.Logger
	// ControlPoll is how often cancellations and pauses are read (zero: 1 s).
	ControlPoll time.Duration
	// MinWakeInterval is the least time between two insert notifications
	// of a queue, when longer than the queue's fetch cooldown
	// (BPC_QUEUE_WAKE_INTERVAL_MS). River already fetches a queue at most
	// once per cooldown, but its cooldowns are a few milliseconds so that a
	// pipeline step is picked up at once: a flood of messages would still
	// make every queue fetch hundreds of times a second. This bounds what
	// anyone able to publish to the exchange costs the database, at the
	// price of up to this long for a job inserted just after its queue's
	// last wake-up (the first job after a quiet spell is still woken at
	// once; polling remains the backstop).
	MinWakeInterval time.Duration

	mu       sync.Mutex
	topics   map[string]bool
	queued   []*riverdriver.Notification
	nextPoll time.Time
	// cancelSent are the attempts whose cancellation was notified (and
	// still requested at the last poll): River is told once per attempt.
	cancelSent map[attemptRef]bool
	// paused is each queue's state as last notified.
	paused  map[string]bool
	failing bool

	// cooldown is the least time between two insert notifications of a
	// queue (River's fetch cooldown, UseCooldowns); cooldowns overrides it
	// per queue.
	cooldown  time.Duration
	cooldowns map[string]time.Duration
	// owed are the queues woken since their last insert notification, and
	// lastWake when each was last notified.
	owed     map[string]bool
	lastWake map[string]time.Time
}

// NewListener returns the listener River's notifier uses in place of
// LISTEN: insert notifications from t, control notifications from control.
func NewListener(t *Trigger, control Control, logger *slog.Logger) *Listener {
	return &Listener{t: t, control: control, logger: logger, topics: map[string]bool{}, cancelSent: map[attemptRef]bool{},
		cooldown: defaultCooldown, owed: map[string]bool{}, lastWake: map[string]time.Time{}}
}

// defaultCooldown is River's default fetch cooldown.
const defaultCooldown = 100 * time.Millisecond

// UseCooldowns sets the least time between two insert notifications of a
// queue to its River fetch cooldown: def, or perQueue's. River fetches a
// queue at most once per cooldown whatever it is told, so a notification
// sooner than that only costs River work (each one is handled, and wakes
// the producer's fetch loop); a flood of trigger messages — one per job of
// a batch, or a hostile publisher on the broker — becomes at most one
// notification per queue per cooldown, and one more at the cooldown's end
// for what came during it.
func (l *Listener) UseCooldowns(def time.Duration, perQueue map[string]time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if def > 0 {
		l.cooldown = def
	}
	l.cooldowns = perQueue
}

func (l *Listener) cooldownOf(queue string) time.Duration {
	d := l.cooldown
	if c, ok := l.cooldowns[queue]; ok && c > 0 {
		d = c
	}
	return max(d, l.MinWakeInterval)
}

// Connect does nothing: the trigger connects on its own (see Listener).
func (l *Listener) Connect(context.Context) error { return nil }

// Close does nothing; the trigger outlives River's listener connections.
func (l *Listener) Close(context.Context) error { return nil }

// Ping always succeeds: whether the broker is reachable is the trigger's
// readiness check, not a reason for River to reconnect.
func (l *Listener) Ping(context.Context) error { return nil }

// Schema is empty: notifications name their topics without a schema.
func (l *Listener) Schema() string { return "" }

// SetAfterConnectExec does nothing (River uses it in its own tests).
func (l *Listener) SetAfterConnectExec(string) {}

// Listen subscribes to a topic.
func (l *Listener) Listen(_ context.Context, topic string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.topics[topic] = true
	return nil
}

// Unlisten unsubscribes from a topic.
func (l *Listener) Unlisten(_ context.Context, topic string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.topics, topic)
	return nil
}

// WaitForNotification returns the next notification: an insert
// notification of a queue the trigger's messages woke, at most one per
// queue per cooldown (UseCooldowns), or a control notification found by
// the poll.
func (l *Listener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		now := time.Now()
		l.mu.Lock()
		if len(l.queued) > 0 {
			n := l.queued[0]
			l.queued = l.queued[1:]
			l.mu.Unlock()
			return n, nil
		}
		wait := l.nextPoll.Sub(now)
		if wait <= 0 {
			l.mu.Unlock()
			l.pollControl(ctx)
			continue
		}
		n, next := l.wakeLocked(now)
		l.mu.Unlock()
		if n != nil {
			l.t.wakeups.Inc()
			return n, nil
		}
		if next > 0 {
			wait = min(wait, next)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-l.t.woke:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// wakeLocked takes the trigger's wake-ups and returns the insert
// notification of a woken queue whose cooldown has passed, if any, else
// how long until the first one's does (0: none owed). l.mu is held.
func (l *Listener) wakeLocked(now time.Time) (*riverdriver.Notification, time.Duration) {
	for _, q := range l.t.takeWoken() {
		l.owed[q] = true
	}
	if !l.topics[topicInsert] {
		clear(l.owed)
		return nil, 0
	}
	var next time.Duration
	for _, q := range slices.Sorted(maps.Keys(l.owed)) {
		due := l.lastWake[q].Add(l.cooldownOf(q))
		if wait := due.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		delete(l.owed, q)
		l.lastWake[q] = now
		if len(l.lastWake) > maxWokenQueues {
			// Forget the queues whose cooldown is over: they no longer hold
			// anything back.
			for old, at := range l.lastWake {
				if now.Sub(at) >= l.cooldownOf(old) {
					delete(l.lastWake, old)
				}
			}
		}
		payload, _ := json.Marshal(message{Queue: q})
		return &riverdriver.Notification{Topic: topicInsert, Payload: string(payload)}, 0
	}
	return nil, next
}

// pollControl reads requested cancellations and queue pauses and queues the
// control notifications of what changed since the last poll. The first
// poll notifies every queue's state; pause and resume are idempotent in
// River's producers.
func (l *Listener) pollControl(ctx context.Context) {
	interval := l.ControlPoll
	if interval <= 0 {
		interval = time.Second
	}
	l.mu.Lock()
	l.nextPoll = time.Now().Add(interval)
	listening := l.topics[topicControl]
	l.mu.Unlock()
	if !listening {
		return
	}
	cancels, err := l.control.CancelRequestedJobs(ctx)
	var paused map[string]bool
	if err == nil {
		paused, err = l.control.RiverQueuesPaused(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil && !l.failing {
			// Once per failure streak: the database being away is reported
			// elsewhere, and River's own minute-long poll is the backstop.
			l.logger.Warn("queue trigger: cannot read job cancellations and queue pauses", slog.String("error", err.Error()))
		}
		l.failing = ctx.Err() == nil
		return
	}
	l.failing = false
	requested := make(map[attemptRef]bool, len(cancels))
	for _, j := range cancels {
		// By attempt: a job the reaper returned to River keeps its
		// cancel_attempted_at, and its next attempt must be told again.
		ref := attemptRef{j.ID, j.Attempt}
		requested[ref] = true
		if !l.cancelSent[ref] {
			l.queueControl(controlPayload{Action: "cancel", JobID: j.ID, Queue: j.Queue})
		}
	}
	l.cancelSent = requested
	for queue, p := range paused {
		if was, seen := l.paused[queue]; !seen || was != p {
			action := "resume"
			if p {
				action = "pause"
			}
			l.queueControl(controlPayload{Action: action, Queue: queue})
		}
	}
	l.paused = paused
}

// attemptRef is one attempt of a River job.
type attemptRef struct {
	id      int64
	attempt int
}

// controlPayload is River's control notification payload.
type controlPayload struct {
	Action string `json:"action"`
	JobID  int64  `json:"job_id,omitempty"`
	Queue  string `json:"queue"`
}

// queueControl queues a control notification; l.mu is held.
func (l *Listener) queueControl(p controlPayload) {
	b, _ := json.Marshal(p)
	l.queued = append(l.queued, &riverdriver.Notification{Topic: topicControl, Payload: string(b)})
}

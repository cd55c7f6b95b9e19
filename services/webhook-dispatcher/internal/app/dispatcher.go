package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// Sender makes one attempt of a delivery.
type Sender interface {
	Send(ctx context.Context, ep domain.Endpoint, d domain.Delivery) domain.Outcome
}

// Observer is told about attempts (metrics).
type Observer interface {
	Attempted(d domain.Delivery, o domain.Outcome, claimedAt time.Time)
	Inflight(endpointID string, delta int)
	LaneClosed(endpointID string)
}

// DispatcherConfig bounds the dispatcher.
type DispatcherConfig struct {
	// MaxInflight bounds concurrent attempts overall.
	MaxInflight int
	// MaxInflightPerEndpoint bounds concurrent attempts to one endpoint; it
	// is below MaxInflight so that a slow endpoint leaves room for others.
	MaxInflightPerEndpoint int
	// QueueSize bounds the deliveries queued in memory per endpoint; more
	// wait in the store for the pending scan.
	QueueSize int
	// ScanInterval is how often the store is scanned for pending deliveries
	// that are not queued (after a restart, or a full queue).
	ScanInterval time.Duration
	// ScanAge is how old a pending delivery must be for the scan to pick it
	// up; younger ones are normally queued already.
	ScanAge time.Duration
	// InterruptedAfter is how long after its claim an attempting record is
	// taken to be interrupted (its process stopped during the attempt). It
	// must exceed the attempt timeout.
	InterruptedAfter time.Duration
	// IdleLane is how long an endpoint's workers wait for work before they
	// stop.
	IdleLane time.Duration
}

// Dispatcher attempts pending deliveries: per endpoint a bounded queue and a
// bounded number of workers, and a bound on attempts overall, so one slow or
// dead endpoint never holds up the deliveries to others. The attempt itself
// is guarded by the record's unique id: a delivery is claimed by writing its
// record before it is sent, and a delivery whose record exists is never sent
// again.
type Dispatcher struct {
	cfg       DispatcherConfig
	pending   Pending
	records   Records
	endpoints Endpoints
	sender    Sender
	observer  Observer
	log       *slog.Logger
	now       func() time.Time

	slots chan struct{}

	// done collects the record ids whose pending entries can go; they are
	// removed in batches.
	done chan string

	mu      sync.Mutex
	lanes   map[string]*lane
	stopped bool
	ctx     context.Context
	wg      sync.WaitGroup
}

type job struct {
	d  domain.Delivery
	ep domain.Endpoint
}

type lane struct {
	id      string
	queue   chan job
	queued  map[string]bool
	workers int
}

// NewDispatcher returns a dispatcher; Run starts it.
func NewDispatcher(cfg DispatcherConfig, pending Pending, records Records, endpoints Endpoints, sender Sender, obs Observer, log *slog.Logger) *Dispatcher {
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = 64
	}
	if cfg.MaxInflightPerEndpoint <= 0 {
		cfg.MaxInflightPerEndpoint = 4
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1000
	}
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = 5 * time.Second
	}
	if cfg.IdleLane <= 0 {
		cfg.IdleLane = time.Minute
	}
	if cfg.InterruptedAfter <= 0 {
		cfg.InterruptedAfter = time.Minute
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{
		cfg: cfg, pending: pending, records: records, endpoints: endpoints, sender: sender, observer: obs, log: log,
		now:   func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) },
		slots: make(chan struct{}, cfg.MaxInflight),
		done:  make(chan string, 4096),
		lanes: map[string]*lane{},
	}
}

// Enqueue hands a stored pending delivery to its endpoint's workers. It
// never blocks: when the endpoint's queue is full, or the dispatcher is not
// running, the delivery stays pending in the store for the scan.
func (d *Dispatcher) Enqueue(del domain.Delivery, ep domain.Endpoint) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.stopped {
		return false
	}
	l := d.lanes[ep.ID]
	if l == nil {
		l = &lane{id: ep.ID, queue: make(chan job, d.cfg.QueueSize), queued: map[string]bool{}}
		d.lanes[ep.ID] = l
	}
	if l.queued[del.RecordID] {
		return true
	}
	select {
	case l.queue <- job{del, ep}:
	default:
		return false
	}
	l.queued[del.RecordID] = true
	if l.workers < d.cfg.MaxInflightPerEndpoint {
		l.workers++
		d.wg.Add(1)
		go d.work(l)
	}
	return true
}

// Run scans for pending deliveries at start and then periodically, until ctx
// ends; then it waits for the attempts under way to finish. Deliveries still
// queued stay pending in the store for the next start.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	removed := make(chan struct{})
	stopRemover := make(chan struct{})
	go func() { defer close(removed); d.removeDone(stopRemover) }()
	defer func() {
		d.mu.Lock()
		d.stopped = true
		d.mu.Unlock()
		d.wg.Wait()
		close(stopRemover)
		<-removed
	}()
	// At start every pending delivery is owed an attempt, however young.
	d.scan(ctx, d.now())
	t := time.NewTicker(d.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			d.scan(ctx, d.now().Add(-d.cfg.ScanAge))
		}
	}
}

// scan queues the pending deliveries stored before t.
func (d *Dispatcher) scan(ctx context.Context, t time.Time) {
	const batch = 500
	list, err := d.pending.Older(ctx, t, batch)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("scan pending deliveries", "error", err)
		}
		return
	}
	eps := map[string]*domain.Endpoint{}
	for _, del := range list {
		ep, seen := eps[del.EndpointID]
		if !seen {
			e, err := d.endpoints.Get(ctx, del.EndpointID)
			switch {
			case err == nil:
				ep = &e
			case apperr.Is(err, apperr.NotFound):
				ep = nil
			default:
				d.log.Warn("scan pending deliveries: load endpoint", "endpoint", del.EndpointID, "error", err)
				continue
			}
			eps[del.EndpointID] = ep
		}
		if ep == nil {
			// The endpoint was deleted: nothing is owed to it any more.
			d.markDone(del.RecordID)
			continue
		}
		d.Enqueue(del, *ep)
	}
}

// work runs one of a lane's workers until the lane is idle or the
// dispatcher stops.
func (d *Dispatcher) work(l *lane) {
	defer d.wg.Done()
	idle := time.NewTimer(d.cfg.IdleLane)
	defer idle.Stop()
	for {
		select {
		case <-d.ctx.Done():
			d.retire(l, true)
			return
		case j := <-l.queue:
			d.mu.Lock()
			delete(l.queued, j.d.RecordID)
			d.mu.Unlock()
			if !d.acquire() {
				d.retire(l, true)
				return
			}
			d.attempt(l, j)
			<-d.slots
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(d.cfg.IdleLane)
		case <-idle.C:
			if d.retire(l, false) {
				return
			}
			idle.Reset(d.cfg.IdleLane)
		}
	}
}

// retire ends a worker. An idle worker ends only when its queue is empty;
// the last one removes the lane.
func (d *Dispatcher) retire(l *lane, force bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !force && len(l.queue) > 0 {
		return false
	}
	l.workers--
	if l.workers == 0 && len(l.queue) == 0 && d.lanes[l.id] == l {
		delete(d.lanes, l.id)
		if d.observer != nil {
			d.observer.LaneClosed(l.id)
		}
	}
	return true
}

func (d *Dispatcher) acquire() bool {
	select {
	case d.slots <- struct{}{}:
		return true
	case <-d.ctx.Done():
		return false
	}
}

// attempt claims a delivery and, if the claim holds, sends it and stores
// the outcome. The store operations outlive a shutdown signal so that an
// attempt under way is always recorded.
func (d *Dispatcher) attempt(l *lane, j job) {
	ctx := context.WithoutCancel(d.ctx)
	claimedAt := d.now()
	ok, err := d.records.Claim(ctx, j.d, claimedAt)
	if err != nil {
		d.log.Warn("claim delivery; it stays pending", "delivery", j.d.RecordID, "error", err)
		return
	}
	if !ok {
		d.settleClaimed(ctx, j.d)
		return
	}
	if d.observer != nil {
		d.observer.Inflight(l.id, 1)
	}
	out := d.sender.Send(ctx, j.ep, j.d)
	if d.observer != nil {
		d.observer.Inflight(l.id, -1)
		d.observer.Attempted(j.d, out, claimedAt)
	}
	if err := d.finish(ctx, j.d, claimedAt, out); err != nil {
		d.log.Error("store delivery outcome", "delivery", j.d.RecordID, "error", err)
		return
	}
	d.markDone(j.d.RecordID)
}

// finish stores an outcome, retrying briefly: the attempt has been made, so
// its record must say how it went.
func (d *Dispatcher) finish(ctx context.Context, del domain.Delivery, at time.Time, out domain.Outcome) error {
	var err error
	delay := 50 * time.Millisecond
	for range 8 {
		if err = d.records.Finish(ctx, del, at, out); err == nil {
			return nil
		}
		time.Sleep(delay)
		delay *= 2
	}
	return err
}

// markDone queues a pending entry for removal. When the queue is full the
// entry stays; the next scan finds its record and removes it then.
func (d *Dispatcher) markDone(recordID string) {
	select {
	case d.done <- recordID:
	default:
	}
}

// removeDone removes finished pending entries in batches, until stop is
// closed and what was queued is removed.
func (d *Dispatcher) removeDone(stop <-chan struct{}) {
	const maxBatch = 200
	ctx := context.WithoutCancel(d.ctx)
	batch := make([]string, 0, maxBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := d.pending.Remove(ctx, batch...); err != nil {
			d.log.Warn("remove attempted deliveries from the pending list; the next scan removes them", "count", len(batch), "error", err)
		}
		batch = batch[:0]
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case id := <-d.done:
			batch = append(batch, id)
			if len(batch) == maxBatch {
				flush()
			}
		case <-tick.C:
			flush()
		case <-stop:
			for {
				select {
				case id := <-d.done:
					batch = append(batch, id)
				default:
					flush()
					return
				}
			}
		}
	}
}

// settleClaimed handles a pending delivery whose record exists already: it
// has been attempted (drop it from the pending list), is being attempted by
// another worker (leave it), or its attempt was interrupted by a stop (record
// that, and drop it). It is never sent again.
func (d *Dispatcher) settleClaimed(ctx context.Context, del domain.Delivery) {
	rec, err := d.records.Get(ctx, del.RecordID)
	if err != nil {
		d.log.Warn("read claimed delivery", "delivery", del.RecordID, "error", err)
		return
	}
	if rec.Status == domain.Attempting {
		if rec.AttemptedAt == nil || d.now().Sub(*rec.AttemptedAt) < d.cfg.InterruptedAfter {
			return
		}
		marked, err := d.records.Interrupt(ctx, del, *rec.AttemptedAt)
		if err != nil {
			d.log.Warn("mark interrupted delivery", "delivery", del.RecordID, "error", err)
			return
		}
		if marked {
			d.log.Warn("delivery attempt was interrupted by a stop; it is not sent again", "delivery", del.RecordID)
			if d.observer != nil {
				d.observer.Attempted(del, domain.Outcome{Reason: domain.ReasonInterrupted}, *rec.AttemptedAt)
			}
		}
	}
	d.markDone(del.RecordID)
}

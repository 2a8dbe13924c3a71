package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
)

type tp struct {
	topic     string
	partition int32
}

// mark remembers the attempts a batch used before its process died, so
// its redelivery continues the count.
type mark struct {
	offset  int64
	attempt int
}

type bucket struct {
	recs   []*kgo.Record
	last   time.Time // when a record last arrived
	first  time.Time // when the oldest record not in flight arrived
	bytes  int64     // what recs count against the Budget
	flying int       // how many of recs, at the head, flights hold (inflight.go)
	turn   uint64    // when its last flight started, in launches
	node   int32     // the broker its partition's records came from (its leader when they came; -1: unknown)
}

// due reports whether b flushes a batch smaller than batch_length now:
// poll_interval passed without a new record (quiet), or (max_batch_latency
// set) its oldest record has waited that long.
func (c *consumer) due(b *bucket, now time.Time) bool {
	return b.pending() > 0 && (c.quiet(b, now) ||
		c.t.MaxBatchLatency > 0 && now.Sub(b.first) >= c.t.MaxBatchLatency)
}

// quiet reports whether poll_interval passed without a new record for b.
// With the runtime's own fetch settings a fetch may wait as long as
// poll_interval, so b is quiet only once its broker also answered a fetch
// after b's last records (fetchClock), or one more fetch wait passed
// without an answer.
func (c *consumer) quiet(b *bucket, now time.Time) bool {
	since := now.Sub(b.last)
	if since < c.t.PollInterval {
		return false
	}
	return c.fetched == nil || since >= c.t.PollInterval+c.fetchWait || c.fetched.answeredSince(b.node, b.last)
}

// sweeping reports whether buckets flush together now: with
// max_batch_latency and max_in_flight above 1, once one bucket is due by
// max_batch_latency, every bucket whose oldest record has waited at least
// half of it goes too (ripe). Each bucket's clock starts with its own first
// record, so on a steady stream over many partitions they come due one
// after another, and a plugin's group commit would write them as a train
// of small commits; flushed together they make one (measured: 48
// partitions at 3,000 records/s, max_batch_latency 300ms, docs/runtime.md).
// Half: a bucket whose records just arrived waits for the next sweep rather
// than going out with a handful, so the sweeps settle into one per
// max_batch_latency, and no record waits longer than it.
func (c *consumer) sweeping(now time.Time) bool {
	if c.t.MaxBatchLatency <= 0 || c.t.MaxInFlight <= 1 {
		return false
	}
	for k, b := range c.buckets {
		if c.idle(k, b) && now.Sub(b.first) >= c.t.MaxBatchLatency {
			return true
		}
	}
	return false
}

// ripe reports whether b goes with a sweep (see sweeping).
func (c *consumer) ripe(b *bucket, now time.Time) bool {
	return b.pending() > 0 && now.Sub(b.first) >= c.t.MaxBatchLatency/2
}

// consumer is one [[topics]] block: one kgo client in one group. Batches
// are delivered one at a time, in the loop that polls, or with
// max_in_flight > 1 several at once (inflight.go).
type consumer struct {
	s    *Sink
	t    definition.Topic
	opts []kgo.Opt
	log  *slog.Logger
	dec  decoding.Decoder // the block's decoder: binary schemas only, else nil
	// live is Run's context: it ends when the runtime is asked to stop,
	// before work does (a decode retry stops waiting then).
	live context.Context

	attemptsMu sync.Mutex
	attempts   map[tp]mark // survives rewinds
	scratch    scratch     // the decode buffers of the loop's own deliveries
	wake       waker       // a flight returned, or a fetch answered that a bucket waits for: wakes the poll
	// fetched is when each broker last answered a fetch, with the
	// runtime's own fetch settings only (nil otherwise; see quiet);
	// fetchWait is the session's client's wait.
	fetched   *fetchClock
	fetchWait time.Duration

	mu      sync.Mutex // the loop holds it while it buffers, lands and starts batches; revocations take it
	buckets map[tp]*bucket
	// The batches in flight, per partition oldest first, and what they
	// left: see inflight.go.
	flying map[tp][]*flight
	landed map[string]map[int32]kgo.EpochOffset // delivered, not committed yet
	failed map[tp]error                         // partitions whose batch failed: the block halts
	paused map[tp]bool                          // partitions not fetched while their bucket is full
	// failing are the partitions whose fetches fail, some paused for a
	// while (fetcherr.go).
	failing map[tp]*fetchFailure
	renew   bool       // end the session for a new client (errRenew)
	spare   []*scratch // decode buffers of flights that landed
	turn    uint64     // flights launched
	cl      *kgo.Client
	dlq     *kgo.Client // dead-letter producer, made at start with errors_tolerance = "all"
	// dlqReady are the dead-letter topics known to exist: checked at
	// start, then on assignment (see ensureDeadLetters). Only run, before
	// any client exists, and the assignment callback, between polls, use it.
	dlqReady map[string]bool

	nflying int       // batches in flight, every partition's (c.mu)
	commits committer // the offsets to commit, sent one commit at a time (commit.go)
	depth   int       // a partition's batches in flight at most: see Sink.depth
}

func newConsumer(s *Sink, t definition.Topic, opts []kgo.Opt) *consumer {
	c := &consumer{s: s, t: t, opts: opts, attempts: map[tp]mark{}, dlqReady: map[string]bool{}, depth: s.depth(t),
		log: s.log.With("block", t.Index, "group", t.ConsumerGroup), dec: s.cfg.Decoders[t.Index], live: context.Background()}
	if _, _, derived := fetchShape(t); derived {
		c.fetched = newFetchClock(&c.wake, t.PollInterval) // fetchWait: the session's client says
	}
	return c
}

// warnFetchWait says, at start, that a block's fetches may wait as long as
// its poll_interval or longer. That makes every gap between the fetches of
// a steady stream look like an idle bucket: measured at 5,000 records/s,
// batches came out at about half of batch_length and the plugin spent about
// twice the CPU per record (docs/runtime.md, "Steady traffic"). Allowed,
// since a block may want it, but said.
func (s *Sink) warnFetchWait() {
	for _, t := range s.def.Topics {
		if w := t.Client.FetchMaxWait; w > 0 && w >= t.PollInterval {
			s.log.Warn("fetch.wait.max.ms is not below poll_interval: buckets of a steady stream will flush as idle between fetches, in small batches",
				"event", "fetch_wait_not_below_poll_interval", "block", t.Index,
				"fetch_wait_max_seconds", w.Seconds(), "poll_interval_seconds", t.PollInterval.Seconds())
		}
	}
}

// run consumes until ctx is done (then nil after the shutdown flush) or the
// consumer stops on a batch (a *StopError).
func (c *consumer) run(ctx context.Context) error {
	// Deliveries and commits run on work, which outlives ctx by the
	// shutdown timeout: a signal must not abandon a consume in flight,
	// and the shutdown flush needs time.
	c.live = ctx
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(c.s.cfg.ShutdownTimeout, cancel) })
	defer stop()
	defer func() {
		if c.dlq != nil {
			c.dlq.Close()
		}
	}()
	if c.t.ErrorsTolerance == definition.ToleranceAll {
		// Made here, before any client callback can use it.
		if _, err := c.producer(); err != nil {
			return err
		}
		// The dead-letter topics known before joining the group: a
		// missing one that cannot be created stops the consumer before
		// it consumes anything; a broker that does not answer yet is
		// waited for.
		if err := c.ensureDeadLetters(ctx, c.t.Topics); err != nil {
			if ctx.Err() != nil {
				c.log.Info("consumer stopped", "event", "consumer_stopped", "flushed_partitions", 0)
				return nil
			}
			return err
		}
	}
	for {
		err := c.session(ctx, work)
		switch {
		case errors.Is(err, errRewind):
			c.log.Warn("plugin process died with a batch in flight; resuming from the committed offsets", "event", "rewind")
		case errors.Is(err, errRenew): // said when decided
		default:
			return err
		}
	}
}

// session is one client's life: from joining the group at the committed
// offsets to shutdown, a stop, or a rewind.
func (c *consumer) session(ctx, work context.Context) error {
	c.buckets, c.flying, c.failed, c.paused = map[tp]*bucket{}, map[tp][]*flight{}, map[tp]error{}, map[tp]bool{}
	c.failing, c.renew = map[tp]*fetchFailure{}, false
	c.nflying = 0
	c.landed = map[string]map[int32]kgo.EpochOffset{}
	drop := func(lost bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, cl *kgo.Client, parts map[string][]int32) { c.drop(work, cl, parts, lost) }
	}
	// sctx ends with the session, or earlier with a *DeadLetterTopicError
	// when a newly assigned topic's dead-letter topic cannot exist, which
	// also wakes the poll.
	sctx, endSession := context.WithCancelCause(ctx)
	assigned := func(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
		c.s.sawAssigned(sctx, cl, c.t, parts)
		if c.t.ErrorsTolerance != definition.ToleranceAll || len(parts) == 0 {
			return
		}
		// kgo fetches nothing of these partitions before this callback
		// returns: a pattern's new topic is checked before its first
		// record is consumed.
		topics := slices.Sorted(maps.Keys(parts))
		if err := c.ensureDeadLetters(sctx, topics); err != nil && sctx.Err() == nil {
			cl.PauseFetchTopics(topics...)
			endSession(err)
		}
	}
	opts := append(slices.Clip(c.opts), kgo.OnPartitionsAssigned(assigned), kgo.OnPartitionsRevoked(drop(false)), kgo.OnPartitionsLost(drop(true)))
	if c.fetched != nil {
		opts = append(opts, kgo.WithHooks(c.fetched))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		endSession(nil)
		return fmt.Errorf("kafka client: %w", err)
	}
	defer func() {
		// The commits sent go first: leaving the group would fail them.
		c.awaitCommits()
		// The assignment callback may be waiting for the broker: end it
		// first, since leaving the group waits for it. Leaving runs the
		// revocation callback, which a blocked rebalance would hold
		// forever.
		endSession(nil)
		cl.AllowRebalance()
		// The leave waits for the broker, within the shutdown deadline:
		// past it the group drops the member at its session timeout.
		if err := cl.LeaveGroupContext(work); err != nil && work.Err() != nil {
			c.log.Warn("leaving the consumer group timed out; its partitions are reassigned after the session timeout",
				"event", "leave_group_timeout", "err", err)
		}
		cl.Close()
		c.release()
	}()
	c.cl = cl
	if c.fetched != nil {
		// What the client waits (the derived wait, unless
		// Config.ClientOpts overrode it): quiet's bound.
		c.fetchWait = cl.OptValue(kgo.FetchMaxWait).(time.Duration)
	}
	go c.s.refreshEnds(sctx, cl)
	for {
		pctx, cancel := context.Context(sctx), context.CancelFunc(func() {})
		at, ok := c.nextIdleFlush()
		if r, paused := c.nextFetchResume(); paused && (!ok || r.Before(at)) {
			at, ok = r, true
		}
		if ok {
			pctx, cancel = context.WithDeadline(sctx, at)
		}
		fs := c.poll(pctx, cl)
		cancel()
		if fs.IsClientClosed() {
			return errors.New("kafka client closed")
		}
		c.s.sawFetches(cl, fs)
		c.mu.Lock()
		now := time.Now()
		// A fetch's records come partition by partition: look a bucket up
		// once per run of records, not once per record.
		var b *bucket
		var bk tp
		var polled int64
		fs.EachRecord(func(r *kgo.Record) {
			if b == nil || r.Partition != bk.partition || r.Topic != bk.topic {
				bk = tp{r.Topic, r.Partition}
				if b = c.buckets[bk]; b == nil {
					b = &bucket{}
					c.buckets[bk] = b
				}
				if b.pending() == 0 {
					b.first = now
				}
				b.last = now
				if c.fetched != nil {
					b.node, _, _ = cl.PartitionLeader(bk.topic, bk.partition)
				}
				if len(c.failing) > 0 {
					c.fetchRecovered(cl, bk)
				}
			}
			b.recs = append(b.recs, r)
			n := recordBytes(r)
			b.bytes += n
			polled += n
		})
		if polled != 0 {
			c.s.cfg.Budget.add(polled)
		}
		c.fetchFailed(cl, fs, now)
		c.resumeFailedFetches(cl, now)
		if sctx.Err() != nil {
			c.mu.Unlock()
			if ctx.Err() != nil {
				return c.shutdown(work, nil)
			}
			// A dead-letter topic that cannot exist: no record of its
			// topic was fetched; the other partitions stop as on a
			// failed batch, what they buffered flushed and committed.
			return errors.Join(context.Cause(sctx), c.shutdown(work, nil))
		}
		c.settle(work)
		c.flush(work, now)
		if c.async() {
			c.throttle(cl)
		}
		halted, renew := len(c.failed) > 0, c.renew
		c.mu.Unlock()
		cl.AllowRebalance()
		if halted {
			return c.halt(work)
		}
		if renew {
			return c.renewSession(work)
		}
	}
}

// drop is the revocation callback (lost: partitions lost, not revoked).
// Buffered records of a partition we no longer own are dropped, never
// committed: its next owner fetches them from the group's offset. A batch
// being delivered finishes first (we wait for mu, then for its flight),
// and only its own offset is committed, before the callback returns;
// never for a lost partition, which another member may own already (its
// offsets waiting for a commit are dropped; one already sent carries the
// member's lost generation, which the broker refuses).
func (c *consumer) drop(work context.Context, cl *kgo.Client, parts map[string][]int32, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.landRevoked(work, parts, lost)
	// Every commit sent is answered before the partitions go: a late one
	// could set a partition's offset after its next owner's (kgo: no async
	// commit across a revocation).
	c.awaitCommits()
	for topic, ps := range parts {
		for _, p := range ps {
			k := tp{topic, p}
			if b := c.buckets[k]; b != nil {
				if len(b.recs) > 0 {
					c.log.Info("partition revoked; dropping its buffered records", "event", "partition_revoked", "topic", topic, "partition", p, "records", len(b.recs))
				}
				c.s.cfg.Budget.add(-b.bytes)
				b.bytes = 0
			}
			delete(c.buckets, k)
			c.s.forget(k)
		}
	}
	c.unpause(cl, parts)
}

// release gives back to the Budget what the session's buckets still count:
// those a shutdown flushed, and those a stop or rewind left (fetched again
// by the next session or owner).
func (c *consumer) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Every path out of a session has landed its flights but one: the
	// client closed under the loop. What lands now is not committed.
	c.drain()
	for _, b := range c.buckets {
		c.s.cfg.Budget.add(-b.bytes)
		b.bytes = 0
	}
}

// nextIdleFlush is when the earliest bucket is due: it has gone
// poll_interval without a new record or, with max_batch_latency, its oldest
// record has waited that long. A bucket whose partition has a batch in
// flight, or any while every slot is taken, waits for a flight to land
// instead, which wakes the poll. With the fetch clock, a bucket whose
// broker has not answered since its last records is due at quiet's bound,
// and the fetch that settles the answer wakes the poll before it.
func (c *consumer) nextIdleFlush() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	if !c.room() {
		c.waitForAnswers(false)
		return at, false
	}
	// The clock learns which bucket waits before the buckets are looked
	// at: an answer settled after this wakes the poll, one settled before
	// is seen by the look.
	c.waitForAnswers(true)
	for k, b := range c.buckets {
		if c.idle(k, b) {
			t := b.last.Add(c.t.PollInterval)
			if c.fetched != nil && !c.fetched.answeredSince(b.node, b.last) {
				t = t.Add(c.fetchWait)
			}
			if c.t.MaxBatchLatency > 0 {
				if l := b.first.Add(c.t.MaxBatchLatency); l.Before(t) {
					t = l
				}
			}
			if at.IsZero() || t.Before(at) {
				at = t
			}
		}
	}
	return at, !at.IsZero()
}

// waitForAnswers tells the fetch clock the last arrival of the bucket that
// has waited longest (any: none waits). Buckets that flush by
// batch_length or max_batch_latency first only make a spare wake.
func (c *consumer) waitForAnswers(any bool) {
	if c.fetched == nil {
		return
	}
	var since time.Time
	if any {
		for k, b := range c.buckets {
			if c.idle(k, b) && (since.IsZero() || b.last.Before(since)) {
				since = b.last
			}
		}
	}
	if since.IsZero() {
		c.fetched.waitSince.Store(0)
	} else {
		c.fetched.waitSince.Store(since.UnixNano())
	}
}

// sortedKeys orders buckets so that flushes are deterministic.
func (c *consumer) sortedKeys() []tp {
	keys := make([]tp, 0, len(c.buckets))
	for k := range c.buckets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpTP)
	return keys
}

// inFlight is how many batches are in flight.
func (c *consumer) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nflying
}

// flush delivers and commits every full batch, and every bucket due (idle
// for poll_interval, or held max_batch_latency); then, while the runtime's
// buffered bytes are over --max-buffered-bytes, this block's largest
// buckets early. With max_in_flight > 1 it starts those batches, as many
// as there are free slots, each partition's once its last one landed. It
// stops at a failed batch (c.failed).
func (c *consumer) flush(work context.Context, now time.Time) {
	if len(c.failed) > 0 {
		return // a batch that landed failed: the block halts
	}
	sweep := c.sweeping(now)
	for _, k := range c.order() {
		b := c.buckets[k]
		for c.idle(k, b) && c.room() && (b.pending() >= c.t.BatchLength || c.due(b, now) || sweep && c.ripe(b, now)) {
			c.launch(work, k, b)
			if len(c.failed) > 0 {
				return
			}
			c.commitLanded(work)
		}
		if len(b.recs) == 0 {
			delete(c.buckets, k)
		}
	}
	// Only this block's buckets: another block's are delivered by its own
	// loop. Every poll of every block ends here, so the total stays within
	// the cap plus the polls in flight (and, with max_in_flight > 1, the
	// loop waits for a batch to land instead of polling while it is over).
	budget := c.s.cfg.Budget
	for budget.over() && c.room() {
		var k tp
		var b *bucket
		for bk, bb := range c.buckets {
			if c.idle(bk, bb) && (b == nil || bb.bytes > b.bytes || bb.bytes == b.bytes && cmpTP(bk, k) < 0) {
				k, b = bk, bb
			}
		}
		if b == nil {
			break
		}
		c.log.Debug("buffered bytes over the budget; flushing the largest bucket early", "event", "memory_flush",
			"topic", k.topic, "partition", k.partition, "records", b.pending(), "bytes", b.bytes, "buffered_bytes", budget.Used())
		budget.flushes.Add(1)
		c.launch(work, k, b)
		if len(c.failed) > 0 {
			return
		}
		c.commitLanded(work)
		if len(b.recs) == 0 {
			delete(c.buckets, k)
		}
	}
}

// shutdown lands the batches in flight, flushes every bucket but the
// failed partitions', and commits what was delivered with one commit,
// which the session's end waits for (awaitCommits). With max_in_flight > 1
// the flush runs as many batches at once.
// It returns the failures of the partitions not in reported.
func (c *consumer) shutdown(work context.Context, reported map[tp]error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drain()
	for {
		for _, k := range c.order() {
			b := c.buckets[k]
			for c.failed[k] == nil && c.idle(k, b) && c.room() {
				c.launch(work, k, b)
			}
		}
		if len(c.flying) == 0 {
			break
		}
		c.awaitAny()
	}
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(c.failed), cmpTP) {
		switch err := c.failed[k]; {
		case reported[k] != nil:
		case errors.Is(err, errRewind):
			c.log.Warn("plugin process died during the shutdown flush; the rest is delivered on restart", "event", "shutdown_flush_cut", "topic", k.topic, "partition", k.partition)
		case errors.Is(err, errUndecoded):
			c.log.Warn("a batch could not be decoded at shutdown (the decoder was failing); it is delivered on restart", "event", "shutdown_undecoded", "topic", k.topic, "partition", k.partition)
		default:
			errs = append(errs, err)
		}
	}
	flushed := 0
	for _, ps := range c.landed {
		flushed += len(ps)
	}
	c.commitLanded(work)
	c.log.Info("consumer stopped", "event", "consumer_stopped", "flushed_partitions", flushed)
	return errors.Join(errs...)
}

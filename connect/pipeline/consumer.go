package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	recs  []*kgo.Record
	last  time.Time // when a record last arrived
	first time.Time // when the oldest record in recs arrived
	bytes int64     // what recs count against the Budget
}

// due reports whether b flushes a batch smaller than batch_length now:
// poll_interval passed without a new record, or (max_batch_latency set)
// its oldest record has waited that long.
func (c *consumer) due(b *bucket, now time.Time) bool {
	return len(b.recs) > 0 && (now.Sub(b.last) >= c.t.PollInterval ||
		c.t.MaxBatchLatency > 0 && now.Sub(b.first) >= c.t.MaxBatchLatency)
}

// consumer is one [[topics]] block: one kgo client in one group. Batches
// are delivered one at a time, in the loop that polls.
type consumer struct {
	s    *Sink
	t    definition.Topic
	opts []kgo.Opt
	log  *slog.Logger

	attempts map[tp]mark // survives rewinds
	scratch  scratch

	mu      sync.Mutex // the loop holds it while it buffers and delivers; revocations take it
	buckets map[tp]*bucket
	cl      *kgo.Client
	dlq     *kgo.Client // dead-letter producer, made at start with errors_tolerance = "all"
	// dlqReady are the dead-letter topics known to exist: checked at
	// start, then on assignment (see ensureDeadLetters). Only run, before
	// any client exists, and the assignment callback, between polls, use it.
	dlqReady map[string]bool
}

func newConsumer(s *Sink, t definition.Topic, opts []kgo.Opt) *consumer {
	return &consumer{s: s, t: t, opts: opts, attempts: map[tp]mark{}, dlqReady: map[string]bool{},
		log: s.log.With("block", t.Index, "group", t.ConsumerGroup)}
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
		if !errors.Is(err, errRewind) {
			return err
		}
		c.log.Warn("plugin process died with a batch in flight; resuming from the committed offsets", "event", "rewind")
	}
}

// session is one client's life: from joining the group at the committed
// offsets to shutdown, a stop, or a rewind.
func (c *consumer) session(ctx, work context.Context) error {
	c.buckets = map[tp]*bucket{}
	drop := func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		// Buffered records of a partition we no longer own are dropped,
		// never committed: its next owner fetches them from the group's
		// offset. A batch being delivered finishes first (we wait for mu),
		// and only its own offset is committed.
		c.mu.Lock()
		defer c.mu.Unlock()
		for topic, ps := range parts {
			for _, p := range ps {
				if b := c.buckets[tp{topic, p}]; b != nil {
					if len(b.recs) > 0 {
						c.log.Info("partition revoked; dropping its buffered records", "event", "partition_revoked", "topic", topic, "partition", p, "records", len(b.recs))
					}
					c.s.cfg.Budget.add(-b.bytes)
					b.bytes = 0
				}
				delete(c.buckets, tp{topic, p})
				c.s.forget(tp{topic, p})
			}
		}
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
	opts := append(slices.Clip(c.opts), kgo.OnPartitionsAssigned(assigned), kgo.OnPartitionsRevoked(drop), kgo.OnPartitionsLost(drop))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		endSession(nil)
		return fmt.Errorf("kafka client: %w", err)
	}
	defer func() {
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
	go c.s.refreshEnds(sctx, cl)
	for {
		pctx, cancel := context.Context(sctx), context.CancelFunc(func() {})
		if at, ok := c.nextIdleFlush(); ok {
			pctx, cancel = context.WithDeadline(sctx, at)
		}
		fs := cl.PollRecords(pctx, c.t.BatchLength)
		cancel()
		if fs.IsClientClosed() {
			return errors.New("kafka client closed")
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				c.log.Warn("fetch error", "event", "fetch_error", "topic", topic, "partition", p, "err", err)
			}
		})
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
				if len(b.recs) == 0 {
					b.first = now
				}
				b.last = now
			}
			b.recs = append(b.recs, r)
			n := recordBytes(r)
			b.bytes += n
			polled += n
		})
		if polled != 0 {
			c.s.cfg.Budget.add(polled)
		}
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
		var failed *tp
		err := c.flush(work, now, &failed)
		c.mu.Unlock()
		cl.AllowRebalance()
		switch {
		case err == nil:
			continue
		case errors.Is(err, errRewind):
			return err
		case failed != nil:
			// A stop: what the other partitions buffered is flushed too,
			// then committed with one synchronous commit.
			return errors.Join(err, c.shutdown(work, failed))
		default: // work ended: the shutdown timeout passed mid-delivery
			return fmt.Errorf("shutdown timed out with a batch in flight: %w", err)
		}
	}
}

// release gives back to the Budget what the session's buckets still count:
// those a shutdown flushed, and those a stop or rewind left (fetched again
// by the next session or owner).
func (c *consumer) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.buckets {
		c.s.cfg.Budget.add(-b.bytes)
		b.bytes = 0
	}
}

// nextIdleFlush is when the earliest bucket is due: it has gone
// poll_interval without a new record or, with max_batch_latency, its oldest
// record has waited that long.
func (c *consumer) nextIdleFlush() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, b := range c.buckets {
		if len(b.recs) > 0 {
			t := b.last.Add(c.t.PollInterval)
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

// sortedKeys orders buckets so that flushes are deterministic.
func (c *consumer) sortedKeys() []tp {
	keys := make([]tp, 0, len(c.buckets))
	for k := range c.buckets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tp) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return keys
}

// flush delivers and commits every full batch, and every bucket due (idle
// for poll_interval, or held max_batch_latency); then, while the runtime's
// buffered bytes are over --max-buffered-bytes, this block's largest
// buckets early. On a stop, *failed names the partition that stopped.
func (c *consumer) flush(work context.Context, now time.Time, failed **tp) error {
	for _, k := range c.sortedKeys() {
		b := c.buckets[k]
		for len(b.recs) >= c.t.BatchLength || c.due(b, now) {
			if err := c.flushHead(work, k, b, failed); err != nil {
				return err
			}
		}
		if len(b.recs) == 0 {
			delete(c.buckets, k)
		}
	}
	// Only this block's buckets: another block's are delivered by its own
	// loop, one batch at a time. Every poll of every block ends here, so
	// the total stays within the cap plus the polls in flight.
	budget := c.s.cfg.Budget
	for budget.over() {
		var k tp
		var b *bucket
		for bk, bb := range c.buckets {
			if b == nil || bb.bytes > b.bytes || bb.bytes == b.bytes && (bk.topic < k.topic || bk.topic == k.topic && bk.partition < k.partition) {
				k, b = bk, bb
			}
		}
		if b == nil {
			break
		}
		c.log.Debug("buffered bytes over the budget; flushing the largest bucket early", "event", "memory_flush",
			"topic", k.topic, "partition", k.partition, "records", len(b.recs), "bytes", b.bytes, "buffered_bytes", budget.Used())
		budget.flushes.Add(1)
		if err := c.flushHead(work, k, b, failed); err != nil {
			return err
		}
		if len(b.recs) == 0 {
			delete(c.buckets, k)
		}
	}
	return nil
}

// flushHead delivers and commits the first batch of bucket k (at most
// batch_length records) and takes it off the bucket and the budget.
func (c *consumer) flushHead(work context.Context, k tp, b *bucket, failed **tp) error {
	n := min(len(b.recs), c.t.BatchLength)
	if err := c.deliver(work, b.recs[:n]); err != nil {
		var se *StopError
		if errors.As(err, &se) {
			*failed = &k
		}
		return err
	}
	c.commit(work, b.recs[n-1])
	// Committed: nothing holds these records any more (the plugin's
	// frame and the dead letters are written), so kgo may decode the
	// next fetch into them.
	var freed int64
	for _, r := range b.recs[:n] {
		freed += recordBytes(r)
		r.Recycle()
	}
	clear(b.recs[:n])
	b.recs = b.recs[n:]
	b.bytes -= freed
	c.s.cfg.Budget.add(-freed)
	// Before this poll every bucket held fewer than batch_length records
	// (each poll is flushed down to that, and a poll returns at most
	// batch_length), so the first batch took all the older ones: what is
	// left arrived in this poll.
	b.first = b.last
	return nil
}

// shutdown flushes every bucket but the failed one's and commits what was
// delivered with one synchronous commit.
func (c *consumer) shutdown(work context.Context, failed *tp) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	var errs []error
	for _, k := range c.sortedKeys() {
		if failed != nil && k == *failed {
			continue
		}
		b := c.buckets[k]
		for len(b.recs) > 0 {
			n := min(len(b.recs), c.t.BatchLength)
			err := c.deliver(work, b.recs[:n])
			if errors.Is(err, errRewind) {
				c.log.Warn("plugin process died during the shutdown flush; the rest is delivered on restart", "event", "shutdown_flush_cut", "topic", k.topic, "partition", k.partition)
				break
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			last := b.recs[n-1]
			if offsets[k.topic] == nil {
				offsets[k.topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[k.topic][k.partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			b.recs = b.recs[n:]
		}
	}
	if len(offsets) > 0 {
		c.commitOffsets(work, offsets)
	}
	c.log.Info("consumer stopped", "event", "consumer_stopped", "flushed_partitions", len(offsets))
	return errors.Join(errs...)
}

// commit commits the offset just past last.
func (c *consumer) commit(ctx context.Context, last *kgo.Record) {
	c.commitOffsets(ctx, map[string]map[int32]kgo.EpochOffset{
		last.Topic: {last.Partition: {Epoch: last.LeaderEpoch, Offset: last.Offset + 1}},
	})
}

// commitOffsets commits exactly these offsets and waits. A failed commit is
// logged, not fatal: the batch was written, and it is delivered again
// (which the plugins make harmless) after a restart or rebalance.
func (c *consumer) commitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) {
	var cerr error
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					cerr = errors.Join(cerr, fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, e))
				}
			}
		}
	})
	c.s.sawCommit(offsets, cerr == nil)
	// One line per topic-partition, with the keys every other line uses.
	for topic, ps := range offsets {
		for p, o := range ps {
			if cerr != nil {
				c.log.Warn("commit failed; the batch will be delivered again after a restart or rebalance",
					"event", "commit_failed", "topic", topic, "partition", p, "offset", o.Offset, "err", cerr)
			} else {
				c.log.Debug("committed", "event", "committed", "topic", topic, "partition", p, "offset", o.Offset)
			}
		}
	}
}

package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Batches in flight (max_in_flight).
//
// A block hands every batch to the plugin as a flight: the head of one
// partition's bucket, delivered by deliver (attempts, backoff, dead
// letters), then landed: an OK batch leaves its bucket and the budget and
// its offset joins c.landed, which the loop commits (the batches that
// landed together share one CommitOffsetsSync); a failed one marks its
// partition in c.failed, which halts the block.
//
// With max_in_flight = 1 (the default) a flight runs in the loop that
// polls and lands before launch returns: deliver, land, commit, the next
// batch, the spec's loop exactly. With max_in_flight = N > 1 each flight
// runs on a goroutine of its own, at most one per topic-partition (a
// partition's batches stay in order) and at most N per block; the loop
// keeps polling and buffering, a flight that returns wakes the poll, and
// the loop lands it, commits it and starts that partition's next batch
// without waiting for the others. Each offset moves only once its own
// batch returned OK.
//
// A failure lands like a success: the block stops starting flights, waits
// for every flight still in the air and lands it (committing those that
// returned OK), then stops (the others' buffered rest flushed and
// committed, the failed partitions' not), rewinds after a host death, or
// gives up when the shutdown timeout passed. A revoked partition's flight
// is waited for, and its offset committed, before the revocation callback
// returns; after that nothing of the partition is committed.
//
// Memory: while batches are in flight the loop keeps polling, so a bucket
// holding a full batch that cannot start (its partition's batch is in the
// air, or every slot is taken) has its partition paused until it drains
// (throttle), and over --max-buffered-bytes the loop waits for a batch to
// land instead of polling (poll).
//
// c.mu guards c.flying, the buckets, c.landed and c.failed. A flight's
// goroutine takes none of it (deliver reads the definition and takes only
// attemptsMu), so waiting for a flight with c.mu held cannot deadlock.

// flight is one batch handed to the plugin: the head of its partition's
// bucket.
type flight struct {
	k    tp
	recs []*kgo.Record // the bucket's head: it stays in the bucket until it lands
	sc   *scratch      // the decode buffers of this flight alone
	done chan struct{} // closed once err is set
	err  error         // deliver's result
}

// warnSerialised says, once the plugin is open (its describe() read),
// which blocks ask for batches in flight from a plugin that runs its
// consume calls one at a time: correct, but the batches queue in the
// plugin, and a slow partition holds the others there.
func (s *Sink) warnSerialised() {
	if cc, ok := s.out.(ConcurrentConsumer); ok && cc.ConcurrentConsume() {
		return
	}
	for _, t := range s.def.Topics {
		if t.MaxInFlight > 1 {
			s.log.Warn("max_in_flight is above 1 but the plugin does not declare concurrent_consume: it runs the batches one at a time",
				"event", "max_in_flight_serialised", "block", t.Index, "max_in_flight", t.MaxInFlight)
		}
	}
}

// async reports whether flights run on goroutines of their own.
func (c *consumer) async() bool { return c.t.MaxInFlight > 1 }

// room reports whether another flight may start.
func (c *consumer) room() bool { return len(c.flying) < c.t.MaxInFlight }

// pending is how many of b's records no flight holds.
func (b *bucket) pending() int { return len(b.recs) - b.flying }

// idle reports whether bucket k may start a flight: nothing of its
// partition in the air, and records to send.
func (c *consumer) idle(k tp, b *bucket) bool { return c.flying[k] == nil && b.pending() > 0 }

// order is the order buckets are offered a flight in: by topic and
// partition with max_in_flight = 1 (deterministic, as the spec's loop
// flushed); otherwise least recently launched first, so that a partition
// that is always ready does not keep the others from the free slots.
func (c *consumer) order() []tp {
	keys := c.sortedKeys()
	if c.async() {
		slices.SortStableFunc(keys, func(a, b tp) int { return cmp.Compare(c.buckets[a].turn, c.buckets[b].turn) })
	}
	return keys
}

// launch starts delivering the head batch of bucket k (at most
// batch_length records); c.mu is held and idle(k, b) holds. With
// max_in_flight = 1 the batch is delivered here and has landed when launch
// returns; otherwise it is delivered on a goroutine, which wakes the poll
// when it returns.
func (c *consumer) launch(work context.Context, k tp, b *bucket) {
	n := min(b.pending(), c.t.BatchLength)
	f := &flight{k: k, recs: b.recs[:n:n], done: make(chan struct{})}
	b.flying = n
	c.turn++
	b.turn = c.turn
	c.flying[k] = f
	c.s.flying.Add(1)
	if !c.async() {
		f.sc = &c.scratch
		f.err = c.deliver(work, f.recs, f.sc)
		close(f.done)
		c.land(f)
		return
	}
	if len(c.spare) > 0 {
		f.sc, c.spare = c.spare[len(c.spare)-1], c.spare[:len(c.spare)-1]
	} else {
		f.sc = &scratch{}
	}
	go func() {
		f.err = c.deliver(work, f.recs, f.sc)
		close(f.done)
		c.wake.poke()
	}()
}

// land takes a flight that returned off the books; c.mu is held. An OK
// batch leaves its bucket and the budget, and its offset goes to c.landed
// for the next commit; a failed one leaves its records where they are and
// marks its partition failed.
func (c *consumer) land(f *flight) {
	delete(c.flying, f.k)
	c.s.flying.Add(-1)
	if f.sc != &c.scratch {
		c.spare = append(c.spare, f.sc)
	}
	b := c.buckets[f.k] // a bucket outlives its flight: revocation lands first
	b.flying = 0
	if f.err != nil {
		c.failed[f.k] = f.err
		return
	}
	n := len(f.recs)
	last := f.recs[n-1]
	if c.landed[f.k.topic] == nil {
		c.landed[f.k.topic] = map[int32]kgo.EpochOffset{}
	}
	c.landed[f.k.topic][f.k.partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
	// Delivered: nothing holds these records any more (the plugin's
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
	if !c.async() {
		// Before this poll every bucket held fewer than batch_length
		// records (each poll is flushed down to that, and a poll
		// returns at most batch_length), so the first batch took all
		// the older ones: what is left arrived in this poll. With
		// flights in the air buckets grow meanwhile; b.first stays, the
		// oldest arrival, which flushes the rest early rather than late.
		b.first = b.last
	}
}

// commitLanded commits the offsets of the batches that landed since the
// last commit, with one synchronous commit; c.mu is held.
func (c *consumer) commitLanded(ctx context.Context) {
	if len(c.landed) > 0 {
		c.commitOffsets(ctx, c.landed)
		c.landed = map[string]map[int32]kgo.EpochOffset{}
	}
}

// settle lands every flight that has returned and commits them; c.mu is
// held. It does not wait.
func (c *consumer) settle(work context.Context) {
	for _, f := range c.flying {
		select {
		case <-f.done:
			c.land(f)
		default:
		}
	}
	c.commitLanded(work)
}

// drain waits for every flight in the air and lands it; c.mu is held.
// Every flight ends: deliver returns once work does.
func (c *consumer) drain() {
	for _, f := range c.flying {
		<-f.done
		c.land(f)
	}
}

// awaitAny waits until a flight returns, then lands those that have;
// c.mu is held and a flight is in the air.
func (c *consumer) awaitAny() {
	ctx, cancel := c.wake.arm(context.Background())
	for _, f := range c.flying {
		select {
		case <-f.done: // returned before arm: its poke may be spent
			cancel()
		default:
		}
	}
	<-ctx.Done()
	cancel()
	for _, f := range c.flying {
		select {
		case <-f.done:
			c.land(f)
		default:
		}
	}
}

// halt ends a session on a failed flight, once every other flight landed
// (those that returned OK committed): a stop flushes what the other
// partitions buffered and commits it with them in one commit, a host
// death rewinds to the committed offsets, and a failure for the shutdown
// timeout says so.
func (c *consumer) halt(work context.Context) error {
	c.mu.Lock()
	c.drain()
	var stops, cut []error
	rewind, undecoded := false, false
	for _, k := range slices.SortedFunc(maps.Keys(c.failed), cmpTP) {
		var se *StopError
		switch err := c.failed[k]; {
		case errors.As(err, &se):
			stops = append(stops, err)
		case errors.Is(err, errRewind):
			rewind = true
		case errors.Is(err, errUndecoded):
			undecoded = true
		default:
			cut = append(cut, err)
		}
	}
	reported := maps.Clone(c.failed)
	if len(stops) == 0 {
		c.commitLanded(work)
	} // else the shutdown's one commit takes them
	c.mu.Unlock()
	switch {
	case len(stops) > 0:
		// A stop: what the other partitions buffered is flushed too,
		// then committed with one synchronous commit.
		return errors.Join(append(append(stops, cut...), c.shutdown(work, reported))...)
	case rewind:
		return errRewind
	case undecoded && len(cut) == 0:
		// The runtime is stopping: the batch that could not be decoded
		// waits for the restart; the other partitions flush.
		return c.shutdown(work, reported)
	default: // work ended: the shutdown timeout passed mid-delivery
		return fmt.Errorf("shutdown timed out with a batch in flight: %w", errors.Join(cut...))
	}
}

// landRevoked waits for the flights of partitions the group takes away
// and lands them, committing those that returned OK unless the partitions
// were lost (another member may own them already); c.mu is held, in the
// revocation callback, before the buckets go.
func (c *consumer) landRevoked(work context.Context, parts map[string][]int32, lost bool) {
	for topic, ps := range parts {
		for _, p := range ps {
			if f := c.flying[tp{topic, p}]; f != nil {
				c.log.Info("partition revoked with a batch in flight; waiting for it", "event", "revoke_wait", "topic", topic, "partition", p,
					"first_offset", f.recs[0].Offset, "records", len(f.recs), "lost", lost)
				<-f.done
				c.land(f)
			}
		}
	}
	if lost {
		for topic, ps := range parts {
			for _, p := range ps {
				delete(c.landed[topic], p)
			}
			if len(c.landed[topic]) == 0 {
				delete(c.landed, topic)
			}
		}
	}
	c.commitLanded(work)
}

// poll returns the next records. With max_in_flight > 1 a flight that
// returns ends the poll, so that the loop lands it at once; and while the
// budget is over with batches in flight (flush started all it could) the
// loop waits for one to land instead of buffering more.
func (c *consumer) poll(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	if !c.async() {
		return cl.PollRecords(ctx, c.t.BatchLength)
	}
	ctx, disarm := c.wake.arm(ctx)
	defer disarm()
	if c.s.cfg.Budget.over() && c.inFlight() > 0 {
		<-ctx.Done()
		return nil
	}
	return cl.PollRecords(ctx, c.t.BatchLength)
}

// throttle pauses fetching a partition whose bucket holds a full batch
// that cannot start (its partition's batch is in the air, or every slot
// is taken), and resumes it once it does not: the loop keeps polling while
// batches are in flight, and a slow partition's bucket must not grow
// without bound. c.mu is held.
func (c *consumer) throttle(cl *kgo.Client) {
	var pause, resume map[string][]int32
	add := func(m *map[string][]int32, k tp) {
		if *m == nil {
			*m = map[string][]int32{}
		}
		(*m)[k.topic] = append((*m)[k.topic], k.partition)
	}
	for k, b := range c.buckets {
		if b.pending() >= c.t.BatchLength && !c.paused[k] {
			c.paused[k] = true
			add(&pause, k)
		}
	}
	for k := range c.paused {
		if b := c.buckets[k]; b == nil || b.pending() < c.t.BatchLength {
			delete(c.paused, k)
			add(&resume, k)
		}
	}
	if pause != nil {
		cl.PauseFetchPartitions(pause)
	}
	if resume != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

// unpause resumes fetching the partitions taken away that throttle
// paused: a pause outlives rebalances, and a partition assigned again
// later must be fetched. c.mu is held.
func (c *consumer) unpause(cl *kgo.Client, parts map[string][]int32) {
	var resume map[string][]int32
	for topic, ps := range parts {
		for _, p := range ps {
			if k := (tp{topic, p}); c.paused[k] {
				delete(c.paused, k)
				if resume == nil {
					resume = map[string][]int32{}
				}
				resume[topic] = append(resume[topic], p)
			}
		}
	}
	if resume != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

func cmpTP(a, b tp) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// waker ends the poll's context when a flight returns, so that the loop
// lands it at once instead of at the next fetch or idle deadline.
type waker struct {
	mu     sync.Mutex
	cancel context.CancelFunc // the armed context's; nil when none
	poked  bool               // a poke came while none was armed
}

// poke ends the armed context, or the next one armed.
func (w *waker) poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
		return
	}
	w.poked = true
}

// arm returns a child of ctx that the next poke ends (at once when one
// came since the last arm), and its cancel, which disarms it.
func (w *waker) arm(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poked {
		w.poked = false
		cancel()
	} else {
		w.cancel = cancel
	}
	return ctx, func() {
		w.mu.Lock()
		w.cancel = nil
		w.mu.Unlock()
		cancel()
	}
}

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

	"github.com/picomq/heavy-sinks/connect/definition"
)

// Batches in flight (max_in_flight).
//
// A block hands every batch to the plugin as a flight: the head of one
// partition's bucket, delivered by deliver (attempts, backoff, dead
// letters), then landed: an OK batch leaves its bucket and the budget and
// its offset joins c.landed, which the loop commits (the batches that
// landed together share one commit: commit.go); a failed one marks its
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
// Pipelined batches (max_in_flight_per_partition = D > 1, with a plugin
// that declares pipelined): c.flying holds a list per partition, oldest
// first, up to D. A flight started while its partition has one in the air
// is a follower: the next batch_length records after the ones its
// predecessors hold, flushed by the same rules as any batch. It decodes,
// then waits until its predecessor has called the plugin (or ended), and
// makes one attempt with Follows = the predecessor's RangeLast, so that
// the plugin writes it only with or after the predecessor
// (docs/abi.md, "Pipelined batches"). Whatever is not OK leaves it
// unsent (errUnsent): its records stay at the head of the bucket and go
// again as an ordinary batch, with the attempts, backoff and dead letters
// of deliver. Flights land in order per partition: a follower that
// returned waits for the ones before it; once one lands unsent or failed,
// every later one of its partition is void (landed as unsent whatever it
// returned: a write that did happen is deduplicated by the plugin when the
// records go again), and the partition starts nothing until they all
// landed. So a partition's offset moves only over a prefix of batches that
// all returned OK.
//
// c.mu guards c.flying, the buckets, c.landed and c.failed. A flight's
// goroutine takes none of it (deliver reads the definition and takes only
// attemptsMu; a follower waits only for its predecessor's channels), so
// waiting for a flight with c.mu held cannot deadlock.

// flight is one batch handed to the plugin: the head of its partition's
// bucket, or with pipelined batches the records after its predecessors'.
type flight struct {
	k    tp
	recs []*kgo.Record // its records in the bucket: they stay there until it lands
	last uint64        // the offset of its last record: the batch's RangeLast
	sc   *scratch      // the decode buffers of this flight alone
	// pred is the partition's flight before this one, in the air when this
	// one started: nil for an ordinary batch, set for a follower.
	pred *flight
	// called is closed once the flight called the plugin, or when it ended
	// without a call; plugged says which (written before the close). nil
	// when no follower can wait for it (max_in_flight_per_partition 1).
	called  chan struct{}
	plugged bool
	done    chan struct{} // closed once err is set
	err     error         // deliver's result
	// void: a flight before it landed unsent or failed, so its result is
	// discarded and its records go again. Set and read by the loop, c.mu
	// held.
	void bool
}

// calling is said by a flight's goroutine right before each consume call:
// the first one releases a follower waiting for it.
func (f *flight) calling() {
	if f.called != nil && !f.plugged {
		f.plugged = true
		close(f.called)
	}
}

// ended is said by a flight's goroutine once deliver returns: a follower
// still waiting for a call goes on (it sees done).
func (f *flight) ended() {
	if f.called != nil && !f.plugged {
		close(f.called)
	}
}

// errUnsent is a follower that was not delivered: its predecessor failed,
// or its one attempt was not OK. Not a failure of the block: its records
// stay in the bucket and go again as an ordinary batch.
var errUnsent = errors.New("pipelined batch not delivered; it goes again after the batches before it")

// unsent wraps why a follower was not delivered.
func unsent(why error) error { return fmt.Errorf("%w: %w", errUnsent, why) }

// pipelined reports whether the plugin keeps the order of pipelined
// batches itself (describe()'s pipelined, ABI 1.5).
func (s *Sink) pipelined() bool {
	p, ok := s.out.(Pipeliner)
	return ok && p.Pipelined()
}

// depth is how many batches of one partition block t has in flight at
// most: max_in_flight_per_partition with batches in flight and a plugin
// that declares pipelined, else 1. Known once the plugin is open.
func (s *Sink) depth(t definition.Topic) int {
	if t.MaxInFlightPerPartition > 1 && t.MaxInFlight > 1 && s.pipelined() {
		return t.MaxInFlightPerPartition
	}
	return 1
}

// warnSerialised says, once the plugin is open (its describe() read),
// which blocks ask for batches in flight from a plugin that runs its
// consume calls one at a time: correct, but the batches queue in the
// plugin, and a slow partition holds the others there.
func (s *Sink) warnSerialised() {
	for _, t := range s.def.Topics {
		if t.MaxInFlightPerPartition > 1 && s.depth(t) == 1 {
			s.log.Warn("max_in_flight_per_partition is above 1 but the plugin does not declare pipelined: a partition's batches go one at a time",
				"event", "max_in_flight_per_partition_unused", "block", t.Index, "max_in_flight_per_partition", t.MaxInFlightPerPartition)
		}
	}
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
func (c *consumer) room() bool { return c.nflying < c.t.MaxInFlight }

// pending is how many of b's records no flight holds.
func (b *bucket) pending() int { return len(b.recs) - b.flying }

// idle reports whether bucket k may start a flight: fewer than depth of
// its partition in the air, none of them void, and records to send.
func (c *consumer) idle(k tp, b *bucket) bool {
	fl := c.flying[k]
	return len(fl) < c.depth && (len(fl) == 0 || !fl[len(fl)-1].void) && b.pending() > 0
}

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

// launch starts delivering the next batch of bucket k (at most
// batch_length records after those in flight); c.mu is held and idle(k,
// b) holds. With max_in_flight = 1 the batch is delivered here and has
// landed when launch returns; otherwise it is delivered on a goroutine,
// which wakes the poll when it returns. With a flight of k in the air it
// is that one's follower.
func (c *consumer) launch(work context.Context, k tp, b *bucket) {
	n := min(b.pending(), c.t.BatchLength)
	at := b.flying
	f := &flight{k: k, recs: b.recs[at : at+n : at+n], done: make(chan struct{})}
	f.last = uint64(f.recs[n-1].Offset)
	fl := c.flying[k]
	if c.depth > 1 {
		f.called = make(chan struct{})
		if len(fl) > 0 {
			f.pred = fl[len(fl)-1]
		}
	}
	b.flying += n
	c.turn++
	b.turn = c.turn
	c.flying[k] = append(fl, f)
	c.nflying++
	c.s.flying.Add(1)
	if !c.async() {
		f.sc = &c.scratch
		f.err = c.deliver(work, f)
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
		f.err = c.deliver(work, f)
		close(f.done)
		c.wake.poke()
	}()
}

// land takes a flight that returned off the books: the oldest of its
// partition; c.mu is held. An OK batch leaves its bucket and the budget,
// and its offset goes to c.landed for the next commit; a failed one
// leaves its records where they are and marks its partition failed; an
// unsent or void one leaves its records too. After either, the later
// flights of the partition are void.
func (c *consumer) land(f *flight) {
	fl := c.flying[f.k]
	if fl[0] != f {
		panic("pipeline: a flight landed before the one before it")
	}
	// Its goroutine has returned, and the flight after it reads only
	// its channels and results: drop the links, or each flight would keep
	// every flight before it (and their record slices, over bucket
	// arrays of records already recycled) for the whole session.
	defer func() { f.pred, f.recs = nil, nil }()
	fl[0] = nil
	rest := fl[1:]
	if len(rest) == 0 {
		delete(c.flying, f.k)
	} else {
		c.flying[f.k] = rest
	}
	c.nflying--
	c.s.flying.Add(-1)
	if f.sc != &c.scratch {
		c.spare = append(c.spare, f.sc)
	}
	b := c.buckets[f.k] // a bucket outlives its flights: revocation lands first
	if f.void || f.err != nil {
		switch {
		case f.void:
			c.s.unsentN.Add(1)
		case errors.Is(f.err, errUnsent):
			c.s.unsentN.Add(1)
			c.log.Debug("pipelined batch not delivered; its records go again", "event", "pipelined_unsent", "topic", f.k.topic, "partition", f.k.partition,
				"first_offset", f.recs[0].Offset, "records", len(f.recs), "later_batches", len(rest), "err", f.err)
		default:
			c.failed[f.k] = f.err
		}
		for _, g := range rest {
			g.void = true
		}
		// The records of f stay at the head of the bucket; the void
		// flights after it still hold theirs, so nothing of the
		// partition starts until the last one landed.
		if len(rest) == 0 {
			b.flying = 0
		}
		return
	}
	n := len(f.recs)
	b.flying -= n
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

// settle lands every flight that has returned and commits them; c.mu is
// held. It does not wait.
func (c *consumer) settle(work context.Context) {
	c.landReturned()
	c.commitLanded(work)
}

// landReturned lands, per partition, the flights that returned, oldest
// first, up to the first still in the air; c.mu is held. It reports
// whether it landed any.
func (c *consumer) landReturned() bool {
	landed := false
	for k := range c.flying {
		for fl := c.flying[k]; len(fl) > 0 && returned(fl[0]); fl = c.flying[k] {
			c.land(fl[0])
			landed = true
		}
	}
	return landed
}

// returned reports whether f's deliver returned.
func returned(f *flight) bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// drainPartition waits for every flight of k in the air and lands them
// in order; c.mu is held.
func (c *consumer) drainPartition(k tp) {
	for fl := c.flying[k]; len(fl) > 0; fl = c.flying[k] {
		<-fl[0].done
		c.land(fl[0])
	}
}

// drain waits for every flight in the air and lands it; c.mu is held.
// Every flight ends: deliver returns once work does.
func (c *consumer) drain() {
	for k := range c.flying {
		c.drainPartition(k)
	}
}

// awaitAny waits until a flight returns, then lands those that can
// (a follower that returned waits for the ones before it); c.mu is held
// and a flight is in the air.
func (c *consumer) awaitAny() {
	ctx, cancel := c.wake.arm(context.Background())
	for _, fl := range c.flying {
		if returned(fl[0]) { // returned before arm: its poke may be spent
			cancel()
		}
	}
	<-ctx.Done()
	cancel()
	c.landReturned()
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
		// then committed with one commit, waited for at the session's
		// end.
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
			k := tp{topic, p}
			if fl := c.flying[k]; len(fl) > 0 {
				recs := 0
				for _, f := range fl {
					recs += len(f.recs)
				}
				c.log.Info("partition revoked with a batch in flight; waiting for it", "event", "revoke_wait", "topic", topic, "partition", p,
					"first_offset", fl[0].recs[0].Offset, "records", recs, "batches", len(fl), "lost", lost)
				c.drainPartition(k)
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
		c.forgetWaiting(parts)
	}
	c.commitLanded(work)
}

// poll returns the next records. With max_in_flight > 1 a flight that
// returns ends the poll, so that the loop lands it at once; so does a
// fetch answer that a bucket waits for (fetchClock); and while the
// budget is over with batches in flight (flush started all it could) the
// loop waits for one to land instead of buffering more.
func (c *consumer) poll(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	if !c.async() && c.fetched == nil {
		return cl.PollRecords(ctx, c.t.BatchLength)
	}
	ctx, disarm := c.wake.arm(ctx)
	defer disarm()
	if c.async() && c.s.cfg.Budget.over() && c.inFlight() > 0 {
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
			if !c.fetchPaused(k) {
				add(&resume, k)
			}
		}
	}
	if pause != nil {
		cl.PauseFetchPartitions(pause)
	}
	if resume != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

// unpause resumes fetching the partitions taken away that throttle or a
// fetch failure paused: a pause outlives rebalances, and a partition
// assigned again later must be fetched. c.mu is held.
func (c *consumer) unpause(cl *kgo.Client, parts map[string][]int32) {
	var resume map[string][]int32
	for topic, ps := range parts {
		for _, p := range ps {
			k := tp{topic, p}
			paused := c.paused[k] || c.fetchPaused(k)
			delete(c.failing, k)
			if paused {
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

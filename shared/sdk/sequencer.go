package sdk

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The sequencer finds the predecessor of each pipelined batch (ABI 1.5,
// pipelined.go) among an instance's batches. Every batch is registered as
// Batch.Self when it reaches Consume, before the sink sees it, and finished
// with the call's final answer, so a batch the host sent later but a host
// thread delivered first still finds the one it follows.

// predecessorWait bounds how long a pipelined batch waits for the batch it
// follows to reach the instance (host threads may deliver a partition's
// batches out of order). After it the batch is answered RETRY: the host
// sends it again later, as an ordinary batch.
var predecessorWait = 10 * time.Second

// keptFailures is how many failed batches per partition the sequencer
// remembers, so that a follower arriving after its predecessor failed is
// answered RETRY at once. A follower of an older failure waits
// predecessorWait and is answered RETRY then: slower, never wrong.
const keptFailures = 8

type sequencer struct {
	mu    sync.Mutex
	parts map[partKey]*partSeq
}

type partKey struct {
	topic     string
	partition uint32
}

// partSeq is what the sequencer knows of one topic partition: its size is
// bounded by the batches in progress (the host's flights of the partition)
// plus keptFailures.
type partSeq struct {
	running map[uint64]*Pending // by RangeLast: handed over, not answered
	// okThrough is the highest RangeLast this instance answered OK (when
	// hasOK): a batch following it or anything before it follows nothing
	// unanswered.
	okThrough uint64
	hasOK     bool
	failed    [keptFailures]uint64 // RangeLasts answered with a failure, a ring
	nfailed   int                  // entries of failed in use
	next      int                  // where the next failure goes
	// changed, when not nil, is closed (and cleared) when a batch of the
	// partition starts or is answered: followers waiting for their
	// predecessor look again. Made only when someone waits.
	changed chan struct{}
}

func (s *sequencer) part(b *Batch) *partSeq {
	k := partKey{b.Topic, b.Partition}
	ps := s.parts[k]
	if ps == nil {
		if s.parts == nil {
			s.parts = map[partKey]*partSeq{}
		}
		ps = &partSeq{running: map[uint64]*Pending{}}
		s.parts[k] = ps
	}
	return ps
}

func (ps *partSeq) wake() {
	if ps.changed != nil {
		close(ps.changed)
		ps.changed = nil
	}
}

func (ps *partSeq) failedAt(rangeLast uint64) bool {
	for _, f := range ps.failed[:ps.nfailed] {
		if f == rangeLast {
			return true
		}
	}
	return false
}

// start registers b as in progress and sets b.Self. A redrive batch gets a
// Self but is not registered: its offsets are another partition's order,
// and no batch follows it.
func (s *sequencer) start(b *Batch) *Pending {
	p := newPending(b)
	b.Self = p
	if b.Redrive != nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.part(b)
	// The same range twice in progress (the host sent a batch again while
	// its earlier call still ran): a follower binds to the newer one. Either
	// is safe, since a follower is written only with it or after it.
	ps.running[p.RangeLast] = p
	ps.wake()
	return p
}

// finish records the answer of a batch start registered and answers its
// Pending.
func (s *sequencer) finish(b *Batch, p *Pending, ok bool) {
	if b.Redrive != nil {
		p.finish(ok)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.part(b)
	if ps.running[p.RangeLast] == p {
		delete(ps.running, p.RangeLast)
	}
	switch {
	case ok && (!ps.hasOK || p.RangeLast > ps.okThrough):
		ps.okThrough, ps.hasOK = p.RangeLast, true
	case !ok && !ps.failedAt(p.RangeLast):
		ps.failed[ps.next] = p.RangeLast
		ps.next = (ps.next + 1) % keptFailures
		ps.nfailed = min(ps.nfailed+1, keptFailures)
	}
	// Under mu: a follower that no longer finds p running finds its
	// answer recorded.
	p.finish(ok)
	ps.wake()
}

// predecessor finds the batch b follows (b.Follows set): the Pending of
// (topic, partition, *b.Follows) when it is in progress; nil when this
// instance already answered OK a batch of the partition through that offset
// or later; a RETRY error when it answered that batch with a failure. When
// none of these holds yet (the host sent the predecessor first, but it has
// not reached the instance) it waits for the predecessor to arrive or be
// answered, for at most predecessorWait and until ctx ends; then RETRY.
func (s *sequencer) predecessor(ctx context.Context, b *Batch) (*Pending, error) {
	x := *b.Follows
	var timer *time.Timer
	for {
		s.mu.Lock()
		ps := s.part(b)
		if p := ps.running[x]; p != nil {
			s.mu.Unlock()
			return p, nil
		}
		if ps.hasOK && ps.okThrough >= x {
			s.mu.Unlock()
			return nil, nil
		}
		if ps.failedAt(x) {
			s.mu.Unlock()
			return nil, notWritten(b.Topic, b.Partition, x)
		}
		if ps.changed == nil {
			ps.changed = make(chan struct{})
		}
		changed := ps.changed
		s.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(predecessorWait)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, Retry(fmt.Errorf("topic %q partition %d: consume ended while the batch waited for the one before it (through offset %d) to arrive: %w", b.Topic, b.Partition, x, ctx.Err()))
		case <-timer.C:
			return nil, Retryf("topic %q partition %d: the batch before this one (through offset %d) did not reach the plugin within %s, so this one is not written", b.Topic, b.Partition, x, predecessorWait)
		}
	}
}

// checkSequence refuses a batch whose ABI 1.5 fields contradict its records
// (a host bug the sequencer must not act on): RangeLast below the last
// record, or Follows not before the first record. Call it after RangeLast
// was defaulted.
func (b *Batch) checkSequence() error {
	if b.Redrive != nil {
		if b.Follows != nil {
			return Fatalf("a redrive batch (dead letters of %q partition %d) cannot be pipelined (follows offset %d)", b.Redrive.Topic, b.Redrive.Partition, *b.Follows)
		}
		return nil
	}
	if n := len(b.Records); n > 0 && b.RangeLast < b.Records[n-1].Offset {
		return Fatalf("topic %q partition %d: range_last %d is below the batch's last record's offset %d", b.Topic, b.Partition, b.RangeLast, b.Records[n-1].Offset)
	}
	if b.Follows == nil {
		return nil
	}
	if *b.Follows >= b.RangeLast {
		return Fatalf("topic %q partition %d: the batch through offset %d follows offset %d, which is not before it", b.Topic, b.Partition, b.RangeLast, *b.Follows)
	}
	if len(b.Records) > 0 && *b.Follows >= b.Records[0].Offset {
		return Fatalf("topic %q partition %d: the batch follows offset %d but its first record is at offset %d", b.Topic, b.Partition, *b.Follows, b.Records[0].Offset)
	}
	return nil
}

package sdk

import (
	"context"
	"fmt"
)

// Pipelined batches (ABI 1.5, docs/abi.md "Pipelined batches").
//
// A host may send a topic partition's next batch while the one before it is
// still unanswered, so that a sink can write both in one commit (or queue
// the second behind the first) instead of idling for a round trip. The host
// marks such a batch with Batch.Follows: the RangeLast of the batch it
// follows. Exactly-once sinks record a partition's progress as one number
// (a Delta txn version, an applied offset), so the rule every sink keeps is:
//
//	a batch whose Pred is set is written only in the same atomic commit as
//	its predecessor's records, or after its predecessor was answered OK;
//	if the predecessor was answered anything else, it is not written and is
//	answered RETRY.
//
// The SDK (sequencer.go) finds the predecessor (Batch.Pred) among the
// instance's batches in progress, waits (bounded) for one the host sent
// first but that has not reached the instance yet, answers RETRY itself when
// the predecessor was already answered with a failure, and leaves Pred nil
// when it was already answered OK. A sink registered without
// Plugin.Pipelined, or without Plugin.ConcurrentConsume (it could not hold
// both batches at once), never sees Pred: the SDK waits for the
// predecessor's answer before calling its Consume.

// Pending is the SDK's record of one batch handed to the sink and not yet
// answered: a sink compares Batch.Pred with another batch's Batch.Self to
// know that one follows the other.
type Pending struct {
	done chan struct{}
	ok   bool // set before done closes
	// Topic, Partition and RangeLast identify the batch.
	Topic     string
	Partition uint32
	RangeLast uint64
}

func newPending(b *Batch) *Pending {
	return &Pending{done: make(chan struct{}), Topic: b.Topic, Partition: b.Partition, RangeLast: b.RangeLast}
}

// finish records the batch's answer; called once.
func (p *Pending) finish(ok bool) {
	p.ok = ok
	close(p.done)
}

// Done is closed once the batch was answered.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Answered reports whether the batch was answered, and whether OK.
func (p *Pending) Answered() (answered, ok bool) {
	select {
	case <-p.done:
		return true, p.ok
	default:
		return false, false
	}
}

// Wait waits until the batch is answered: nil when it was answered OK, a
// RETRY error when it was answered anything else or ctx ended first. A sink
// that cannot write a batch with its predecessor calls b.Pred.Wait before
// writing it.
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return Retry(fmt.Errorf("topic %q partition %d: consume ended while the batch waited for the one before it (through offset %d): %w", p.Topic, p.Partition, p.RangeLast, ctx.Err()))
	}
	if !p.ok {
		return p.NotWritten()
	}
	return nil
}

// NotWritten is the RETRY answer of a batch whose predecessor was not
// written.
func (p *Pending) NotWritten() error {
	return notWritten(p.Topic, p.Partition, p.RangeLast)
}

func notWritten(topic string, partition uint32, rangeLast uint64) error {
	return Retry(fmt.Errorf("topic %q partition %d: the batch before this one (through offset %d) was not written, so this one is not either", topic, partition, rangeLast))
}

// NewPending returns a Pending for b, unanswered, and the function that
// answers it (ok: answered OK), for tests of a sink's pipelining (set
// b.Self, and a follower's Pred, to it); call answer once, as the SDK
// answers a batch once. The SDK's sequencer makes the Pendings of real
// batches itself; a sink never calls this.
func NewPending(b *Batch) (p *Pending, answer func(ok bool)) {
	p = newPending(b)
	return p, p.finish
}

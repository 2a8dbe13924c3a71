// Package fakeplugin is a scripted stand-in for a plugin instance in its
// child host (a *child.Instance), behind the interfaces the runtime reaches
// plugins through: pipeline.Deliverer and pipeline.Opener,
// pipeline.PayloadChecker, pipeline.ConcurrentConsumer, pipeline.Pipeliner, observe.Plugin and
// observe.Described. The tests
// of connect/pipeline and connect/observe use it to run the sink loop
// against an in-process broker without a built library or C host, and so
// under the race detector.
//
// A test says what each call answers: an OK with rejected records, RETRY,
// FATAL, a contract breach, a delay, a gate the test opens, or the death of
// the host process (an error matching child.ErrExited, as a real Instance
// returns it). The fake keeps a copy of every batch it was handed and of
// every batch it "wrote", and counts how many calls ran at once (calls may
// overlap, as a real Instance's do with max_in_flight > 1).
//
// With Pipelining set it declares pipelined batches (ABI 1.5) and keeps
// their rule as the SDK and a sink do (docs/abi.md, "Pipelined batches"):
// a batch that follows one not answered yet is written only once that one
// answered OK, and answered RETRY, not written, when it did not. A batch
// with Follows sent to a fake without Pipelining is a contract breach, as
// the host refuses it.
//
// Only tests import it; nothing cmd/picomq-connect links does.
package fakeplugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Result is what one Consume answers.
type Result struct {
	// Code is the status: hostclient.StatusOK (the zero value),
	// StatusRetry, StatusFatal, StatusContract, ...
	Code    hostclient.Status
	Message string // the plugin's error text for a Code other than OK
	// Reject lists the records an OK rejects (ABI 1.1); only honoured
	// when the batch accepts rejections, as the host checks.
	Reject []hostclient.Rejection
	// Delay is how long the call takes before it answers; a context
	// that ends first makes the call return its error, as a real
	// Instance does once it has killed its child.
	Delay time.Duration
	// Exit makes the host process die during the call: the error matches
	// child.ErrExited. With Written the batch was written before the
	// death (its OK was lost): it is among Written, as a plugin that
	// wrote it would have it.
	Exit    bool
	Written bool
	// Gate, when set, holds the call until it is closed (after Delay),
	// or until the context ends: a slow partition the test releases.
	Gate <-chan struct{}
}

// Retry is a RETRY result with msg.
func Retry(msg string) Result {
	return Result{Code: hostclient.StatusRetry, Message: msg}
}

// Fatal is a FATAL result with msg.
func Fatal(msg string) Result {
	return Result{Code: hostclient.StatusFatal, Message: msg}
}

// Exit is the death of the host process during the call.
func Exit() Result { return Result{Exit: true} }

// Call is one Consume the fake answered.
type Call struct {
	Batch  hostclient.Batch // a copy: the runtime reuses its slices
	Result Result
	Err    error // what Consume returned
}

// Plugin is a scripted plugin instance. Set its fields before the runtime
// uses it; its methods are safe for concurrent use.
type Plugin struct {
	// Decide answers a Consume when no queued result is left; nil
	// answers OK. n counts the calls from 1. It runs with the fake
	// locked: it must not call the Plugin's methods.
	Decide func(b hostclient.Batch, n int) Result
	// Checks are the schemas whose payloads the plugin checks itself
	// (describe()'s payload_checks).
	Checks []string
	// Concurrent is describe()'s concurrent_consume
	// (pipeline.ConcurrentConsumer).
	Concurrent bool
	// Pipelining is describe()'s pipelined (pipeline.Pipeliner).
	Pipelining bool
	// Unordered, with Pipelining, writes a batch that follows another
	// without waiting for that one's answer: a sink whose writes are
	// idempotent (the Redshift sink in append mode) may.
	Unordered bool
	// Desc is the describe() document; MetricsJSON the metrics()
	// answer, "" for {"records": <records written>}.
	Desc        string
	MetricsJSON string

	mu       sync.Mutex
	queue    []Result
	opens    []error
	openN    int
	open     bool
	restarts int
	started  int
	calls    []Call
	begun    []hostclient.Batch
	written  []hostclient.Batch
	records  int
	changed  chan struct{}     // closed and replaced on every call
	running  map[partition]int // calls running, per topic-partition
	maxRun   int
	overlaps int
	pending  []*pending // every call begun, in order: the pipelined batches' predecessors
}

// pending is one call begun, as the SDK's sequencer keys it.
type pending struct {
	key  partition
	last uint64        // the batch's RangeLast, or its last record's offset
	done chan struct{} // closed once ok is set
	ok   bool          // answered OK
}

// rangeLast is b's RangeLast as the SDK reads it: 0 is the last record's.
func rangeLast(b hostclient.Batch) uint64 {
	if b.RangeLast == 0 && len(b.Records) > 0 {
		return b.Records[len(b.Records)-1].Offset
	}
	return b.RangeLast
}

type partition struct {
	topic string
	n     uint32
}

// Queue adds results for the next Consume calls, in order; Decide answers
// once they are used up.
func (p *Plugin) Queue(rs ...Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, rs...)
}

// QueueOpen adds the errors the next Open calls return, in order; nil for
// an open that succeeds. Open succeeds once they are used up. An error
// matching child.ErrExited is a host that died during open (OpenExit).
func (p *Plugin) QueueOpen(errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opens = append(p.opens, errs...)
}

// OpenError is the error a real Instance's Open returns for code.
func OpenError(code hostclient.Status, msg string) error {
	return &hostclient.StatusError{Op: "open", Code: code, Message: msg}
}

// OpenExit is the error of an Open during which the host process died.
func OpenExit() error { return exitErr() }

// exitErr is what child returns for a call whose process died: the
// driver's *hostclient.ExitError wrapped to match child.ErrExited.
func exitErr() error {
	return fmt.Errorf("%w: %w", child.ErrExited, &hostclient.ExitError{State: "signal: killed"})
}

// Open answers the next queued open result; it is the instance's open in
// its child (pipeline.Opener).
func (p *Plugin) Open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.notify()
	p.openN++
	if len(p.opens) > 0 {
		err := p.opens[0]
		p.opens = p.opens[1:]
		if err != nil {
			return err
		}
	}
	p.open = true
	return nil
}

// Consume answers as scripted (pipeline.Deliverer). A Consume after the
// host died, like a real Instance's, reopens the instance first.
func (p *Plugin) Consume(ctx context.Context, b hostclient.Batch) ([]hostclient.Rejection, error) {
	p.mu.Lock()
	cp := copyBatch(b)
	r := Result{}
	switch {
	case len(p.queue) > 0:
		r = p.queue[0]
		p.queue = p.queue[1:]
	case p.Decide != nil:
		r = p.Decide(cp, len(p.calls)+1)
	}
	if !p.open {
		// A real Instance opens on its first Consume, and reopens after
		// a restart.
		p.openN++
		p.open = true
	}
	p.started++
	p.begun = append(p.begun, cp)
	key := partition{b.Topic, b.Partition}
	if p.running == nil {
		p.running = map[partition]int{}
	}
	if p.running[key] > 0 {
		p.overlaps++
	}
	p.running[key]++
	p.maxRun = max(p.maxRun, p.started-len(p.calls))
	me := &pending{key: key, last: rangeLast(cp), done: make(chan struct{})}
	p.pending = append(p.pending, me)
	p.notify()
	p.mu.Unlock()

	var rej []hostclient.Rejection
	var err error
	switch {
	case b.Follows == nil:
		rej, err = p.answer(ctx, cp, r)
	case !p.Pipelining:
		err = &hostclient.StatusError{Op: "consume", Code: hostclient.StatusContract,
			Message: "a pipelined batch (follows set) to a library that does not declare pipelined"}
	default:
		var pred *pending
		if pred, err = p.predecessor(ctx, me, *b.Follows); err == nil {
			rej, err = p.answer(ctx, cp, r)
		}
		if err == nil && pred != nil && !p.Unordered {
			// Written only once the batch it follows answered OK.
			select {
			case <-pred.done:
				if !pred.ok {
					rej, err = nil, &hostclient.StatusError{Op: "consume", Code: hostclient.StatusRetry,
						Message: "the batch it follows was not written"}
				}
			case <-ctx.Done():
				rej, err = nil, ctx.Err()
			}
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.notify()
	me.ok = err == nil
	defer close(me.done) // once written: a follower is written after it
	p.running[key]--
	p.calls = append(p.calls, Call{Batch: cp, Result: r, Err: err})
	if r.Exit {
		p.open = false
		p.restarts++
	}
	if err == nil || r.Exit && r.Written {
		w := cp
		w.Records = slices.DeleteFunc(slices.Clone(cp.Records), func(rec hostclient.Record) bool {
			return slices.ContainsFunc(rej, func(x hostclient.Rejection) bool { return cp.Records[x.Index].Offset == rec.Offset })
		})
		p.written = append(p.written, w)
		p.records += len(w.Records)
	}
	return rej, err
}

// predecessor finds the call that me follows, as the SDK's sequencer
// does: the latest call of the partition with RangeLast follows, not
// answered (returned: the follower waits for its answer); none when one
// answered OK covers it; RETRY when it answered otherwise. One not begun
// yet (the runtime's calls may arrive in any order) is waited for, up to
// 10 s.
func (p *Plugin) predecessor(ctx context.Context, me *pending, follows uint64) (*pending, error) {
	retry := func(msg string) error {
		return &hostclient.StatusError{Op: "consume", Code: hostclient.StatusRetry, Message: msg}
	}
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		var found *pending
		covered := false
		for _, e := range p.pending {
			if e == me || e.key != me.key {
				continue
			}
			if e.last == follows {
				found = e
			}
			select {
			case <-e.done:
				covered = covered || e.ok && e.last >= follows
			default:
			}
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		if found != nil {
			select {
			case <-found.done:
				if found.ok {
					return nil, nil
				}
				return nil, retry("the batch it follows was answered with a failure")
			default:
				return found, nil
			}
		}
		if covered {
			return nil, nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil, retry("the batch it follows never arrived")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// answer waits r.Delay and returns r's outcome.
func (p *Plugin) answer(ctx context.Context, b hostclient.Batch, r Result) ([]hostclient.Rejection, error) {
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if r.Gate != nil {
		select {
		case <-r.Gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch {
	case r.Exit:
		return nil, exitErr()
	case r.Code != hostclient.StatusOK:
		return nil, &hostclient.StatusError{Op: "consume", Code: r.Code, Message: r.Message}
	case len(r.Reject) > 0 && !b.AcceptRejections:
		// The host refuses rejections the batch did not offer; the SDK
		// fails the batch FATAL instead, as a plugin of ABI 1.0 would.
		return nil, &hostclient.StatusError{Op: "consume", Code: hostclient.StatusFatal, Message: r.Reject[0].Message}
	}
	for _, x := range r.Reject {
		if x.Index < 0 || x.Index >= len(b.Records) {
			return nil, &hostclient.StatusError{Op: "consume", Code: hostclient.StatusContract,
				Message: fmt.Sprintf("rejected record %d of a batch of %d", x.Index, len(b.Records))}
		}
	}
	return slices.Clone(r.Reject), nil
}

// notify wakes Wait; p.mu is held.
func (p *Plugin) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// Wait blocks until cond, called with the fake's state locked after each
// call, holds, or d passes: it returns whether cond held. cond must not
// call the Plugin's methods.
func (p *Plugin) Wait(d time.Duration, cond func(s State) bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if cond(p.state()) {
			p.mu.Unlock()
			return true
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// State is what the fake saw, as Wait's condition reads it.
type State struct {
	Started int    // Consume calls begun, those in flight included
	Calls   []Call // Consume calls answered
	// Begun is the batch of every Consume call begun, those in flight
	// included, in the order they began.
	Begun    []hostclient.Batch
	Written  []hostclient.Batch
	Opens    int
	Restarts int
	// MaxRunning is the most Consume calls that ran at once.
	MaxRunning int
	// Overlaps counts the calls that began while another call for the
	// same topic-partition ran.
	Overlaps int
}

// Running is how many Consume calls run now.
func (s State) Running() int { return s.Started - len(s.Calls) }

func (p *Plugin) state() State {
	return State{Started: p.started, Calls: p.calls, Begun: p.begun, Written: p.written, Opens: p.openN, Restarts: p.restarts,
		MaxRunning: p.maxRun, Overlaps: p.overlaps}
}

// Snapshot returns a copy of what the fake saw so far.
func (p *Plugin) Snapshot() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state()
	s.Calls, s.Written, s.Begun = slices.Clone(s.Calls), slices.Clone(s.Written), slices.Clone(s.Begun)
	return s
}

// Calls returns every Consume so far, in order.
func (p *Plugin) Calls() []Call { return p.Snapshot().Calls }

// Written returns the batches the plugin wrote, in order, without the
// records it rejected.
func (p *Plugin) Written() []hostclient.Batch { return p.Snapshot().Written }

// Opens returns how many times the instance was opened (by Open, or by a
// Consume after a death), failed opens included.
func (p *Plugin) Opens() int { return p.Snapshot().Opens }

// ChecksPayloads reports whether schema is in Checks (pipeline.PayloadChecker).
func (p *Plugin) ChecksPayloads(schema string) bool { return slices.Contains(p.Checks, schema) }

// Pipelined returns Pipelining (pipeline.Pipeliner).
func (p *Plugin) Pipelined() bool { return p.Pipelining }

// ConcurrentConsume returns Concurrent (pipeline.ConcurrentConsumer).
func (p *Plugin) ConcurrentConsume() bool { return p.Concurrent }

// Description returns Desc (observe.Described).
func (p *Plugin) Description() string { return p.Desc }

// Metrics returns MetricsJSON, or the records written (observe.Plugin).
// It never waits for a Consume, as the ABI says metrics() must not.
func (p *Plugin) Metrics(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if p.MetricsJSON != "" {
		return p.MetricsJSON, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open {
		return "", child.ErrNotOpen
	}
	return fmt.Sprintf(`{"records":%d}`, p.records), nil
}

// copyBatch copies b deeply: the runtime reuses its slices once Consume
// returned, as the host driver's frame copy allows.
func copyBatch(b hostclient.Batch) hostclient.Batch {
	if b.Follows != nil {
		f := *b.Follows
		b.Follows = &f
	}
	b.Records = slices.Clone(b.Records)
	for i, r := range b.Records {
		r.Key = cloneBytes(r.Key)
		r.Payload = cloneBytes(r.Payload)
		r.Headers = slices.Clone(r.Headers)
		for j, h := range r.Headers {
			r.Headers[j].Value = cloneBytes(h.Value)
		}
		b.Records[i] = r
	}
	return b
}

// cloneBytes keeps nil nil and empty empty: an absent key is not an empty
// one.
func cloneBytes(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append([]byte{}, p...)
}

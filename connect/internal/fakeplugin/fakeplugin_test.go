package fakeplugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

func batch(accept bool, payloads ...string) hostclient.Batch {
	b := hostclient.Batch{Attempt: 1, Topic: "a", Schema: "json", AcceptRejections: accept}
	for i, p := range payloads {
		b.Records = append(b.Records, hostclient.Record{Offset: uint64(10 + i), Payload: []byte(p)})
	}
	return b
}

// The answers the runtime tells apart come back as a real Instance returns
// them, and Written holds what an OK wrote, without what it rejected.
func TestAnswers(t *testing.T) {
	ctx := context.Background()
	p := &fakeplugin.Plugin{}
	p.Queue(fakeplugin.Retry("later"), fakeplugin.Fatal("never"), fakeplugin.Exit(),
		fakeplugin.Result{Reject: []hostclient.Rejection{{Index: 1, Reason: hostclient.RejectValue, Message: "bad"}}},
		fakeplugin.Result{Reject: []hostclient.Rejection{{Index: 0, Message: "bad"}}},
		fakeplugin.Result{Reject: []hostclient.Rejection{{Index: 2, Message: "bad"}}})
	if _, err := p.Consume(ctx, batch(true, "1")); hostclient.CodeOf(err) != hostclient.StatusRetry {
		t.Errorf("retry: %v", err)
	}
	if _, err := p.Consume(ctx, batch(true, "1")); hostclient.CodeOf(err) != hostclient.StatusFatal {
		t.Errorf("fatal: %v", err)
	}
	_, err := p.Consume(ctx, batch(true, "1"))
	var ee *hostclient.ExitError
	if !errors.Is(err, child.ErrExited) || !errors.As(err, &ee) {
		t.Errorf("exit: %v", err)
	}
	if _, err := p.Metrics(ctx); !errors.Is(err, child.ErrNotOpen) {
		t.Errorf("metrics of a dead instance: %v", err)
	}
	rej, err := p.Consume(ctx, batch(true, "1", "2", "3"))
	if err != nil || len(rej) != 1 || rej[0].Index != 1 {
		t.Errorf("rejections: %v %v", rej, err)
	}
	// Rejections a batch did not offer fail it FATAL, as the SDK does.
	if _, err := p.Consume(ctx, batch(false, "1")); hostclient.CodeOf(err) != hostclient.StatusFatal {
		t.Errorf("rejection not offered: %v", err)
	}
	// An index the batch does not have is a contract breach in the host.
	if _, err := p.Consume(ctx, batch(true, "1")); hostclient.CodeOf(err) != hostclient.StatusContract {
		t.Errorf("rejection out of range: %v", err)
	}
	w := p.Written()
	if len(w) != 1 || len(w[0].Records) != 2 || w[0].Records[0].Offset != 10 || w[0].Records[1].Offset != 12 {
		t.Errorf("written %+v", w)
	}
	if js, err := p.Metrics(ctx); err != nil || js != `{"records":2}` {
		t.Errorf("metrics %q %v", js, err)
	}
	if s := p.Snapshot(); s.Started != 6 || len(s.Calls) != 6 || s.Restarts != 1 || s.Opens != 2 {
		t.Errorf("state: %d started, %d calls, %d restarts, %d opens", s.Started, len(s.Calls), s.Restarts, s.Opens)
	}
}

// A delayed answer gives way to its context; the batch is kept as the
// caller handed it, whatever the caller does with its slices afterwards.
func TestDelayAndCopy(t *testing.T) {
	p := &fakeplugin.Plugin{Decide: func(hostclient.Batch, int) fakeplugin.Result { return fakeplugin.Result{Delay: time.Hour} }}
	ctx, cancel := context.WithCancel(context.Background())
	b := batch(false, "x")
	done := make(chan error, 1)
	go func() {
		_, err := p.Consume(ctx, b)
		done <- err
	}()
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return s.Started == 1 }) {
		t.Fatal("the call never began")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}
	b.Records[0].Payload[0] = 'y'
	if c := p.Calls(); len(c) != 1 || string(c[0].Batch.Records[0].Payload) != "x" || len(p.Written()) != 0 {
		t.Errorf("calls %+v", c)
	}
}

// Open answers its queue in order, then succeeds.
func TestOpen(t *testing.T) {
	p := &fakeplugin.Plugin{}
	p.QueueOpen(fakeplugin.OpenError(hostclient.StatusBadConfig, "no"), fakeplugin.OpenExit())
	ctx := context.Background()
	if err := p.Open(ctx); hostclient.CodeOf(err) != hostclient.StatusBadConfig {
		t.Errorf("first: %v", err)
	}
	if err := p.Open(ctx); !errors.Is(err, child.ErrExited) {
		t.Errorf("second: %v", err)
	}
	if err := p.Open(ctx); err != nil || p.Opens() != 3 {
		t.Errorf("third: %v, %d opens", err, p.Opens())
	}
}

// pipelined is batch(true, payloads) at offsets from first on, with
// RangeLast its last offset and Follows follows (nil for none).
func pipelined(first uint64, follows *uint64, payloads ...string) hostclient.Batch {
	b := batch(true, payloads...)
	for i := range b.Records {
		b.Records[i].Offset = first + uint64(i)
	}
	b.RangeLast, b.Follows = first+uint64(len(payloads))-1, follows
	return b
}

// The rule of pipelined batches: a follower of a batch not answered yet is
// written only once that one answered OK, and answered RETRY, not written,
// when it failed; a follower of a failed batch is refused at once; one of
// a batch answered OK goes alone. Without Pipelining a follower is a
// contract breach.
func TestPipelinedRule(t *testing.T) {
	ctx := context.Background()
	four, six := uint64(4), uint64(6)
	for _, headOK := range []bool{true, false} {
		gate := make(chan struct{})
		p := &fakeplugin.Plugin{Pipelining: true, Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
			if b.Records[0].Offset == 0 {
				r := fakeplugin.Result{Gate: gate}
				if !headOK {
					r.Code = hostclient.StatusRetry
				}
				return r
			}
			return fakeplugin.Result{}
		}}
		head := make(chan error, 1)
		go func() { _, err := p.Consume(ctx, pipelined(0, nil, "0", "1", "2", "3", "4")); head <- err }()
		follower := make(chan error, 1)
		go func() { _, err := p.Consume(ctx, pipelined(5, &four, "5", "6")); follower <- err }()
		if !p.Wait(5*time.Second, func(s fakeplugin.State) bool { return s.Running() == 2 && s.Overlaps == 1 }) {
			t.Fatal("the follower never ran beside its head")
		}
		select {
		case err := <-follower:
			t.Fatalf("the follower answered %v before its head", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(gate)
		<-head
		err := <-follower
		if headOK != (err == nil) || !headOK && hostclient.CodeOf(err) != hostclient.StatusRetry {
			t.Errorf("head OK %v: follower %v", headOK, err)
		}
		var written []uint64
		for _, b := range p.Written() {
			for _, r := range b.Records {
				written = append(written, r.Offset)
			}
		}
		if want := map[bool]int{true: 7, false: 0}[headOK]; len(written) != want {
			t.Errorf("head OK %v: written %v", headOK, written)
		}
		// Its follower, once both answered: alone after an OK, refused at
		// once after a failure.
		_, err = p.Consume(ctx, pipelined(7, &six, "7"))
		if headOK != (err == nil) {
			t.Errorf("head OK %v: the follower of the follower: %v", headOK, err)
		}
	}
	p := &fakeplugin.Plugin{}
	if _, err := p.Consume(ctx, pipelined(5, &four, "5")); hostclient.CodeOf(err) != hostclient.StatusContract {
		t.Errorf("a follower to a plugin without pipelined: %v", err)
	}
}

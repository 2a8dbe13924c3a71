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

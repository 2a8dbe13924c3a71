package sdk

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// seqSink records which batches reach it and with which Pred. A batch whose
// RangeLast has a gate waits in Consume for the gate's answer; a batch with
// Pred set then keeps the pipelined rule the way a sink that cannot write it
// with its predecessor does: it waits for the predecessor's answer.
type seqSink struct {
	mu      sync.Mutex
	gates   map[uint64]chan error
	entered chan seqCall
}

type seqCall struct {
	rangeLast uint64
	pred      *Pending
}

type seqConfig struct{}

func (s *seqSink) Open(context.Context, *seqConfig, *Host) error { return nil }
func (s *seqSink) Close(context.Context) error                   { return nil }
func (s *seqSink) Consume(ctx context.Context, b *Batch) error {
	s.entered <- seqCall{b.RangeLast, b.Pred}
	s.mu.Lock()
	g := s.gates[b.RangeLast]
	s.mu.Unlock()
	if g != nil {
		select {
		case err := <-g:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return Retry(ctx.Err())
		}
	}
	if b.Pred != nil {
		return b.Pred.Wait(ctx)
	}
	return nil
}

// gate makes the batch through rangeLast wait in the sink until the test
// sends its answer.
func (s *seqSink) gate(rangeLast uint64) chan error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := make(chan error, 1)
	s.gates[rangeLast] = g
	return g
}

func (s *seqSink) waitEntered(t *testing.T, rangeLast uint64) seqCall {
	t.Helper()
	select {
	case c := <-s.entered:
		if c.rangeLast != rangeLast {
			t.Fatalf("the batch through %d reached the sink, want the one through %d", c.rangeLast, rangeLast)
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatalf("the batch through %d did not reach the sink", rangeLast)
	}
	return seqCall{}
}

// waitEnteredAll waits for the batches through each of rangeLasts to reach
// the sink, in any order, and nothing else.
func (s *seqSink) waitEnteredAll(t *testing.T, rangeLasts ...uint64) map[uint64]seqCall {
	t.Helper()
	calls := map[uint64]seqCall{}
	for range rangeLasts {
		select {
		case c := <-s.entered:
			if !slices.Contains(rangeLasts, c.rangeLast) || calls[c.rangeLast] != (seqCall{}) {
				t.Fatalf("the batch through %d reached the sink, want each of %v once", c.rangeLast, rangeLasts)
			}
			calls[c.rangeLast] = c
		case <-time.After(5 * time.Second):
			t.Fatalf("of the batches through %v only %d reached the sink", rangeLasts, len(calls))
		}
	}
	return calls
}

func (s *seqSink) notEntered(t *testing.T, why string) {
	t.Helper()
	select {
	case c := <-s.entered:
		t.Fatalf("%s: the batch through %d reached the sink", why, c.rangeLast)
	case <-time.After(100 * time.Millisecond):
	}
}

func openSeq(t *testing.T, pipelined, concurrent bool) (uint64, *seqSink) {
	t.Helper()
	sink := &seqSink{gates: map[uint64]chan error{}, entered: make(chan seqCall, 16)}
	withPlugin(t, Plugin[seqConfig]{Name: "seq_sink", Pipelined: pipelined, ConcurrentConsume: concurrent,
		New: func() Sink[seqConfig] { return sink }})
	def, _ := json.Marshal(Definition{Key: "seq", PluginConfig: json.RawMessage(`{}`)})
	h, err := Open(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Close(h) })
	return h, sink
}

// seqBatch is records first..last of partition 0 of "t", following the
// batch through follows when it is not nil.
func seqBatch(first, last uint64, follows *uint64) *Batch {
	b := &Batch{Topic: "t", Schema: SchemaRaw, Attempt: 1, RangeLast: last, Follows: follows}
	for o := first; o <= last; o++ {
		b.Records = append(b.Records, Record{Offset: o, Payload: []byte("x")})
	}
	return b
}

func goConsume(h uint64, b *Batch) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- Consume(h, b) }()
	return errc
}

func wantAnswer(t *testing.T, errc <-chan error, want Status, contains string) error {
	t.Helper()
	select {
	case err := <-errc:
		if StatusOf(err) != want || (contains != "" && !strings.Contains(err.Error(), contains)) {
			t.Fatalf("answer %v, want %v containing %q", err, want, contains)
		}
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
	return nil
}

// Every batch gets Self, answered with the call's result; a batch following
// one this instance answered OK (or anything before it) is independent.
func TestSequencerFollowerAfterOKPredecessor(t *testing.T) {
	h, sink := openSeq(t, true, true)
	p := seqBatch(0, 9, nil)
	if err := Consume(h, p); err != nil {
		t.Fatal(err)
	}
	sink.waitEntered(t, 9)
	if p.Self == nil {
		t.Fatal("Self not set")
	}
	if answered, ok := p.Self.Answered(); !answered || !ok || p.Self.RangeLast != 9 {
		t.Fatalf("Self of the OK batch: answered %v ok %v through %d", answered, ok, p.Self.RangeLast)
	}
	for _, follows := range []uint64{9, 5} {
		b := seqBatch(10, 19, new(follows))
		if err := Consume(h, b); err != nil {
			t.Fatalf("follows %d: %v", follows, err)
		}
		if c := sink.waitEntered(t, 19); c.pred != nil {
			t.Fatalf("follows %d: Pred set for a predecessor already answered OK", follows)
		}
	}
}

// A follower of a batch still in the sink gets Pred; Pred.Wait returns nil
// once the predecessor is answered OK, RETRY once it failed.
func TestSequencerPredecessorInProgress(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer error
		want   Status
	}{{"ok", nil, StatusOK}, {"failed", Retryf("destination down"), StatusRetry}} {
		t.Run(c.name, func(t *testing.T) {
			h, sink := openSeq(t, true, true)
			gate := sink.gate(9)
			p := seqBatch(0, 9, nil)
			perr := goConsume(h, p)
			sink.waitEntered(t, 9)
			berr := goConsume(h, seqBatch(10, 19, new(uint64(9))))
			call := sink.waitEntered(t, 19)
			if call.pred == nil || call.pred != p.Self || call.pred.RangeLast != 9 {
				t.Fatalf("Pred = %+v, want the Self of the batch through 9", call.pred)
			}
			if answered, _ := call.pred.Answered(); answered {
				t.Fatal("Pred answered before its batch was")
			}
			gate <- c.answer
			wantAnswer(t, perr, c.want, "")
			err := wantAnswer(t, berr, c.want, "")
			if c.want == StatusRetry && !strings.Contains(err.Error(), "was not written") {
				t.Fatalf("follower's RETRY does not say why: %v", err)
			}
		})
	}
}

// A follower whose predecessor was already answered with a failure is
// answered RETRY without reaching the sink.
func TestSequencerPredecessorFailedBeforeFollower(t *testing.T) {
	h, sink := openSeq(t, true, true)
	gate := sink.gate(9)
	gate <- Fatalf("record does not fit")
	if err := Consume(h, seqBatch(0, 9, nil)); StatusOf(err) != StatusFatal {
		t.Fatalf("predecessor: %v", err)
	}
	sink.waitEntered(t, 9)
	wantAnswer(t, goConsume(h, seqBatch(10, 19, new(uint64(9)))), StatusRetry, "through offset 9) was not written")
	sink.notEntered(t, "follower of a failed batch")
}

// Host threads may deliver a follower before its predecessor: it waits for
// the predecessor to arrive, then goes on as if they came in order.
func TestSequencerFollowerArrivesFirst(t *testing.T) {
	h, sink := openSeq(t, true, true)
	berr := goConsume(h, seqBatch(10, 19, new(uint64(9))))
	sink.notEntered(t, "follower before its predecessor arrived")
	gate := sink.gate(9)
	p := seqBatch(0, 9, nil)
	perr := goConsume(h, p)
	// Once the predecessor is in progress both calls run: a pipelined,
	// concurrent sink gets them in either order, the follower with Pred.
	calls := sink.waitEnteredAll(t, 9, 19)
	if calls[19].pred != p.Self {
		t.Fatalf("Pred = %+v, want the late predecessor's Self", calls[19].pred)
	}
	gate <- nil
	wantAnswer(t, perr, StatusOK, "")
	wantAnswer(t, berr, StatusOK, "")
}

// A predecessor that never arrives: RETRY after predecessorWait, the sink
// never called. Close ends the wait too.
func TestSequencerPredecessorNeverArrives(t *testing.T) {
	saved := predecessorWait
	predecessorWait = 200 * time.Millisecond
	t.Cleanup(func() { predecessorWait = saved })
	h, sink := openSeq(t, true, true)
	start := time.Now()
	wantAnswer(t, goConsume(h, seqBatch(10, 19, new(uint64(9)))), StatusRetry, "did not reach the plugin within 200ms")
	if d := time.Since(start); d < predecessorWait {
		t.Fatalf("answered after %s, before the %s bound", d, predecessorWait)
	}
	sink.notEntered(t, "follower whose predecessor never came")

	predecessorWait = time.Minute
	berr := goConsume(h, seqBatch(30, 39, new(uint64(29))))
	time.Sleep(50 * time.Millisecond)
	if err := Close(h); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, berr, StatusRetry, "consume ended while the batch waited")
}

// A sink that does not keep the order itself never sees Pred: the SDK calls
// it with the follower only once the predecessor was answered OK, and not at
// all when it failed. So for a Pipelined sink whose calls are serialised.
func TestSequencerWaitsForPlugins(t *testing.T) {
	for _, c := range []struct {
		name                  string
		pipelined, concurrent bool
	}{
		{"not pipelined, concurrent", false, true},
		{"not pipelined, serialised", false, false},
		{"pipelined, serialised", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, fail := range []bool{false, true} {
				h, sink := openSeq(t, c.pipelined, c.concurrent)
				gate := sink.gate(9)
				perr := goConsume(h, seqBatch(0, 9, nil))
				sink.waitEntered(t, 9)
				berr := goConsume(h, seqBatch(10, 19, new(uint64(9))))
				sink.notEntered(t, "follower while its predecessor is unanswered")
				if fail {
					gate <- Retryf("destination down")
					wantAnswer(t, perr, StatusRetry, "")
					wantAnswer(t, berr, StatusRetry, "was not written")
					sink.notEntered(t, "follower of a failed batch")
					continue
				}
				gate <- nil
				wantAnswer(t, perr, StatusOK, "")
				if call := sink.waitEntered(t, 19); call.pred != nil {
					t.Fatal("the sink saw Pred")
				}
				wantAnswer(t, berr, StatusOK, "")
			}
		})
	}
}

// A batch whose ABI 1.5 fields contradict its records is refused FATAL
// before the sequencer acts on them; RangeLast 0 (an older host) is the
// last record's offset.
func TestSequencerChecksBatches(t *testing.T) {
	h, sink := openSeq(t, true, true)
	b := seqBatch(3, 5, nil)
	b.RangeLast = 0
	if err := Consume(h, b); err != nil || b.RangeLast != 5 || b.Self.RangeLast != 5 {
		t.Fatalf("RangeLast 0: err %v, RangeLast %d, Self through %d; want 5", err, b.RangeLast, b.Self.RangeLast)
	}
	sink.waitEntered(t, 5)
	redrive := seqBatch(3, 5, new(uint64(1)))
	redrive.Redrive = &Redrive{Topic: "t.dlq", Offsets: []uint64{7, 8, 9}}
	for name, c := range map[string]struct {
		b    *Batch
		want string
	}{
		"range_last below a record": {&Batch{Topic: "t", Schema: SchemaRaw, RangeLast: 4, Records: []Record{{Offset: 5}}}, "range_last 4 is below"},
		"follows itself":            {seqBatch(20, 29, new(uint64(29))), "not before it"},
		"follows into its records":  {seqBatch(20, 29, new(uint64(25))), "first record is at offset 20"},
		"redrive":                   {redrive, "cannot be pipelined"},
	} {
		if err := Consume(h, c.b); StatusOf(err) != StatusFatal || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want FATAL containing %q", name, err, c.want)
		}
	}
	sink.notEntered(t, "a batch with contradicting fields")
}

// What the sequencer keeps per partition stays bounded however many batches
// pass: no batch in progress once all were answered, at most keptFailures
// failures.
func TestSequencerMemoryIsBounded(t *testing.T) {
	h, sink := openSeq(t, true, true)
	for i := range uint64(100) {
		last := i*10 + 9
		if i%2 == 0 {
			sink.gate(last) <- Retryf("down")
		}
		_ = Consume(h, seqBatch(i*10, last, nil))
		sink.waitEntered(t, last)
	}
	in := lookup(h)
	in.seq.mu.Lock()
	defer in.seq.mu.Unlock()
	ps := in.seq.parts[partKey{"t", 0}]
	if ps == nil {
		t.Fatal("the sequencer kept nothing for the partition")
	}
	if len(in.seq.parts) != 1 || len(ps.running) != 0 || ps.nfailed != keptFailures || ps.okThrough != 999 {
		t.Fatalf("after 100 batches: %d partitions, %d running, %d failures kept, OK through %d", len(in.seq.parts), len(ps.running), ps.nfailed, ps.okThrough)
	}
}

// describe() says "pipelined": true only for a plugin registered with
// Plugin.Pipelined: a host pipelines batches to no other.
func TestDescribePipelined(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		withPlugin(t, Plugin[seqConfig]{Name: "seq_sink", Pipelined: pipelined, New: func() Sink[seqConfig] { return &seqSink{} }})
		d, err := Describe()
		if err != nil {
			t.Fatal(err)
		}
		var desc map[string]any
		if err := json.Unmarshal(d, &desc); err != nil {
			t.Fatal(err)
		}
		if got, ok := desc["pipelined"]; ok != pipelined || (ok && got != true) {
			t.Errorf("Pipelined %v: describe() = %s", pipelined, d)
		}
	}
}

type nopSink struct{}

func (nopSink) Open(context.Context, *seqConfig, *Host) error { return nil }
func (nopSink) Close(context.Context) error                   { return nil }
func (nopSink) Consume(context.Context, *Batch) error         { return nil }

// The sequencer's cost per batch: Consume of one-record batches, each
// following the one before it, into a sink that does nothing.
func BenchmarkConsumeSequenced(b *testing.B) {
	regMu.Lock()
	saved := registered
	registered = nil
	regMu.Unlock()
	Register(Plugin[seqConfig]{Name: "nop_sink", Pipelined: true, ConcurrentConsume: true, New: func() Sink[seqConfig] { return nopSink{} }})
	b.Cleanup(func() {
		regMu.Lock()
		registered = saved
		regMu.Unlock()
	})
	def, _ := json.Marshal(Definition{Key: "nop", PluginConfig: json.RawMessage(`{}`)})
	h, err := Open(def, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer Close(h)
	rec := []Record{{Payload: []byte("x")}}
	for i := range uint64(b.N) {
		rec[0].Offset = i + 1
		batch := &Batch{Topic: "t", Schema: SchemaRaw, Attempt: 1, Records: rec}
		if i > 0 {
			batch.Follows = new(i)
		}
		if err := Consume(h, batch); err != nil {
			b.Fatal(err)
		}
	}
}

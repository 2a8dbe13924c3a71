package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// Batches in flight (max_in_flight > 1), on topic "p" of several
// partitions, against the fake with gates: a gated call is a slow
// partition the test releases.

// partitioned starts a broker with topic "p" of n partitions and produces
// per records to each, partition by partition.
func partitioned(t *testing.T, n, per int) *kfake.Cluster {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), "p"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range n {
		for _, v := range jsonPayloads(0, per) {
			recs = append(recs, &kgo.Record{Topic: "p", Partition: int32(p), Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return kf
}

// committedP returns the group's committed offset of each of the n
// partitions of "p"; -1 where none.
func committedP(t *testing.T, kf *kfake.Cluster, n int) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := slices.Repeat([]int64{-1}, n)
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if o, ok := resp.Lookup("p", int32(p)); ok {
			out[p] = o.At
		}
	}
	return out
}

// gates holds chosen calls until the test opens them; Decide's answer for
// the others is OK.
type gates struct {
	mu sync.Mutex
	ch map[string]chan struct{} // by "partition@first offset#attempt"
}

func gateKey(partition uint32, first uint64, attempt uint32) string {
	return fmt.Sprintf("%d@%d#%d", partition, first, attempt)
}

// hold makes the call for partition's batch starting at first, attempt
// attempt, wait for open.
func (g *gates) hold(partition uint32, first uint64, attempt uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = map[string]chan struct{}{}
	}
	g.ch[gateKey(partition, first, attempt)] = make(chan struct{})
}

func (g *gates) open(partition uint32, first uint64, attempt uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch[gateKey(partition, first, attempt)])
}

// of returns the gate of b; nil for none. Decide calls it with the fake
// locked.
func (g *gates) of(b hostclient.Batch) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.ch[gateKey(b.Partition, b.Records[0].Offset, b.Attempt)]; ok {
		return ch
	}
	return nil
}

// decide is a fakeplugin.Plugin.Decide that holds each batch at its gate
// and answers OK.
func (g *gates) decide(b hostclient.Batch, _ int) fakeplugin.Result {
	return fakeplugin.Result{Gate: g.of(b)}
}

// inFlightBlock is a block on "p" with batches of 5 and max_in_flight n.
func inFlightBlock(n int) string {
	return fmt.Sprintf("[[topics]]\ntopics = [\"p\"]\nschema = \"json\"\nbatch_length = 5\npoll_interval = \"50ms\"\nmax_in_flight = %d\n", n)
}

// running reports whether a call for partition's batch at first, attempt
// attempt, is in the plugin (begun, not answered) within 10 s.
func running(p *fakeplugin.Plugin, partition uint32, first uint64, attempt uint32) bool {
	return p.Wait(10*time.Second, func(s fakeplugin.State) bool {
		is := func(b hostclient.Batch) bool {
			return b.Partition == partition && b.Records[0].Offset == first && b.Attempt == attempt
		}
		return slices.ContainsFunc(s.Begun, is) && !slices.ContainsFunc(s.Calls, func(c fakeplugin.Call) bool { return is(c.Batch) })
	})
}

// checkOrder fails unless every partition of "p" was written in offset
// order, 0 to per-1, each once, with no two calls of one partition at once
// and never more than n calls at all.
func checkOrder(t *testing.T, p *fakeplugin.Plugin, parts, per, n int) {
	t.Helper()
	got := map[uint32][]uint64{}
	for _, b := range p.Written() {
		for _, r := range b.Records {
			got[b.Partition] = append(got[b.Partition], r.Offset)
		}
	}
	for part := range parts {
		if !slices.Equal(got[uint32(part)], seq(0, per)) {
			t.Errorf("partition %d written %v, want 0..%d once each, in order", part, got[uint32(part)], per-1)
		}
	}
	s := p.Snapshot()
	if s.Overlaps != 0 {
		t.Errorf("%d calls began while their partition had one running", s.Overlaps)
	}
	if s.MaxRunning > n {
		t.Errorf("%d calls ran at once, max_in_flight %d", s.MaxRunning, n)
	}
}

// A slow partition (its second batch held at the gate) holds only itself:
// the others' batches are delivered and committed meanwhile, its own
// offset stays at its first batch; released, it catches up. Never more
// than max_in_flight calls at once, never two of one partition, each
// partition in order; the budget comes back to zero.
func TestInFlightSlowPartition(t *testing.T) {
	const parts, per, n = 4, 20, 3
	var g gates
	g.hold(0, 5, 1)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		return fakeplugin.Result{Gate: g.of(b), Delay: time.Millisecond}
	}}
	kf := partitioned(t, parts, per)
	h := newHarness(t, kf, inFlightBlock(n), fake(p))
	h.budget = pipeline.NewBudget(0)
	h.start()
	if !running(p, 0, 5, 1) {
		t.Fatal("partition 0's second batch never reached the plugin")
	}
	poll.Until(t, 20*time.Second, "the other partitions committed", func() bool {
		c := committedP(t, kf, parts)
		return c[1] == per && c[2] == per && c[3] == per
	})
	if c := committedP(t, kf, parts); c[0] != 5 {
		t.Fatalf("partition 0 committed at %d with its batch at 5 not answered, want 5", c[0])
	}
	if n := h.sink.InFlight(); n != 1 {
		t.Errorf("InFlight() = %d with the slow batch alone in the plugin", n)
	}
	g.open(0, 5, 1)
	poll.Until(t, 20*time.Second, "partition 0 committed", func() bool { return committedP(t, kf, parts)[0] == per })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, p, parts, per, n)
	if s := p.Snapshot(); s.MaxRunning < 2 {
		t.Errorf("at most %d call at once: nothing ran concurrently", s.MaxRunning)
	}
	if u := h.budget.Used(); u != 0 {
		t.Errorf("budget holds %d bytes after the sink stopped", u)
	}
	if h.logged("event=max_in_flight_serialised") {
		t.Error("warned about a plugin that declares concurrent_consume")
	}
}

// With max_in_flight = 1, the spec's loop, the slow partition holds the
// block: nothing else is delivered while its batch is in the plugin.
func TestInFlightOneHoldsBlock(t *testing.T) {
	const parts, per = 2, 10
	var g gates
	g.hold(0, 0, 1)
	p := &fakeplugin.Plugin{Decide: g.decide}
	kf := partitioned(t, parts, per)
	h := newHarness(t, kf, inFlightBlock(1), fake(p))
	h.start()
	if !running(p, 0, 0, 1) {
		t.Fatal("partition 0's first batch never reached the plugin")
	}
	time.Sleep(500 * time.Millisecond)
	if s := p.Snapshot(); len(s.Calls) != 0 || s.Started != 1 {
		t.Fatalf("%d calls answered, %d begun while the first was held", len(s.Calls), s.Started)
	}
	g.open(0, 0, 1)
	poll.Until(t, 20*time.Second, "everything committed", func() bool {
		c := committedP(t, kf, parts)
		return c[0] == per && c[1] == per
	})
	checkOrder(t, p, parts, per, 1)
}

// The plugin does not declare concurrent_consume: max_in_flight > 1 is
// said at start, and still correct.
func TestInFlightWarnsSerialised(t *testing.T) {
	p := &fakeplugin.Plugin{}
	kf := partitioned(t, 2, 5)
	h := newHarness(t, kf, inFlightBlock(2), fake(p))
	h.start()
	poll.Until(t, 20*time.Second, "everything committed", func() bool {
		c := committedP(t, kf, 2)
		return c[0] == 5 && c[1] == 5
	})
	if !h.logged("event=max_in_flight_serialised block=1 max_in_flight=2") {
		t.Error("no warning for a plugin without concurrent_consume")
	}
}

// A RETRY of one partition does not stop the others: its second attempt
// is held while every other partition is delivered and committed; then it
// lands, committed once.
func TestInFlightRetryOthersProgress(t *testing.T) {
	const parts, per, n = 3, 10, 3
	var g gates
	g.hold(1, 0, 2)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		if b.Partition == 1 && b.Attempt == 1 && b.Records[0].Offset == 0 {
			return fakeplugin.Retry("not yet")
		}
		return fakeplugin.Result{Gate: g.of(b)}
	}}
	kf := partitioned(t, parts, per)
	h := newHarness(t, kf, inFlightBlock(n), fake(p))
	h.start()
	if !running(p, 1, 0, 2) {
		t.Fatal("partition 1's second attempt never reached the plugin")
	}
	poll.Until(t, 20*time.Second, "the others committed", func() bool {
		c := committedP(t, kf, parts)
		return c[0] == per && c[2] == per
	})
	if c := committedP(t, kf, parts); c[1] != -1 {
		t.Fatalf("partition 1 committed at %d before its batch's OK", c[1])
	}
	g.open(1, 0, 2)
	poll.Until(t, 20*time.Second, "partition 1 committed", func() bool { return committedP(t, kf, parts)[1] == per })
	checkOrder(t, p, parts, per, n)
	if got := h.backoff.get(); !slices.Equal(got, []int{1}) {
		t.Errorf("backoff after attempts %v, want [1]", got)
	}
}

// FATAL of one partition while two others are in flight: those finish and
// are committed, with what their partitions buffered after them; the
// failed partition is not committed, and Run says why.
func TestInFlightFatalWithOthersInFlight(t *testing.T) {
	const parts, per, n = 3, 10, 3
	var g gates
	g.hold(0, 0, 1)
	g.hold(1, 0, 1)
	g.hold(2, 0, 1)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		r := fakeplugin.Result{Gate: g.of(b)}
		if b.Partition == 0 {
			r.Code, r.Message = hostclient.StatusFatal, "no"
		}
		return r
	}}
	kf := partitioned(t, parts, per)
	h := newHarness(t, kf, inFlightBlock(n), fake(p))
	h.budget = pipeline.NewBudget(0)
	h.start()
	// The three in the plugin, then partition 0's answer.
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return s.Running() == 3 }) {
		t.Fatal("the three partitions' batches never were in the plugin at once")
	}
	g.open(0, 0, 1)
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return len(s.Calls) == 1 && s.Running() == 2 }) {
		t.Fatalf("want partition 0's FATAL with 1 and 2 in flight; calls %+v", p.Calls())
	}
	time.Sleep(200 * time.Millisecond) // the loop saw the FATAL
	if c := committedP(t, kf, parts); c[1] != -1 || c[2] != -1 {
		t.Fatalf("committed %v before the batches in flight answered", c)
	}
	g.open(1, 0, 1)
	g.open(2, 0, 1)
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Partition != 0 || se.Outcome != pipeline.Fatal {
		t.Fatalf("Run = %v, want a stop on partition 0", err)
	}
	if c := committedP(t, kf, parts); !slices.Equal(c, []int64{-1, per, per}) {
		t.Errorf("committed %v, want [-1 %d %d]", c, per, per)
	}
	if u := h.budget.Used(); u != 0 {
		t.Errorf("budget holds %d bytes after the stop", u)
	}
}

// The host dies during partition 0's batch while partition 1's is in
// flight: the block waits for partition 1's (committed: it answered OK),
// then rewinds; partition 0's batch comes back as attempt 2, nothing is
// committed past it before that, and nothing is lost.
func TestInFlightHostDeathRewinds(t *testing.T) {
	const parts, per, n = 2, 10, 2
	var g gates
	g.hold(0, 0, 1)
	g.hold(1, 0, 1)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		r := fakeplugin.Result{Gate: g.of(b)}
		if b.Partition == 0 && b.Attempt == 1 && b.Records[0].Offset == 0 {
			r.Exit = true
		}
		return r
	}}
	kf := partitioned(t, parts, per)
	h := newHarness(t, kf, inFlightBlock(n), fake(p))
	h.start()
	// Both in the plugin, then partition 0's host dies.
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return s.Running() == 2 }) {
		t.Fatal("both partitions' batches never were in the plugin at once")
	}
	g.open(0, 0, 1)
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return len(s.Calls) == 1 && s.Running() == 1 }) {
		t.Fatalf("want partition 0's death with 1 in flight; calls %+v", p.Calls())
	}
	time.Sleep(300 * time.Millisecond) // past the backoff
	if s := p.Snapshot(); s.Started != 2 {
		t.Fatalf("%d calls began before the batch in flight answered: the rewind did not wait", s.Started)
	}
	if c := committedP(t, kf, parts); !slices.Equal(c, []int64{-1, -1}) {
		t.Fatalf("committed %v with no batch answered OK", c)
	}
	g.open(1, 0, 1)
	poll.Until(t, 20*time.Second, "everything committed", func() bool {
		c := committedP(t, kf, parts)
		return c[0] == per && c[1] == per
	})
	calls := p.Calls()
	var first []string
	for _, c := range calls {
		first = append(first, gateKey(c.Batch.Partition, c.Batch.Records[0].Offset, c.Batch.Attempt))
	}
	// Partition 1's batch at 0 was committed before the rewind: it is not
	// delivered again.
	if !slices.Contains(first, "0@0#2") || slices.Contains(first, "1@0#2") || slices.Index(first, "1@0#1") > slices.Index(first, "0@0#2") {
		t.Errorf("calls %v: want 0@0#2 after 1@0#1 landed, and 1@0 once", first)
	}
	checkOrder(t, p, parts, per, n)
	if !h.logged("event=rewind") {
		t.Error("no rewind logged")
	}
}

// Shutdown with batches in flight: they finish (not cancelled), the rest
// of every bucket is flushed, and everything is committed once.
func TestInFlightShutdown(t *testing.T) {
	const parts, per, n = 3, 8, 3
	var g gates
	g.hold(0, 0, 1)
	g.hold(1, 0, 1)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: g.decide}
	kf := partitioned(t, parts, per)
	blocks := "[[topics]]\ntopics = [\"p\"]\nschema = \"json\"\nbatch_length = 5\npoll_interval = \"1h\"\nmax_in_flight = 3\n"
	h := newHarness(t, kf, blocks, fake(p))
	h.budget = pipeline.NewBudget(0)
	h.start()
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return len(s.Calls) == 1 && s.Running() == 2 }) {
		t.Fatalf("want 0 and 1 in flight, 2 delivered; calls %+v", p.Calls())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	time.Sleep(300 * time.Millisecond)
	g.open(0, 0, 1)
	g.open(1, 0, 1)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if c := committedP(t, kf, parts); !slices.Equal(c, []int64{per, per, per}) {
		t.Errorf("committed %v after shutdown, want %d each", c, per)
	}
	for _, c := range p.Calls() {
		if c.Err != nil {
			t.Errorf("call for %d@%d: %v", c.Batch.Partition, c.Batch.Records[0].Offset, c.Err)
		}
	}
	checkOrder(t, p, parts, per, n)
	if u := h.budget.Used(); u != 0 {
		t.Errorf("budget holds %d bytes after shutdown", u)
	}
}

// A second member joins while a batch of the partition it takes is in
// flight: the revocation waits for it and commits it before the partition
// goes, so the new owner starts after it; every record once.
func TestInFlightRevokedWaits(t *testing.T) {
	const parts, per = 2, 10
	var g gates
	g.hold(0, 0, 1)
	g.hold(1, 0, 1)
	pa := &fakeplugin.Plugin{Concurrent: true, Decide: g.decide}
	kf := partitioned(t, parts, per)
	blocks := "[[topics]]\ntopics = [\"p\"]\nschema = \"json\"\nbatch_length = 5\npoll_interval = \"100ms\"\nmax_in_flight = 2\n"
	a := newHarness(t, kf, blocks, fake(pa))
	a.start()
	if !pa.Wait(10*time.Second, func(s fakeplugin.State) bool { return s.Running() == 2 }) {
		t.Fatal("both partitions' first batches never reached the plugin")
	}
	b := newHarness(t, kf, blocks, fake(&fakeplugin.Plugin{Concurrent: true}))
	b.start()
	poll.Until(t, 30*time.Second, "the revocation to wait", func() bool { return a.logged("event=revoke_wait") })
	time.Sleep(300 * time.Millisecond)
	if n := len(b.lines()); n != 0 {
		t.Fatalf("the new member delivered %d batches while the old one's was in flight", n)
	}
	g.open(0, 0, 1)
	g.open(1, 0, 1)
	poll.Until(t, 30*time.Second, "everything committed", func() bool {
		c := committedP(t, kf, parts)
		return c[0] == per && c[1] == per
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	checkDeliveredOnce(t, parts, per, a, b)
}

// The loop keeps polling while a slow partition's batch is in the plugin,
// but its bucket does not grow without bound: once it holds a full batch
// behind the one in flight the partition is not fetched, until it drains.
func TestInFlightSlowPartitionBounded(t *testing.T) {
	const per = 300
	var g gates
	g.hold(0, 0, 1)
	p := &fakeplugin.Plugin{Concurrent: true, Decide: g.decide}
	kf := partitioned(t, 2, per)
	h := newHarness(t, kf, inFlightBlock(2), fake(p))
	h.budget = pipeline.NewBudget(0)
	h.start()
	poll.Until(t, 20*time.Second, "partition 1 committed", func() bool { return committedP(t, kf, 2)[1] == per })
	time.Sleep(500 * time.Millisecond) // polls go on meanwhile
	// Each record is {"n":<i>}: at most 10 bytes. Per partition: in
	// flight 5, a full batch behind it, and what one poll brought before
	// the pause (without the pause: measured over 5000 bytes).
	if peak, limit := h.budget.Peak(), int64(2*3*5*10); peak > limit {
		t.Errorf("peak buffered %d bytes, more than the %d of three batches per partition: the slow partition's bucket grew", peak, limit)
	}
	g.open(0, 0, 1)
	poll.Until(t, 20*time.Second, "partition 0 committed", func() bool { return committedP(t, kf, 2)[0] == per })
	checkOrder(t, p, 2, per, 2)
}

// errors_tolerance = "all" with batches in flight: every partition's
// rejected records reach the dead-letter topic, acknowledged before their
// batch is committed; the good ones are written once each.
func TestInFlightDeadLetters(t *testing.T) {
	const parts, per, n = 4, 20, 4
	p := rejecting(`{"n":1`) // offsets 1 and 10 to 19 of each partition
	p.Concurrent = true
	kf := partitioned(t, parts, per)
	blocks := inFlightBlock(n) + "errors_tolerance = \"all\"\n"
	h := newHarness(t, kf, blocks, fake(p))
	h.start()
	poll.Until(t, 20*time.Second, "everything committed", func() bool {
		return slices.Equal(committedP(t, kf, parts), []int64{per, per, per, per})
	})
	dlq := map[string]int{}
	for _, r := range readTopic(t, kf.ListenAddrs(), "p.dlq", parts*11) {
		dlq[header(r, metadata.DeadLetterPartition)+"@"+header(r, metadata.DeadLetterOffset)]++
	}
	written := map[uint32][]uint64{}
	for _, b := range p.Written() {
		for _, r := range b.Records {
			written[b.Partition] = append(written[b.Partition], r.Offset)
		}
	}
	for part := range parts {
		if want := []uint64{0, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(written[uint32(part)], want) {
			t.Errorf("partition %d written %v, want %v", part, written[uint32(part)], want)
		}
		for _, o := range []int{1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19} {
			if k := fmt.Sprintf("%d@%d", part, o); dlq[k] != 1 {
				t.Errorf("dead letter %s produced %d times", k, dlq[k])
			}
		}
	}
	if s := p.Snapshot(); s.Overlaps != 0 || s.MaxRunning > n {
		t.Errorf("%d overlapping calls of a partition, %d at once", s.Overlaps, s.MaxRunning)
	}
}

// checkDeliveredOnce fails unless the harnesses' plugins, together, were
// delivered every record of partitions 0..parts-1 of "p", offsets
// 0..per-1, exactly once (a partition that moved between them included).
func checkDeliveredOnce(t *testing.T, parts, per int, hs ...*harness) {
	t.Helper()
	count := map[string]int{}
	for _, h := range hs {
		for _, l := range h.lines() {
			for _, r := range l.Records {
				count[fmt.Sprintf("%d@%d", l.Partition, r.Offset)]++
			}
		}
	}
	for part := range parts {
		for o := range per {
			if k := fmt.Sprintf("%d@%d", part, o); count[k] != 1 {
				t.Errorf("%s delivered %d times", k, count[k])
			}
		}
	}
}

package redshift

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// take hands out ready batches in arrival order within the bounds, at
// least one, and never lets a later batch overtake one that did not fit.
func TestLoadQueueTake(t *testing.T) {
	ready := func(records int, bytes int64) *member { return &member{ready: true, records: records, bytes: bytes} }
	preparing := &member{records: 1}
	big := ready(groupMaxRecords+1, 1)
	a, b, c := ready(10, 1), ready(groupMaxRecords-10, 1), ready(1, 1)
	q := &loadQueue{waiting: []*member{a, preparing, b, c}}
	if g := q.take(); len(g) != 2 || g[0] != a || g[1] != b || !a.taken || !b.taken {
		t.Fatalf("first group %v", g)
	}
	if len(q.waiting) != 2 || q.waiting[0] != preparing || q.waiting[1] != c {
		t.Fatalf("left waiting %v", q.waiting)
	}
	q = &loadQueue{waiting: []*member{big, c}}
	if g := q.take(); len(g) != 1 || g[0] != big {
		t.Fatalf("a batch over the bound alone: %v", g)
	}
	q = &loadQueue{waiting: []*member{ready(1, groupMaxBytes), ready(1, 1), ready(1, 1)}}
	if g := q.take(); len(g) != 1 {
		t.Fatalf("byte bound: %d batches", len(g))
	}
	// The one that did not fit blocks the ones after it.
	if g := q.take(); len(g) != 2 {
		t.Fatalf("after the byte bound: %d batches", len(g))
	}
	many := &loadQueue{}
	for range groupMaxBatches + 5 {
		many.waiting = append(many.waiting, ready(1, 1))
	}
	if g := many.take(); len(g) != groupMaxBatches || len(many.waiting) != 5 {
		t.Fatalf("batch bound: %d taken, %d left", len(g), len(many.waiting))
	}
}

// attribute gives each staged duplicate to the batch of its topic,
// partition and offset range, and to no batch when none has it.
func TestAttribute(t *testing.T) {
	g := []*member{
		{topic: "orders", partition: 0, first: 10, last: 19, records: 10},
		{topic: "orders", partition: 1, first: 10, last: 19, records: 10},
		{topic: "a:b", partition: 4000000000, first: 0, last: 4, records: 5},
	}
	out := []*memberRes{{}, {}, {}}
	attribute(g, out, []string{"orders:0:10", "orders:0:19", "orders:1:15", "orders:1:20", "other:0:10",
		"a:b:4000000000:3", "garbage", "orders:x:1"})
	if out[0].skipped != 2 || out[1].skipped != 1 || out[2].skipped != 1 {
		t.Fatalf("skipped %d %d %d", out[0].skipped, out[1].skipped, out[2].skipped)
	}
}

// A grouped load that panics (here: a Sink with no database or store)
// still answers every member, RETRY, and frees the table for the next load:
// without that the members would wait until close and every later batch of
// the table would queue behind a load that never ends.
func TestGroupLoadThatPanicsAnswersEveryMember(t *testing.T) {
	s := &Sink{}
	tb := &table{name: "orders"}
	tb.queue.running = true
	g := []*member{
		{files: []upload{{key: "a"}}, wake: make(chan struct{}, 1)},
		{files: []upload{{key: "b"}}, wake: make(chan struct{}, 1)},
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the load did not panic")
			}
		}()
		s.runGroup(context.Background(), tb, g)
	}()
	for i, m := range g {
		if m.res == nil || sdk.StatusOf(m.res.err) != sdk.StatusRetry || !strings.Contains(m.res.err.Error(), "may have committed") {
			t.Errorf("member %d: answer %+v, want RETRY saying it may have committed", i, m.res)
		}
	}
	if tb.queue.running {
		t.Error("the table stays taken by the load that panicked")
	}
}

// gather waits for the batches that joined to be uploaded, and no longer;
// a batch that never gets ready holds it gatherMax at most (gatherMin
// before any grouped load).
func TestGatherWaitsForJoinedUploads(t *testing.T) {
	late := &member{}
	q := &loadQueue{waiting: []*member{{ready: true}, late}, lastArrival: time.Now()}
	go func() {
		time.Sleep(30 * time.Millisecond)
		q.mu.Lock()
		late.ready = true
		q.mu.Unlock()
	}()
	start := time.Now()
	q.gather(context.Background())
	if d := time.Since(start); d < 30*time.Millisecond || d >= gatherMin {
		t.Fatalf("gather returned after %v: want when the late upload ended", d)
	}
	if g := q.take(); len(g) != 2 {
		t.Fatalf("the group after gathering has %d batches, want 2", len(g))
	}

	q = &loadQueue{waiting: []*member{{}}, lastArrival: time.Now()}
	start = time.Now()
	q.gather(context.Background())
	if d := time.Since(start); d < gatherMin || d > 2*gatherMin {
		t.Fatalf("gather returned after %v with a batch still uploading: want gatherMin", d)
	}
}

// After a grouped load of 1 s, a gather waits up to half of it for a batch
// still uploading: one that is not uploaded in a fixed 200 ms would miss
// the load and wait a whole one more (40 batches uploading at once on a
// busy machine, tools/rsbench steady mode).
func TestGatherWaitsUpToHalfTheLastLoad(t *testing.T) {
	late := &member{}
	q := &loadQueue{waiting: []*member{{ready: true}, late}, lastArrival: time.Now(), lastTook: time.Second}
	go func() {
		time.Sleep(gatherMin + 100*time.Millisecond)
		q.mu.Lock()
		late.ready = true
		q.mu.Unlock()
	}()
	start := time.Now()
	q.gather(context.Background())
	if d := time.Since(start); d < gatherMin+100*time.Millisecond || d >= 500*time.Millisecond {
		t.Fatalf("gather returned after %v: want when the late upload ended", d)
	}
	if g := q.take(); len(g) != 2 {
		t.Fatalf("the group after gathering has %d batches, want 2", len(g))
	}
	q = &loadQueue{lastTook: time.Hour}
	if got := q.gatherMax(); got != gatherCap {
		t.Fatalf("gatherMax after a load of an hour: %v, want %v", got, gatherCap)
	}
}

// A call that leads the next group (gather) and panics while preparing its
// files (here: a Sink with no encoders) frees the table and leaves the
// queue: without that every later batch of the table would queue behind a
// leader that never loads, and each gather would wait for its upload.
func TestGatherLeaderThatPanicsFreesTheTable(t *testing.T) {
	s := &Sink{}
	tb := &table{name: "orders"}
	tb.queue.lastLoad = 2 // batches arrive together: this call gathers
	b := &sdk.Batch{Topic: "orders", Records: []sdk.Record{{Offset: 7, Payload: []byte(`{}`)}}}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("prepare did not panic")
			}
		}()
		_ = s.load(context.Background(), tb, b, []rsparquet.Record{{Offset: 7, Payload: []byte(`{}`)}}, "")
	}()
	if tb.queue.running {
		t.Error("the table stays taken by the leader that panicked")
	}
	if len(tb.queue.waiting) != 0 {
		t.Errorf("%d batches left waiting", len(tb.queue.waiting))
	}
}

// After a grouped load, a gather waits for as many batches as that load
// answered partitions, however long the quiet gap before them: on a busy
// machine the answered calls come back over 100 ms and more, and a quiet
// window alone left the batches behind such a gap out of the load. A
// batch of another partition counts (a runtime gives a freed slot to any
// partition); one queued before the load ended does not.
func TestGatherWaitsForTheAnsweredPartitions(t *testing.T) {
	q := &loadQueue{lastTook: time.Second}
	queued := &member{topic: "orders", partition: 1, ready: true}
	q.join(queued)
	q.expectReturns([]*member{{topic: "orders", partition: 0}, {topic: "orders", partition: 1}, {topic: "orders", partition: 0}}, time.Second, true)
	if q.returning != 2 {
		t.Fatalf("waits for %d batches, want 2 (one per partition answered)", q.returning)
	}
	go func() {
		for _, p := range []uint64{1, 7} {
			time.Sleep(100 * time.Millisecond)
			q.mu.Lock()
			q.join(&member{topic: "orders", partition: p, ready: true})
			q.mu.Unlock()
		}
	}()
	start := time.Now()
	q.gather(context.Background())
	if d := time.Since(start); d < 200*time.Millisecond || d >= 450*time.Millisecond {
		t.Fatalf("gather returned after %v: want when the second batch joined", d)
	}
	if g := q.take(); len(g) != 3 {
		t.Fatalf("the group after gathering has %d batches, want 3", len(g))
	}

	// A load that failed: its batches come back only after the runtime's
	// backoff; nothing to wait for.
	q.expectReturns([]*member{{topic: "orders", partition: 0}}, time.Second, false)
	if q.returning != 0 {
		t.Fatalf("waits for %d batches after a failed load", q.returning)
	}
}

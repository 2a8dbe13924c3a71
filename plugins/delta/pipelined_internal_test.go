package delta

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Pipelined batches (group.go): a partition's batches that follow one
// another are written in one commit, after one another, or not at all.

// chain makes each batch follow the one before it, as the SDK's sequencer
// does (Self, Pred), and returns the functions that answer each one's
// Pending.
func chain(batches ...*sdk.Batch) []func(ok bool) {
	answers := make([]func(bool), len(batches))
	for i, b := range batches {
		b.Self, answers[i] = sdk.NewPending(b)
		b.RangeLast = b.LastOffset()
		if i > 0 {
			b.Pred = batches[i-1].Self
		}
	}
	return answers
}

// pipe is a batch in flight: its write's answer once done.
type pipe struct {
	done chan struct{}
	err  error
}

// consume writes b as Sink.Consume would and then answers its Pending as
// the SDK does once Consume returned (answer may be nil: no Pending).
func consume(ctx context.Context, tb *table, b *sdk.Batch, app string, answer func(bool)) *pipe {
	p := &pipe{done: make(chan struct{})}
	go func() {
		p.err = tb.write(ctx, b, app)
		if answer != nil {
			answer(p.err == nil)
		}
		close(p.done)
	}()
	return p
}

func (p *pipe) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(20 * time.Second):
		t.Fatal("the write did not return")
		return nil
	}
}

func waiting(tb *table) int {
	tb.queue.mu.Lock()
	defer tb.queue.mu.Unlock()
	return len(tb.queue.waiting)
}

// queueBehind writes blocker (held at the gate until the others wait in
// the queue, in the order given) and then the others, and returns the
// pipes: blocker's first.
func queueBehind(t *testing.T, tb *table, store *gatedStore, blocker *sdk.Batch, batches []*sdk.Batch, apps []string, answers map[*sdk.Batch]func(bool)) []*pipe {
	t.Helper()
	pipes := []*pipe{consume(context.Background(), tb, blocker, appOf(9), nil)}
	<-store.entered
	for i, b := range batches {
		pipes = append(pipes, consume(context.Background(), tb, b, apps[i], answers[b]))
		waitUntil(t, "the batch to queue", func() bool { return waiting(tb) == i+1 })
	}
	close(store.gate)
	return pipes
}

func answersOf(batches []*sdk.Batch, fns []func(bool)) map[*sdk.Batch]func(bool) {
	m := map[*sdk.Batch]func(bool){}
	for i, b := range batches {
		m[b] = fns[i]
	}
	return m
}

// wantIDs checks, with delta-rs, that the table holds each of want's ids
// once.
func wantIDs(t *testing.T, tb *table, want ...[2]int) {
	t.Helper()
	var ids []string
	for _, r := range want {
		for id := r[0]; id <= r[1]; id++ {
			ids = append(ids, fmt.Sprint(id))
		}
	}
	deltatest.WantIDs(t, tb.uri, strings.Join(ids, ","))
}

// A chain P -> B -> C of one partition that queued behind a commit, C
// first, is one commit with one txn for the partition, at C's last offset,
// every record once; an independent partition joins it.
func TestPipelinedChainIsOneCommit(t *testing.T) {
	tb, store, stats := groupTable(t)
	p, b, c := idBatch(0, 0, 3), idBatch(0, 3, 3), idBatch(0, 6, 3)
	answers := answersOf([]*sdk.Batch{p, b, c}, chain(p, b, c))
	x := idBatch(1, 0, 3)
	pipes := queueBehind(t, tb, store, idBatch(9, 0, 2), []*sdk.Batch{c, b, p, x},
		[]string{appOf(0), appOf(0), appOf(0), appOf(1)}, answers)
	for i, pp := range pipes {
		if err := pp.wait(t); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	got := txnsOf(t, tb)
	want := [][]string{{"app/9@1"}, {"app/0@8", "app/1@2"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("txn actions by version %v, want %v", got, want)
	}
	if c, b := stats.commits.Load(), stats.commitBatches.Load(); c != 2 || b != 5 {
		t.Errorf("commits %d holding %d batches, want 2 holding 5", c, b)
	}
	wantIDs(t, tb, [2]int{0, 8}, [2]int{1000, 1002}, [2]int{9000, 9001})
}

// A chain's rejections are recorded under the partition's one entry, so a
// replay of any of its batches finds its own.
func TestPipelinedChainRecordsEveryBatchsRejections(t *testing.T) {
	tb, store, _ := groupTable(t)
	p, b := idBatch(0, 0, 4), idBatch(0, 4, 4)
	p.Records[1].Payload = []byte(`{"id":"x"}`)
	b.Records[2].Payload = []byte(`{"id":"y"}`)
	p.AcceptRejections()
	b.AcceptRejections()
	answers := answersOf([]*sdk.Batch{p, b}, chain(p, b))
	for i, pp := range queueBehind(t, tb, store, idBatch(9, 0, 1), []*sdk.Batch{p, b}, []string{appOf(0), appOf(0)}, answers) {
		if err := pp.wait(t); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	c, err := deltalog.ReadCommit(context.Background(), tb.store, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Actions {
		if ci, ok := a.(*deltalog.CommitInfo); ok {
			if got := string(ci.Other[rejectedByAppKey]); got != `{"app/0":{"value":[1,6]}}` {
				t.Errorf("commitInfo.%s = %s", rejectedByAppKey, got)
			}
		}
	}
	// B's replay, alone, finds its rejection.
	replay := idBatch(0, 4, 4)
	replay.Attempt = 2
	replay.AcceptRejections()
	if err := tb.write(context.Background(), replay, appOf(0)); err != nil {
		t.Fatal(err)
	}
	if r := replay.Rejections(); len(r) != 1 || r[0].Index != 2 {
		t.Errorf("the replay rejects %v, want index 2", r)
	}
}

// A predecessor that cannot be written (FATAL) drops the batches that
// follow it, transitively: RETRY, not written. An independent member of
// the group lands.
func TestPipelinedFatalDropsFollowers(t *testing.T) {
	tb, store, _ := groupTable(t)
	p, b, c := idBatch(0, 0, 3), idBatch(0, 3, 3), idBatch(0, 6, 3)
	p.Records[1].Payload = []byte(`{"id":"not a number"}`)
	answers := answersOf([]*sdk.Batch{p, b, c}, chain(p, b, c))
	x := idBatch(1, 0, 3)
	pipes := queueBehind(t, tb, store, idBatch(9, 0, 2), []*sdk.Batch{p, b, c, x},
		[]string{appOf(0), appOf(0), appOf(0), appOf(1)}, answers)
	want := []sdk.Status{sdk.StatusOK, sdk.StatusFatal, sdk.StatusRetry, sdk.StatusRetry, sdk.StatusOK}
	for i, pp := range pipes {
		err := pp.wait(t)
		if s := sdk.StatusOf(err); s != want[i] {
			t.Errorf("batch %d: %v (%v), want %v", i, s, err, want[i])
		}
		if want[i] == sdk.StatusRetry && !strings.Contains(fmt.Sprint(err), "was not written, so this one is not either") {
			t.Errorf("batch %d: %v, want the predecessor named", i, err)
		}
	}
	got := txnsOf(t, tb)
	if w := [][]string{{"app/9@1"}, {"app/1@2"}}; fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("txn actions by version %v, want %v", got, w)
	}
	wantIDs(t, tb, [2]int{1000, 1002}, [2]int{9000, 9001})
}

// A group with a chain that loses the race for its version is re-based
// once as a whole: after a blind winner the chain lands at the next
// version; after a winner that committed P's txn, P is skipped and B
// lands, each record once.
func TestPipelinedGroupLosingARaceIsRebased(t *testing.T) {
	for _, covers := range []bool{false, true} {
		t.Run(fmt.Sprintf("winner covers P=%v", covers), func(t *testing.T) {
			tb, store, stats := groupTable(t)
			store.n = 2 // the group's put
			store.before = func(string) {
				snap, err := deltalog.Load(context.Background(), store.Local, nil)
				if err != nil {
					t.Error(err)
					return
				}
				c := deltalog.AppendCommit{Files: []deltalog.DataFile{{Path: "other.parquet", Size: 1, Stats: `{"numRecords":0}`}}}
				if covers {
					c = deltalog.AppendCommit{AppID: appOf(0), AppVersion: 4}
				}
				pc, err := deltalog.PrepareAppend(snap, c)
				if err == nil {
					err = store.Local.PutIfAbsent(context.Background(), pc.Path, pc.Data)
				}
				if err != nil {
					t.Error(err)
				}
			}
			p, b := idBatch(0, 0, 5), idBatch(0, 5, 5)
			answers := answersOf([]*sdk.Batch{p, b}, chain(p, b))
			x := idBatch(1, 0, 5)
			for i, pp := range queueBehind(t, tb, store, idBatch(9, 0, 2), []*sdk.Batch{b, p, x}, []string{appOf(0), appOf(0), appOf(1)}, answers) {
				if err := pp.wait(t); err != nil {
					t.Errorf("batch %d: %v", i, err)
				}
			}
			got := txnsOf(t, tb)
			want := [][]string{{"app/9@1"}, nil, {"app/0@9", "app/1@4"}}
			if covers {
				want = [][]string{{"app/9@1"}, {"app/0@4"}, {"app/0@9", "app/1@4"}}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("txn actions by version %v, want %v", got, want)
			}
			if n := stats.conflicts.Load(); n != 1 {
				t.Errorf("commit_conflicts %d, want 1 for the group", n)
			}
			if covers {
				// The winner's commit has P's txn and no rows.
				wantIDs(t, tb, [2]int{5, 9}, [2]int{1000, 1004}, [2]int{9000, 9001})
			} else if n := rowsOf(t, tb); n != 17 {
				// delta-rs cannot read the blind winner's made-up file.
				t.Errorf("%d rows, want 17", n)
			}
		})
	}
}

// A follower that reaches an idle queue before its predecessor is never
// written first: it waits, and is written in its predecessor's commit when
// that comes, answered RETRY unwritten when that fails elsewhere, or
// leaves when its call is cancelled.
func TestPipelinedFollowerBeforeItsPredecessorWaits(t *testing.T) {
	// settled waits until the queue is idle with the follower in it and
	// checks nothing was committed.
	settled := func(t *testing.T, tb *table, f *pipe) {
		t.Helper()
		waitUntil(t, "the follower to queue", func() bool { return waiting(tb) == 1 })
		time.Sleep(50 * time.Millisecond)
		select {
		case <-f.done:
			t.Fatalf("the follower was answered before its predecessor: %v", f.err)
		default:
		}
		if got := txnsOf(t, tb); len(got) != 0 {
			t.Fatalf("commits %v before the predecessor came", got)
		}
	}
	t.Run("predecessor comes", func(t *testing.T) {
		tb, store, _ := groupTable(t)
		close(store.gate)
		p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
		ans := chain(p, b)
		fb := consume(context.Background(), tb, b, appOf(0), ans[1])
		settled(t, tb, fb)
		fp := consume(context.Background(), tb, p, appOf(0), ans[0])
		if err := fp.wait(t); err != nil {
			t.Fatal(err)
		}
		if err := fb.wait(t); err != nil {
			t.Fatal(err)
		}
		if got := txnsOf(t, tb); fmt.Sprint(got) != "[[app/0@5]]" {
			t.Errorf("txn actions by version %v, want one commit at 5", got)
		}
		wantIDs(t, tb, [2]int{0, 5})
	})
	t.Run("predecessor fails elsewhere", func(t *testing.T) {
		tb, store, _ := groupTable(t)
		close(store.gate)
		p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
		ans := chain(p, b)
		fb := consume(context.Background(), tb, b, appOf(0), ans[1])
		settled(t, tb, fb)
		ans[0](false) // e.g. P's table could not be opened
		err := fb.wait(t)
		if sdk.StatusOf(err) != sdk.StatusRetry || !strings.Contains(err.Error(), "was not written") {
			t.Errorf("follower: %v, want RETRY unwritten", err)
		}
		if got := txnsOf(t, tb); len(got) != 0 {
			t.Errorf("commits %v", got)
		}
	})
	t.Run("predecessor answered OK elsewhere", func(t *testing.T) {
		tb, store, _ := groupTable(t)
		close(store.gate)
		p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
		ans := chain(p, b)
		fb := consume(context.Background(), tb, b, appOf(0), ans[1])
		settled(t, tb, fb)
		ans[0](true)
		if err := fb.wait(t); err != nil {
			t.Fatal(err)
		}
		if got := txnsOf(t, tb); fmt.Sprint(got) != "[[app/0@5]]" {
			t.Errorf("txn actions by version %v", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		tb, store, _ := groupTable(t)
		close(store.gate)
		p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
		ans := chain(p, b)
		ctx, cancel := context.WithCancel(context.Background())
		fb := consume(ctx, tb, b, appOf(0), ans[1])
		settled(t, tb, fb)
		cancel()
		if err := fb.wait(t); sdk.StatusOf(err) != sdk.StatusRetry {
			t.Errorf("follower: %v, want RETRY", err)
		}
		if waiting(tb) != 0 {
			t.Error("the cancelled follower is still queued")
		}
	})
}

// A follower that queues while its predecessor's commit is being written
// is written after it, in a commit of its own, once the predecessor was
// answered OK.
func TestPipelinedFollowerOfACommitInFlight(t *testing.T) {
	tb, store, _ := groupTable(t)
	p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
	ans := chain(p, b)
	fp := consume(context.Background(), tb, p, appOf(0), ans[0])
	<-store.entered
	fb := consume(context.Background(), tb, b, appOf(0), ans[1])
	waitUntil(t, "the follower to queue", func() bool { return waiting(tb) == 1 })
	close(store.gate)
	for _, f := range []*pipe{fp, fb} {
		if err := f.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if got := txnsOf(t, tb); fmt.Sprint(got) != "[[app/0@2] [app/0@5]]" {
		t.Errorf("txn actions by version %v", got)
	}
}

// Upsert mode and redrive batches do not share their predecessor's
// commit: they wait for its answer before they queue, and are not written
// when it failed.
func TestPipelinedWaitsWhenNotCoGrouped(t *testing.T) {
	for _, mode := range []string{"redrive", "upsert"} {
		t.Run(mode, func(t *testing.T) {
			tb, store, _ := groupTable(t)
			close(store.gate)
			p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
			if mode == "redrive" {
				b.Redrive = &sdk.Redrive{Topic: "dlq", Partition: 0, Offsets: []uint64{40, 41, 42}}
			} else {
				tb.env.opts.changes = &changes.Config{Format: changes.OpField, OpField: changes.DefaultOpField, KeyColumns: []string{"id"}}
			}
			ans := chain(p, b)
			fb := consume(context.Background(), tb, b, appOf(0), ans[1])
			time.Sleep(50 * time.Millisecond)
			select {
			case <-fb.done:
				t.Fatalf("the follower was answered before its predecessor: %v", fb.err)
			default:
			}
			if waiting(tb) != 0 {
				t.Fatal("the follower queued before its predecessor was answered")
			}
			ans[0](false)
			if err := fb.wait(t); sdk.StatusOf(err) != sdk.StatusRetry || !strings.Contains(err.Error(), "was not written") {
				t.Errorf("follower: %v, want RETRY unwritten", err)
			}
			if got := txnsOf(t, tb); len(got) != 0 {
				t.Errorf("commits %v", got)
			}
		})
	}
}

// Batches that disagree on a new column (schema_evolution = "add_columns")
// are written one at a time: a follower of the one at fault is not
// written, a follower of one that landed is, after it.
func TestPipelinedSplitDropsFollowersOfTheOneAtFault(t *testing.T) {
	tb, store, _ := groupTable(t)
	tb.env.opts.addColumns = true
	x := idBatch(1, 0, 1)
	x.Records[0].Payload = []byte(`{"id":1000,"extra":5}`)
	p, b := idBatch(0, 0, 1), idBatch(0, 1, 1)
	p.Records[0].Payload = []byte(`{"id":0,"extra":"text"}`)
	q, c := idBatch(2, 0, 1), idBatch(2, 1, 1)
	answers := answersOf([]*sdk.Batch{p, b, q, c}, append(chain(p, b), chain(q, c)...))
	pipes := queueBehind(t, tb, store, idBatch(9, 0, 1), []*sdk.Batch{x, p, b, q, c},
		[]string{appOf(1), appOf(0), appOf(0), appOf(2), appOf(2)}, answers)
	want := []sdk.Status{sdk.StatusOK, sdk.StatusOK, sdk.StatusFatal, sdk.StatusRetry, sdk.StatusOK, sdk.StatusOK}
	for i, pp := range pipes {
		if err := pp.wait(t); sdk.StatusOf(err) != want[i] {
			t.Errorf("batch %d: %v, want %v", i, err, want[i])
		}
	}
	wantIDs(t, tb, [2]int{1000, 1000}, [2]int{2000, 2001}, [2]int{9000, 9000})
}

// A predecessor the filter refuses (an offset no txn version holds) drops
// its follower too.
func TestPipelinedFilterErrorDropsFollowers(t *testing.T) {
	tb, store, _ := groupTable(t)
	p, b := idBatch(0, 0, 1), idBatch(0, 1, 1)
	p.Records[0].Offset = 1 << 63
	answers := answersOf([]*sdk.Batch{p, b}, chain(p, b))
	pipes := queueBehind(t, tb, store, idBatch(9, 0, 1), []*sdk.Batch{p, b}, []string{appOf(0), appOf(0)}, answers)
	want := []sdk.Status{sdk.StatusOK, sdk.StatusFatal, sdk.StatusRetry}
	for i, pp := range pipes {
		if err := pp.wait(t); sdk.StatusOf(err) != want[i] {
			t.Errorf("batch %d: %v, want %v", i, err, want[i])
		}
	}
	wantIDs(t, tb, [2]int{9000, 9000})
}

// A batch sent again while its first delivery still runs follows the same
// predecessor as that delivery: both copies must not join the
// predecessor's commit (one txn cannot deduplicate within its commit); the
// later copy goes in a group of its own and is skipped as a replay.
func TestTwoFollowersOfOneBatchNotInOneCommit(t *testing.T) {
	tb, store, _ := groupTable(t)
	p, b := idBatch(0, 0, 3), idBatch(0, 3, 3)
	fns := chain(p, b)
	again := idBatch(0, 3, 3)
	var answerAgain func(bool)
	again.Self, answerAgain = sdk.NewPending(again)
	again.RangeLast = again.LastOffset()
	again.Pred = p.Self
	answers := map[*sdk.Batch]func(bool){p: fns[0], b: fns[1], again: answerAgain}
	pipes := queueBehind(t, tb, store, idBatch(9, 0, 2), []*sdk.Batch{p, b, again},
		[]string{appOf(0), appOf(0), appOf(0)}, answers)
	for i, pp := range pipes {
		if err := pp.wait(t); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	wantIDs(t, tb, [2]int{0, 5}, [2]int{9000, 9001})
}

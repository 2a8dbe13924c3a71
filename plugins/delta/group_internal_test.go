package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// The queue alone, under -race: whatever the interleaving, one leader at a
// time, each member answered once, in a group of distinct applications
// within the bounds, and a cancelled member that was never taken leaves.
func TestQueueLeadersAndGroups(t *testing.T) {
	var q queue
	var leaders atomic.Int32
	var mu sync.Mutex
	answered := map[*member]int{}
	const callers, maxRecords = 64, 10
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two callers per application: a group must not hold both.
			b := &sdk.Batch{Topic: "t", Partition: uint32(i / 2), Records: make([]sdk.Record, 1+i%4)}
			m := &member{b: b, appID: fmt.Sprint(i / 2), wake: make(chan struct{})}
			lead, err := q.join(m)
			if err != nil {
				t.Error(err)
				return
			}
			if !lead {
				<-m.wake
				if !m.lead {
					return
				}
			}
			if n := leaders.Add(1); n != 1 {
				t.Errorf("%d leaders at once", n)
			}
			group := q.take(m, maxRecords, 1<<20)
			records, apps := 0, map[string]bool{}
			for _, g := range group {
				records += len(g.b.Records)
				if apps[g.appID] {
					t.Errorf("application %s twice in a group", g.appID)
				}
				apps[g.appID] = true
			}
			if len(group) > 1 && records > maxRecords {
				t.Errorf("group of %d records, bound %d", records, maxRecords)
			}
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			mu.Lock()
			for _, g := range group {
				answered[g]++
			}
			mu.Unlock()
			for _, g := range group {
				g.answer(nil)
			}
			leaders.Add(-1)
			q.next()
		}()
	}
	wg.Wait()
	if len(answered) != callers {
		t.Errorf("%d members answered, want %d", len(answered), callers)
	}
	for m, n := range answered {
		if n != 1 {
			t.Errorf("member %s answered %d times", m.appID, n)
		}
	}
	if q.leading || len(q.waiting) != 0 {
		t.Errorf("queue left leading=%v with %d waiting", q.leading, len(q.waiting))
	}

	// A member still waiting can leave; one taken cannot.
	lead := &member{b: &sdk.Batch{}, appID: "a", wake: make(chan struct{})}
	wait := &member{b: &sdk.Batch{}, appID: "b", wake: make(chan struct{})}
	gone := &member{b: &sdk.Batch{}, appID: "c", wake: make(chan struct{})}
	for _, m := range []*member{lead, wait, gone} {
		if _, err := q.join(m); err != nil {
			t.Fatal(err)
		}
	}
	if !q.leave(gone) || q.leave(gone) {
		t.Error("a waiting member could not leave, or left twice")
	}
	if g := q.take(lead, 10, 10); len(g) != 2 || g[1] != wait || q.leave(wait) {
		t.Errorf("group %d members; a taken member must not leave", len(g))
	}
	// Close answers RETRY to whoever waits and refuses newcomers.
	late := &member{b: &sdk.Batch{}, appID: "d", wake: make(chan struct{})}
	if _, err := q.join(late); err != nil {
		t.Fatal(err)
	}
	q.close()
	<-late.wake
	if sdk.StatusOf(late.err) != sdk.StatusRetry {
		t.Errorf("waiting member at close: %v, want RETRY", late.err)
	}
	if _, err := q.join(&member{b: &sdk.Batch{}, wake: make(chan struct{})}); sdk.StatusOf(err) != sdk.StatusRetry {
		t.Errorf("join after close: %v, want RETRY", err)
	}
}

// gatedStore holds the first commit put until the test opens the gate,
// and before a later commit put lets the test put a winner first.
type gatedStore struct {
	*objstore.Local
	entered, gate chan struct{}
	once          sync.Once
	puts          atomic.Int32
	// before, when set, runs before the commit put number n (1-based).
	n      int32
	before func(path string)
}

func (s *gatedStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if strings.HasPrefix(p, "_delta_log/") && strings.HasSuffix(p, ".json") {
		n := s.puts.Add(1)
		if n == 1 {
			s.once.Do(func() { close(s.entered) })
			<-s.gate
		}
		if n == s.n && s.before != nil {
			s.before(p)
		}
	}
	return s.Local.PutIfAbsent(ctx, p, data)
}

// groupTable is a table (version 0: id long) whose first commit waits at
// the gate, with exactly-once on.
func groupTable(t *testing.T) (*table, *gatedStore, *counters) {
	t.Helper()
	local, _ := appendTable(t, 0)
	store := &gatedStore{Local: local, entered: make(chan struct{}), gate: make(chan struct{})}
	var sp spawner
	t.Cleanup(sp.wg.Wait)
	stats := &counters{}
	env := &tableEnv{
		open:  func(context.Context, objstore.Location) (objstore.Store, error) { return store, nil },
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		spawn: sp.spawn,
		opts:  tableOptions{exactlyOnce: true, groupMaxBytes: 1 << 20},
		stats: stats, ckpt: newCheckpointStats(), requests: &objstore.Requests{},
	}
	tb := newTable(local.URI(), env)
	t.Cleanup(tb.close)
	tb.mu.Lock()
	err := tb.load(context.Background(), nil)
	tb.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return tb, store, stats
}

// idBatch is partition p's batch of offsets first..first+n-1, ids
// p*1000+offset.
func idBatch(p, first, n int) *sdk.Batch {
	b := &sdk.Batch{Topic: "t", Partition: uint32(p), Schema: sdk.SchemaJSON, Attempt: 1}
	for o := first; o < first+n; o++ {
		b.Records = append(b.Records, sdk.Record{Offset: uint64(o), Payload: []byte(fmt.Sprintf(`{"id":%d}`, p*1000+o))})
	}
	return b
}

func appOf(p int) string { return fmt.Sprintf("app/%d", p) }

// writeGrouped writes batches[0] alone (held at the gate until the others
// wait in the queue) and the others as the group behind it, and returns
// each one's answer.
func writeGrouped(t *testing.T, tb *table, store *gatedStore, batches []*sdk.Batch, apps []string) []error {
	t.Helper()
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = tb.write(context.Background(), batches[0], apps[0]) }()
	<-store.entered
	for i := 1; i < len(batches); i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = tb.write(context.Background(), batches[i], apps[i]) }()
	}
	waitUntil(t, "the group to queue", func() bool {
		tb.queue.mu.Lock()
		defer tb.queue.mu.Unlock()
		return len(tb.queue.waiting) == len(batches)-1
	})
	close(store.gate)
	wg.Wait()
	return errs
}

// txnsOf returns the txn actions of each version from 1 on, as
// "appId@version", sorted.
func txnsOf(t *testing.T, tb *table) [][]string {
	t.Helper()
	var out [][]string
	for v := int64(1); ; v++ {
		c, err := deltalog.ReadCommit(context.Background(), tb.store, v)
		if err != nil {
			return out
		}
		var txns []string
		for _, a := range c.Actions {
			if x, ok := a.(*deltalog.Txn); ok {
				txns = append(txns, fmt.Sprintf("%s@%d", x.AppID, x.Version))
			}
		}
		slices.Sort(txns) // in the order the batches queued
		out = append(out, txns)
	}
}

// rowsOf counts the rows of the table's files, from their stats.
func rowsOf(t *testing.T, tb *table) int64 {
	t.Helper()
	st, err := deltalog.LoadState(context.Background(), tb.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for f := range st.Files() {
		var stats struct{ NumRecords int64 }
		if err := json.Unmarshal([]byte(f.Stats), &stats); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		n += stats.NumRecords
	}
	return n
}

// Batches that queued while a commit ran are written as one commit with a
// txn per batch; each is answered OK.
func TestGroupIsOneCommitWithATxnPerBatch(t *testing.T) {
	tb, store, stats := groupTable(t)
	var batches []*sdk.Batch
	var apps []string
	for p := range 5 {
		batches, apps = append(batches, idBatch(p, 10, 3)), append(apps, appOf(p))
	}
	for i, err := range writeGrouped(t, tb, store, batches, apps) {
		if err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	got := txnsOf(t, tb)
	want := [][]string{{"app/0@12"}, {"app/1@12", "app/2@12", "app/3@12", "app/4@12"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("txn actions by version %v, want %v", got, want)
	}
	if n := rowsOf(t, tb); n != 15 {
		t.Errorf("%d rows, want 15", n)
	}
	if c, b, g := stats.commits.Load(), stats.commitBatches.Load(), stats.grouped.Load(); c != 2 || b != 5 || g != 1 {
		t.Errorf("commits %d, commit_batches %d, grouped_commits %d; want 2, 5, 1", c, b, g)
	}
}

// A member whose record cannot be written fails FATAL alone; the others
// land in one commit without it.
func TestGroupMemberThatCannotBeWrittenFailsAlone(t *testing.T) {
	tb, store, _ := groupTable(t)
	batches := []*sdk.Batch{idBatch(0, 0, 2), idBatch(1, 0, 2), idBatch(2, 0, 2), idBatch(3, 0, 2)}
	batches[2].Records[1].Payload = []byte(`{"id":"not a number"}`)
	errs := writeGrouped(t, tb, store, batches, []string{appOf(0), appOf(1), appOf(2), appOf(3)})
	for i, err := range errs {
		want := sdk.StatusOK
		if i == 2 {
			want = sdk.StatusFatal
		}
		if s := sdk.StatusOf(err); s != want {
			t.Errorf("batch %d: %v (%v), want %v", i, s, err, want)
		}
	}
	if !strings.Contains(fmt.Sprint(errs[2]), "offset 1") {
		t.Errorf("the failed member's message %q does not name its record", errs[2])
	}
	got := txnsOf(t, tb)
	want := [][]string{{"app/0@1"}, {"app/1@1", "app/3@1"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("txn actions by version %v, want %v", got, want)
	}
	if n := rowsOf(t, tb); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
}

// A group that loses the race for its version to another writer is put
// again at the next one (a blind winner), or re-based as a whole once (a
// winner that committed one member's transaction): the conflict is counted
// once per group, and the member the winner covered is skipped, not
// written twice.
func TestGroupLosingARaceIsRebasedOnce(t *testing.T) {
	for _, covers := range []bool{false, true} {
		t.Run(fmt.Sprintf("winner covers a member=%v", covers), func(t *testing.T) {
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
					c = deltalog.AppendCommit{AppID: appOf(2), AppVersion: 4}
				}
				pc, err := deltalog.PrepareAppend(snap, c)
				if err == nil {
					err = store.Local.PutIfAbsent(context.Background(), pc.Path, pc.Data)
				}
				if err != nil {
					t.Error(err)
				}
			}
			batches := []*sdk.Batch{idBatch(0, 0, 5), idBatch(1, 0, 5), idBatch(2, 0, 5), idBatch(3, 0, 5)}
			for i, err := range writeGrouped(t, tb, store, batches, []string{appOf(0), appOf(1), appOf(2), appOf(3)}) {
				if err != nil {
					t.Errorf("batch %d: %v", i, err)
				}
			}
			got := txnsOf(t, tb)
			want := [][]string{{"app/0@4"}, nil, {"app/1@4", "app/2@4", "app/3@4"}}
			if covers {
				want = [][]string{{"app/0@4"}, {"app/2@4"}, {"app/1@4", "app/3@4"}}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("txn actions by version %v, want %v", got, want)
			}
			if n := stats.conflicts.Load(); n != 1 {
				t.Errorf("commit_conflicts %d, want 1 for the group", n)
			}
			skipped := int64(0)
			if covers {
				skipped = 5
			}
			if s := stats.skipped.Load(); s != skipped {
				t.Errorf("records_skipped %d, want %d", s, skipped)
			}
			if n := rowsOf(t, tb); n != 20 && !covers || n != 15 && covers {
				t.Errorf("%d rows (the covering winner adds none)", n)
			}
		})
	}
}

// A group commit records each member's rejections under its own appId
// (the members' offsets are the same): a replay of any member, alone, finds
// its own rejections and no other member's.
func TestGroupRejectionsAreFoundByEachMembersReplay(t *testing.T) {
	tb, store, _ := groupTable(t)
	batch := func(p int, bad ...int) *sdk.Batch {
		b := idBatch(p, 0, 4)
		for _, i := range bad {
			b.Records[i].Payload = []byte(`{"id":"x"}`)
		}
		b.AcceptRejections()
		return b
	}
	bad := map[int][]int{0: nil, 1: {1}, 2: {1, 3}, 3: nil}
	var batches []*sdk.Batch
	var apps []string
	for p := range 4 {
		batches, apps = append(batches, batch(p, bad[p]...)), append(apps, appOf(p))
	}
	for i, err := range writeGrouped(t, tb, store, batches, apps) {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	c, err := deltalog.ReadCommit(context.Background(), tb.store, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Actions {
		if ci, ok := a.(*deltalog.CommitInfo); ok {
			if got := string(ci.Other[rejectedByAppKey]); got != `{"app/1":{"value":[1]},"app/2":{"value":[1,3]}}` {
				t.Errorf("commitInfo.%s = %s", rejectedByAppKey, got)
			}
		}
	}
	if n := rowsOf(t, tb); n != 13 {
		t.Errorf("%d rows, want 13", n)
	}
	for p := range 4 {
		// The replay fits now: only the log can say what was rejected.
		b := idBatch(p, 0, 4)
		b.Attempt = 2
		b.AcceptRejections()
		if err := tb.write(context.Background(), b, appOf(p)); err != nil {
			t.Fatalf("replay of %d: %v", p, err)
		}
		var got []int
		for _, r := range b.Rejections() {
			got = append(got, r.Index)
			if !strings.Contains(r.Err.Error(), "was rejected when Delta table") {
				t.Errorf("replay of %d: %v", p, r.Err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(bad[p]) && len(got)+len(bad[p]) > 0 {
			t.Errorf("replay of %d rejects %v, want %v", p, got, bad[p])
		}
	}
}

// group_commit_max_bytes bounds a group by its batches' payload bytes,
// the leader's batch aside: here two batches a commit.
func TestGroupIsBoundedByPayloadBytes(t *testing.T) {
	tb, store, _ := groupTable(t)
	tb.env.opts.groupMaxBytes = 70 // a batch of idBatch(p, 10, 3) is 33 bytes
	var batches []*sdk.Batch
	var apps []string
	for p := range 5 {
		batches, apps = append(batches, idBatch(p, 10, 3)), append(apps, appOf(p))
	}
	for i, err := range writeGrouped(t, tb, store, batches, apps) {
		if err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	var sizes []int
	for _, txns := range txnsOf(t, tb) {
		sizes = append(sizes, len(txns))
	}
	if fmt.Sprint(sizes) != "[1 2 2]" {
		t.Errorf("batches per commit %v, want [1 2 2]", sizes)
	}
}

func TestGroupMaxBytesMustBePositive(t *testing.T) {
	def, _ := json.Marshal(map[string]any{"key": "bad", "plugin_config": map[string]any{
		"table_uri": "file:///tmp/x", "group_commit_max_bytes": 0}})
	_, err := sdk.Open(def, (&sdktest.Logs{}).Log)
	if sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(fmt.Sprint(err), `"group_commit_max_bytes": 0 is not a positive number of bytes`) {
		t.Errorf("open: %v", err)
	}
}

// describe() tells a runtime that batches delivered at once pay
// (concurrent_consume), and that a partition's next batch may come before
// the one before it was answered (pipelined, ABI 1.5).
func TestDescribeDeclaresConcurrentAndPipelined(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"concurrent_consume", "pipelined"} {
		if d[k] != true {
			t.Errorf("describe: %s = %v, want true", k, d[k])
		}
	}
}

// gather: once a table's batches have arrived together, a leader waits
// while a burst is still arriving (one more batch during each of its quiet
// waits here) and takes it whole; a table fed one batch at a time never
// makes its leader wait.
func TestGatherWaitsForABurst(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprint("grouped=", grouped), func(t *testing.T) {
			const burst = 8
			var q queue
			q.grouped = grouped
			pauses, joined := 0, 0
			q.pause = func(d time.Duration) {
				if d != gatherQuiet {
					t.Errorf("paused %v, want %v", d, gatherQuiet)
				}
				pauses++
				if joined < burst {
					q.join(&member{b: &sdk.Batch{Records: make([]sdk.Record, 1)}, appID: fmt.Sprint(joined), wake: make(chan struct{})})
					joined++
				}
			}
			leader := &member{b: &sdk.Batch{Records: make([]sdk.Record, 1)}, appID: "lead", wake: make(chan struct{})}
			if lead, err := q.join(leader); !lead || err != nil {
				t.Fatalf("join: %v %v", lead, err)
			}
			q.gather(context.Background())
			group := q.take(leader, 1000, 1<<20)
			switch {
			case grouped && (len(group) != burst+1 || pauses != burst+1):
				t.Errorf("the leader took %d batches after %d pauses, want the burst of %d and its own after %d", len(group), pauses, burst, burst+1)
			case !grouped && pauses != 0:
				t.Errorf("a table fed one batch at a time made its leader pause %d times", pauses)
			}
		})
	}
}

// group_commit_linger: a commit due sooner than the linger after the last
// one started waits, and the batches that arrive meanwhile (here one every
// 20 ms, each of its own partition) join it: one commit instead of one
// each. Without the linger each batch commits as it comes.
func TestGroupLingerGathersBatchesArrivingApart(t *testing.T) {
	for _, linger := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("linger=", linger), func(t *testing.T) {
			tb, store, stats := groupTable(t)
			close(store.gate)
			tb.env.opts.groupLinger = linger
			if err := tb.write(context.Background(), idBatch(0, 0, 2), appOf(0)); err != nil {
				t.Fatal(err)
			}
			tb.queue.mu.Lock()
			start := tb.queue.started // the next linger counts from here
			tb.queue.mu.Unlock()
			var pipes []*pipe
			for p := 1; p <= 4; p++ {
				pipes = append(pipes, consume(context.Background(), tb, idBatch(p, 0, 2), appOf(p), nil))
				time.Sleep(20 * time.Millisecond)
			}
			for i, p := range pipes {
				if err := p.wait(t); err != nil {
					t.Errorf("batch %d: %v", i+1, err)
				}
			}
			took := time.Since(start)
			c := stats.commits.Load()
			switch {
			case linger > 0 && (c != 2 || took < linger/2):
				t.Errorf("%d commits in %v, want 2: the four batches waited for the linger and went as one", c, took)
			case linger == 0 && c < 3:
				t.Errorf("%d commits, want about 5: without a linger each batch commits as it comes", c)
			}
			if n := rowsOf(t, tb); n != 10 {
				t.Errorf("%d rows, want 10", n)
			}
		})
	}
}

// A linger the caller's context ends is cut short: the group is written.
func TestGroupLingerEndsWithTheContext(t *testing.T) {
	var q queue
	q.started = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	q.linger(ctx, time.Hour)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("linger took %v after its context ended", took)
	}
}

func TestGroupLingerIsBounded(t *testing.T) {
	for _, v := range []string{"-1s", "11s"} {
		def, _ := json.Marshal(map[string]any{"key": "bad", "plugin_config": map[string]any{
			"table_uri": "file:///tmp/x", "group_commit_linger": v}})
		_, err := sdk.Open(def, (&sdktest.Logs{}).Log)
		if sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(fmt.Sprint(err), `"group_commit_linger"`) {
			t.Errorf("open with group_commit_linger %s: %v", v, err)
		}
	}
}

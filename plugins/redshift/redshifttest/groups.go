package redshifttest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// groupLoadDelay holds every COPY under the emulator, so that batches
// delivered together find a load running and queue behind it. On a real
// cluster a COPY takes that long by itself.
const groupLoadDelay = 300 * time.Millisecond

// partitionBatches are n records of topic from offset first on each of the
// partitions 0..k-1.
func partitionBatches(topic string, k int, first uint64, n int) []sinkdriver.Batch {
	out := make([]sinkdriver.Batch, k)
	for p := range out {
		out[p] = Batch(topic, first, n)
		out[p].Partition = uint32(p)
	}
	return out
}

// slowCopies delays the next n COPYs under the emulator.
func (e *Env) slowCopies(n int) {
	if e.Emu != nil {
		e.Emu.DelayOn(`(?i)^COPY`, groupLoadDelay, n)
	}
}

// exactlyOncePartitions checks table holds exactly one row per offset in
// [from, to] of each of partitions 0..k-1 of topic, nothing else, and an
// empty staging table.
func (e *Env) exactlyOncePartitions(table, topic string, k int, from, to uint64) {
	e.t.Helper()
	ids, n := e.IDs(table)
	want := k * int(to-from+1)
	if n != want || len(ids) != want {
		e.t.Errorf("%s: %d rows with %d distinct ids, want %d of each", table, n, len(ids), want)
	}
	for p := range k {
		for off := from; off <= to; off++ {
			if id := fmt.Sprintf("%s:%d:%d", topic, p, off); !ids[id] {
				e.t.Errorf("%s: no row for %s", table, id)
			}
		}
	}
	if n := e.Count("staging_" + table); n != 0 {
		e.t.Errorf("staging_%s holds %d rows", table, n)
	}
}

// GroupedLoadsOfConcurrentPartitions: batches of K partitions delivered at
// once to one instance share load transactions (fewer COPYs and commits
// than batches), every row lands exactly once, each batch's own counts are
// right, and the whole group replayed at once changes nothing.
func GroupedLoadsOfConcurrentPartitions(t *testing.T, d sinkdriver.Driver, e *Env) {
	const k, n = 8, 20
	table := e.Table("grouped")
	inst := e.Start(d).Open("grouped", e.Config(map[string]any{"target_table": table, "verbose_logging": true}))
	if e.Emu != nil {
		e.Emu.ResetStatements()
	}
	e.slowCopies(k)
	batches := partitionBatches("orders", k, 100, n)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, batches) {
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
	e.exactlyOncePartitions(table, "orders", k, 100, 100+n-1)
	m := sinkdriver.SinkMetrics(t, inst)
	if m["loads"] >= k || m["loads"] < 1 {
		t.Fatalf("%v load transactions for %d batches delivered at once, want fewer (metrics %v)", m["loads"], k, m)
	}
	if m["load_batches"] != k || m["rows_inserted"] != k*n || m["rows_copied"] != k*n || m["chunks"] != k {
		t.Errorf("metrics %v", m)
	}
	if e.Emu != nil {
		copies, commits := e.Emu.CountStatements(`(?i)^COPY`), e.Emu.CountStatements(`(?i)^COMMIT`)
		if float64(copies) != m["loads"] || float64(commits) != m["loads"] {
			t.Errorf("%d COPYs and %d COMMITs, want one each per load (%v)", copies, commits, m["loads"])
		}
		if e.Emu.CountStatements(`(?i)^COPY .* MANIFEST`) == 0 {
			t.Errorf("no COPY read a manifest:\n%s", strings.Join(e.Emu.Statements(), "\n"))
		}
	}
	if sm := sinkdriver.Metrics(t, inst); sm["records"] != k*n || sm["skipped"] != 0 || sm["batches"] != k {
		t.Errorf("SDK metrics records %v, skipped %v, batches %v", sm["records"], sm["skipped"], sm["batches"])
	}
	if keys := e.Objects("redshift/orders/"); len(keys) != 0 {
		t.Errorf("files left after the loads: %v", keys)
	}

	// The runtime redelivers the whole group (a crash before the offset
	// commit): nothing changes, and each batch reports all its records as
	// skipped, grouped or not.
	e.slowCopies(k)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, batches) {
		if err != nil {
			t.Fatalf("replay of partition %d: %v", i, err)
		}
	}
	e.exactlyOncePartitions(table, "orders", k, 100, 100+n-1)
	if sm := sinkdriver.Metrics(t, inst); sm["records"] != k*n || sm["skipped"] != k*n {
		t.Errorf("after the replay records %v, skipped %v; want %d and %d", sm["records"], sm["skipped"], k*n, k*n)
	}
	if m := sinkdriver.SinkMetrics(t, inst); m["rows_inserted"] != k*n || m["rows_skipped_duplicates"] != k*n {
		t.Errorf("after the replay %v", m)
	}

	// Overlapping batches delivered together: partition p's first p
	// records are already in the table. Each batch reports its own
	// skipped count, whichever load carried it.
	mixed := make([]sinkdriver.Batch, k)
	overlap := 0
	for p := range mixed {
		mixed[p] = Batch("orders", uint64(100+n-p), n)
		mixed[p].Partition = uint32(p)
		overlap += p
	}
	e.slowCopies(k)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, mixed) {
		if err != nil {
			t.Fatalf("overlapping batch of partition %d: %v", i, err)
		}
	}
	if sm := sinkdriver.Metrics(t, inst); sm["records"] != 2*k*n-float64(overlap) || sm["skipped"] != k*n+float64(overlap) {
		t.Errorf("after the overlapping batches records %v, skipped %v; want %d and %d", sm["records"], sm["skipped"], 2*k*n-overlap, k*n+overlap)
	}
	logs := strings.Join(inst.Logs(), "\n")
	for p := range mixed {
		want := fmt.Sprintf("offsets=%d..%d ", 100+n-p, 100+2*n-p-1)
		line := ""
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "batch loaded") && strings.Contains(l, want) {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("skipped_duplicates=%d", p)) {
			t.Errorf("partition %d: want skipped_duplicates=%d in its batch loaded line, got %q", p, p, line)
		}
	}
	ids, rows := e.IDs(table)
	if want := 2*k*n - overlap; rows != want || len(ids) != want {
		t.Errorf("%d rows, %d ids after the overlapping batches; want %d", rows, len(ids), want)
	}
}

// GroupMemberFatalAlone: a batch delivered with others whose record cannot
// fit its column is answered FATAL alone (naming topic, offset, column);
// the others load.
func GroupMemberFatalAlone(t *testing.T, d sinkdriver.Driver, e *Env) {
	const k, n = 4, 10
	table := e.Table("grouped_fatal")
	inst := e.Start(d).Open("grouped_fatal", e.Config(map[string]any{"target_table": table, "payload_format": "text"}))
	e.slowCopies(k)
	batches := partitionBatches("orders", k, 0, n)
	bad := 2
	batches[bad].Records[5].Payload = []byte(`"` + strings.Repeat("ü", 32767) + `"`)
	errs := sinkdriver.ConsumeConcurrently(inst, batches)
	for i, err := range errs {
		if i == bad {
			WantStatus(t, err, hostclient.StatusFatal, `record at topic "orders" offset 5 cannot be loaded into Redshift: column payload needs 65536 bytes`)
			continue
		}
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
	ids, rows := e.IDs(table)
	if rows != (k-1)*n || len(ids) != (k-1)*n {
		t.Fatalf("%d rows, want %d", rows, (k-1)*n)
	}
	for id := range ids {
		if strings.HasPrefix(id, fmt.Sprintf("orders:%d:", bad)) {
			t.Fatalf("a row of the refused batch landed: %s", id)
		}
	}
}

// GroupTransactionFailureIsRetryForAll: when a grouped load's transaction
// fails, every batch in it is answered RETRY and nothing of them is
// visible; the replay lands each row once.
func GroupTransactionFailureIsRetryForAll(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("injects a failure into the grouped load's COPY")
	const k, n = 4, 10
	table := e.Table("grouped_retry")
	inst := e.Start(d).Open("grouped_retry", e.Config(map[string]any{"target_table": table, "max_retries": 1}))
	e.slowCopies(k)
	fault := emu.FailNext(`(?i)^COPY .* MANIFEST`, 1, rsemu.SerializableViolation(1))
	batches := partitionBatches("orders", k, 0, n)
	errs := sinkdriver.ConsumeConcurrently(inst, batches)
	if fault.Hits() != 1 {
		t.Fatalf("no grouped load ran (fault hits %d); results %v", fault.Hits(), errs)
	}
	var failed []sinkdriver.Batch
	for i, err := range errs {
		if err == nil {
			continue
		}
		WantStatus(t, err, hostclient.StatusRetry, "grouped load of", "did not commit", "1023")
		failed = append(failed, batches[i])
	}
	if len(failed) < 2 {
		t.Fatalf("%d batches failed, want every batch of the grouped load (at least 2): %v", len(failed), errs)
	}
	ids, _ := e.IDs(table)
	for _, b := range failed {
		for id := range ids {
			if strings.HasPrefix(id, fmt.Sprintf("orders:%d:", b.Partition)) {
				t.Fatalf("a row of a batch answered RETRY is visible: %s", id)
			}
		}
	}
	if keys := e.Objects("redshift/orders/"); len(keys) != 0 {
		t.Errorf("files left after the failed load: %v", keys)
	}
	// The runtime redelivers the failed batches, together.
	for i, err := range sinkdriver.ConsumeConcurrently(inst, failed) {
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
	}
	e.exactlyOncePartitions(table, "orders", k, 0, n-1)
}

// CloseCancelsWaitingBatches: close while batches wait behind a running
// load answers them RETRY (or OK when their load committed first), and
// the redelivery lands every row once.
func CloseCancelsWaitingBatches(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("holds the first COPY long enough to close meanwhile")
	// Fewer batches than the C host's four worker threads: close needs a
	// free one.
	const k, n = 3, 10
	table := e.Table("grouped_close")
	cfg := e.Config(map[string]any{"target_table": table})
	rt := e.Start(d)
	inst := rt.Open("grouped_close", cfg)
	emu.DelayOn(`(?i)^COPY`, 3*time.Second, 1)
	batches := partitionBatches("orders", k, 0, n)
	done := make(chan []error, 1)
	go func() { done <- sinkdriver.ConsumeConcurrently(inst, batches) }()
	time.Sleep(time.Second)
	start := time.Now()
	if err := inst.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	errs := <-done
	if wait := time.Since(start); wait > 10*time.Second {
		t.Errorf("close took %s", wait)
	}
	retried := 0
	for i, err := range errs {
		if err != nil {
			WantStatus(t, err, hostclient.StatusRetry)
			retried++
			continue
		}
		// OK only when the batch's rows are in.
		ids, _ := e.IDs(table)
		if !ids[fmt.Sprintf("orders:%d:%d", i, n-1)] {
			t.Errorf("partition %d answered OK with its rows not in the table", i)
		}
	}
	if retried == 0 {
		t.Errorf("no batch was cancelled by close: %v", errs)
	}
	again := rt.Open("grouped_close_2", cfg)
	for i, err := range sinkdriver.ConsumeConcurrently(again, batches) {
		if err != nil {
			t.Fatalf("redelivery %d: %v", i, err)
		}
	}
	e.exactlyOncePartitions(table, "orders", k, 0, n-1)
}

// TwoGroupingWritersTakeTurns: two instances writing one table, each with
// the batches of several partitions in flight, still take turns through
// the staging table's LOCK, a group load being one turn: every row lands
// once and staging ends empty.
func TwoGroupingWritersTakeTurns(t *testing.T, d sinkdriver.Driver, e *Env) {
	const k, n, rounds = 4, 10, 3
	if e.Emu != nil {
		// Widen the window between COPY and COMMIT.
		e.Emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^INSERT`), Times: -1, Delay: 20 * time.Millisecond})
	}
	table := e.Table("shared_grouped")
	rt := e.Start(d)
	var wg sync.WaitGroup
	errs := make(chan error, 2*k*rounds)
	loads := make([]sinkdriver.Instance, 0, 2)
	for _, writer := range []string{"a", "b"} {
		inst := rt.Open("grouped_writer_"+writer, e.Config(map[string]any{"target_table": table, "s3_prefix": "writer_" + writer}))
		loads = append(loads, inst)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for i, err := range sinkdriver.ConsumeConcurrently(inst, partitionBatches(writer, k, uint64(r*n), n)) {
					if err != nil {
						errs <- fmt.Errorf("writer %s round %d partition %d: %w", writer, r, i, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ids, rows := e.IDs(table)
	if want := 2 * k * n * rounds; rows != want || len(ids) != want {
		t.Fatalf("%d rows, %d ids; want %d", rows, len(ids), want)
	}
	for _, w := range []string{"a", "b"} {
		for p := range k {
			for off := range n * rounds {
				if id := fmt.Sprintf("%s:%d:%d", w, p, off); !ids[id] {
					t.Errorf("no row for %s", id)
				}
			}
		}
	}
	if n := e.Count("staging_" + table); n != 0 {
		t.Errorf("staging holds %d rows", n)
	}
	total := 0.0
	for _, inst := range loads {
		total += sinkdriver.SinkMetrics(t, inst)["load_batches"]
	}
	if total != 2*k*rounds {
		t.Errorf("load_batches %v, want %d", total, 2*k*rounds)
	}
}

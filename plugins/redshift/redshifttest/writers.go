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
)

// TwoWritersOnOneTableKeepEveryRow: "Rows missing after two writers were
// pointed at one table": the spec's shared staging table loses rows; this
// sink locks staging for each chunk's whole load. Two instances, in one
// runtime (on two of the C host's threads) or in a runtime each, load one
// table at the same time and keep every row. With a prefix each, the
// emulator's statement log shows they really contended.
func TwoWritersOnOneTableKeepEveryRow(t *testing.T, d sinkdriver.Driver, _ *Env) { // each case has a destination of its own
	for _, tc := range []struct {
		name            string
		batches         int
		delay           time.Duration // on each INSERT, to widen the window between COPY and COMMIT
		maxConnections  int
		prefixPerWriter bool
		runtimeEach     bool
	}{
		{"one runtime, a prefix each", 8, 3 * time.Millisecond, 0, true, false},
		{"a runtime each, one prefix, max_connections 2", 12, 5 * time.Millisecond, 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnv(t)
			if e.Emu != nil {
				e.Emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^INSERT`), Times: -1, Delay: tc.delay})
			}
			const perBatch = 20
			table := e.Table("shared")
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			rt := e.Start(d)
			for _, writer := range []string{"a", "b"} {
				opts := map[string]any{"target_table": table, "batch_size": 5}
				if tc.maxConnections > 0 {
					opts["max_connections"] = tc.maxConnections
				}
				if tc.prefixPerWriter {
					opts["s3_prefix"] = "writer_" + writer
				}
				if tc.runtimeEach {
					rt = e.Start(d)
				}
				inst := rt.Open("writer_"+writer, e.Config(opts))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range tc.batches {
						if err := inst.Consume(Batch(writer, uint64(n*perBatch), perBatch)); err != nil {
							errs <- fmt.Errorf("writer %s batch %d: %w", writer, n, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			e.exactlyOnceTopics(table, map[string]uint64{"a": uint64(tc.batches * perBatch), "b": uint64(tc.batches * perBatch)})
			if tc.prefixPerWriter && e.Emu != nil { // the statement log is the emulator's
				checkContended(t, e.Emu)
			}
		})
	}
}

// checkContended fails t unless some load's LOCK arrived while the other
// writer's transaction held the staging lock. Which session belongs to
// which writer comes from its COPY's file (s3_prefix writer_a or writer_b).
func checkContended(t *testing.T, emu *rsemu.Server) {
	t.Helper()
	log := emu.StatementLog()
	writerOf := map[int]string{}
	for _, s := range log {
		if strings.HasPrefix(s.SQL, "COPY") {
			for _, wr := range []string{"a", "b"} {
				if strings.Contains(s.SQL, "/writer_"+wr+"/") {
					writerOf[s.Session] = wr
				}
			}
		}
	}
	holding := map[string]bool{}
	contended := 0
	for _, s := range log {
		wr := writerOf[s.Session]
		switch f := strings.ToUpper(strings.Fields(s.SQL)[0]); f {
		case "LOCK":
			other := map[string]string{"a": "b", "b": "a"}[wr]
			if holding[other] {
				contended++
			}
			holding[wr] = true
		case "COMMIT", "ROLLBACK":
			holding[wr] = false
		}
	}
	if contended == 0 {
		t.Errorf("the writers never overlapped; the test proved nothing:\n%s", FirstWords(emu))
	}
	t.Logf("%d of %d loads waited for the other writer's lock", contended, emu.CountStatements(`^LOCK`))
}

// exactlyOnceTopics checks table holds exactly one row per offset [0, n)
// of each topic and nothing else, and that its staging twin is empty.
func (e *Env) exactlyOnceTopics(table string, topics map[string]uint64) {
	e.t.Helper()
	CheckExactlyOnceTopics(e.t, e.Rows(table), e.Count("staging_"+table), topics)
}

// CheckExactlyOnceTopics checks that rows (a table's) hold exactly one row
// per offset [0, n) of each topic and nothing else, and that the staging
// table's count is 0.
func CheckExactlyOnceTopics(t testing.TB, rows []Row, staging int, topics map[string]uint64) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range rows {
		seen[r["id"].(string)]++
	}
	want := 0
	for topic, n := range topics {
		for off := range n {
			if c := seen[fmt.Sprintf("%s:0:%d", topic, off)]; c != 1 {
				t.Errorf("%s:0:%d has %d rows", topic, off, c)
			}
		}
		want += int(n)
	}
	if len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	if staging != 0 {
		t.Errorf("staging holds %d rows", staging)
	}
}

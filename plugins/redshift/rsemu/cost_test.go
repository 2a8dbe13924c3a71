package rsemu_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// costEnv is an emulator with the given COPY and commit latencies whose
// debug log (the commit queue's turns) the test reads.
func costEnv(t *testing.T, copyLatency, commitLatency time.Duration) (*env, *logbuf.Buffer) {
	t.Helper()
	var log logbuf.Buffer
	e := newEnvWith(t, func(c *rsemu.Config) {
		c.CopyLatency = copyLatency
		c.CommitLatency = commitLatency
		c.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.needEmulator(t)
	return e, &log
}

// turn is one commit queue record of the emulator's log.
type turn struct {
	Msg     string    `json:"msg"`
	Session int       `json:"session"`
	Time    time.Time `json:"time"`
}

// turns returns the commit queue records logged after the first skip bytes
// of the log, in the order they were logged.
func turns(t *testing.T, log *logbuf.Buffer, skip int) []turn {
	t.Helper()
	var out []turn
	for _, line := range strings.Split(log.String()[skip:], "\n") {
		var r turn
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		if r.Msg == rsemu.LogCommitTurnBegins || r.Msg == rsemu.LogCommitTurnEnds {
			out = append(out, r)
		}
	}
	return out
}

func TestCopyLatency(t *testing.T) {
	const latency = 300 * time.Millisecond
	e, _ := costEnv(t, latency, 0)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "cost/0001.parquet", writeParquet(t, sinkRows("t", 0, 3)))

	start := time.Now()
	e.exec(t, conn, e.copySQL("stage", sinkCols, "cost/0001.parquet"))
	if took := time.Since(start); took < latency {
		t.Fatalf("COPY took %s, want at least the configured %s", took, latency)
	}
	if n := count(t, e, conn, "stage"); n != 3 {
		t.Fatalf("rows after COPY: %d", n)
	}
}

// Two sessions commit at once: the second commit's turn begins only when
// the first's has ended, each lasts the latency, and the second COMMIT
// returns at least two latencies after the first was sent. The second
// COMMIT is sent only once the first's turn has begun, so without the queue
// the turns would overlap.
func TestCommitsAreSerialised(t *testing.T) {
	const latency = 300 * time.Millisecond
	e, log := costEnv(t, 0, latency)
	a, b := e.connect(t), e.connect(t)
	e.exec(t, a, "CREATE TABLE t (v INT)")
	e.exec(t, a, "BEGIN")
	e.exec(t, a, "INSERT INTO t VALUES (1)")
	e.exec(t, b, "BEGIN")
	e.exec(t, b, "INSERT INTO t VALUES (2)")
	skip := len(log.String())

	var wg sync.WaitGroup
	var errA error
	sentA := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errA = a.Exec(e.ctx, "COMMIT")
	}()
	poll.Until(t, 30*time.Second, "the first commit's turn", func() bool { return len(turns(t, log, skip)) > 0 })
	e.exec(t, b, "COMMIT")
	doneB := time.Now()
	wg.Wait()
	if errA != nil {
		t.Fatalf("COMMIT of the first session: %v", errA)
	}

	got := turns(t, log, skip)
	if len(got) != 4 {
		t.Fatalf("commit queue records: %+v, want a begin and an end for each commit", got)
	}
	first, second := got[:2], got[2:]
	for _, tr := range [][]turn{first, second} {
		if tr[0].Msg != rsemu.LogCommitTurnBegins || tr[1].Msg != rsemu.LogCommitTurnEnds || tr[0].Session != tr[1].Session {
			t.Fatalf("commit turns overlap: %+v", got)
		}
		if d := tr[1].Time.Sub(tr[0].Time); d < latency {
			t.Errorf("a commit turn lasted %s, want at least %s", d, latency)
		}
	}
	if first[0].Session == second[0].Session {
		t.Fatalf("both turns are of session %d: %+v", first[0].Session, got)
	}
	if second[0].Time.Before(first[1].Time) {
		t.Fatalf("the second turn began at %s, before the first ended at %s", second[0].Time, first[1].Time)
	}
	if d := doneB.Sub(sentA); d < 2*latency {
		t.Fatalf("the second COMMIT returned %s after the first was sent, want at least %s", d, 2*latency)
	}
	if n := count(t, e, a, "t"); n != 2 {
		t.Fatalf("rows after both commits: %d", n)
	}
}

// Which statements take a turn of the commit queue: every commit of a
// transaction that wrote, however it commits, and nothing else.
func TestCommitQueueCountsWritingCommits(t *testing.T) {
	e, log := costEnv(t, 0, time.Millisecond)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.exec(t, conn, "CREATE TABLE t (v INT)")
	e.put(t, "cost/0001.parquet", writeParquet(t, sinkRows("t", 0, 3)))
	copySQL := e.copySQL("stage", sinkCols, "cost/0001.parquet")

	for _, c := range []struct {
		name  string
		sql   string
		args  []any
		turns int
	}{
		{"autocommit INSERT", "INSERT INTO t VALUES (1)", nil, 1},
		{"autocommit INSERT, extended protocol", "INSERT INTO t VALUES ($1)", []any{2}, 1},
		{"autocommit COPY", copySQL, nil, 1},
		{"the sink's load script", "BEGIN; LOCK stage; " + copySQL + "; INSERT INTO t VALUES (3); COMMIT", nil, 1},
		{"implicit block", "INSERT INTO t VALUES (4); INSERT INTO t VALUES (5)", nil, 1},
		{"TRUNCATE", "TRUNCATE stage", nil, 1},
		{"TRUNCATE in a block that wrote: one commit", "BEGIN; INSERT INTO t VALUES (6); TRUNCATE stage", nil, 1},
		{"DDL", "CREATE TABLE u (v INT); DROP TABLE u", nil, 1},
		{"SELECT", "SELECT count(*) FROM t", nil, 0},
		{"read-only block", "BEGIN; SELECT 1; COMMIT", nil, 0},
		{"SET", "SET statement_timeout = 0", nil, 0},
		{"rolled back", "BEGIN; INSERT INTO t VALUES (7); ROLLBACK", nil, 0},
		{"failed", "INSERT INTO t VALUES ('x')", nil, 0},
	} {
		skip := len(log.String())
		_, err := conn.Exec(e.ctx, c.sql, c.args...)
		if fails := c.name == "failed"; (err != nil) != fails {
			t.Fatalf("%s: error %v, want one: %v", c.name, err, fails)
		}
		if n := len(turns(t, log, skip)); n != 2*c.turns {
			t.Errorf("%s: %d commit queue records, want %d", c.name, n, 2*c.turns)
		}
	}
	if n := count(t, e, conn, "t"); n != 6 {
		t.Fatalf("rows in t: %d, want 6", n)
	}
}

// With the defaults nothing goes through the commit queue and a COPY does
// not wait: the emulator behaves as before the latencies existed.
func TestDefaultsDoNotWait(t *testing.T) {
	e, log := costEnv(t, 0, 0)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "cost/0001.parquet", writeParquet(t, sinkRows("t", 0, 3)))
	e.exec(t, conn, "BEGIN; LOCK stage; "+e.copySQL("stage", sinkCols, "cost/0001.parquet")+"; COMMIT")
	e.exec(t, conn, "TRUNCATE stage")
	e.exec(t, conn, "INSERT INTO stage (id) VALUES ('x')")
	if got := turns(t, log, 0); len(got) != 0 {
		t.Fatalf("commit queue records with the defaults: %+v", got)
	}
}

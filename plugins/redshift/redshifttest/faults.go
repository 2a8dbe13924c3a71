package redshifttest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// PermanentFaultsFailAtOnceWithNothingVisible: a permanent fault fails the
// batch after one attempt, whatever max_retries says, with nothing
// partially visible: no rows, nothing in staging, no file. The status is
// RETRY (an operator can fix a role or a grant; the offset stays where it
// is meanwhile) and the message names the step.
func PermanentFaultsFailAtOnceWithNothingVisible(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("its faults are injected")
	// Faults on a table that exists and is cached, in one instance.
	t.Run("cached tables", func(t *testing.T) {
		inst := e.Start(d).Open("permanent", e.Config(map[string]any{"target_table": "perm_{topic}", "max_retries": 5}))
		for _, tc := range []struct {
			topic string
			stmt  string
			err   *rsemu.Error
			want  string
		}{
			{"copy", "COPY", &rsemu.Error{Code: "XX000", Message: "Spectrum Scan Error", Detail: "the file is not Parquet"},
				"Redshift COPY failed after 1 attempt: ERROR: Spectrum Scan Error (SQLSTATE XX000); detail: the file is not Parquet"},
			{"insert", "INSERT", &rsemu.Error{Code: "XX000", Message: "Invalid digit, Value 'x'"},
				"Redshift INSERT failed after 1 attempt: ERROR: Invalid digit, Value 'x' (SQLSTATE XX000)"},
			{"cleanup", "DELETE", &rsemu.Error{Code: "42501", Message: "permission denied for relation staging_perm_cleanup"},
				"Redshift staging cleanup failed after 1 attempt: ERROR: permission denied for relation staging_perm_cleanup (SQLSTATE 42501)"},
			{"lock", "LOCK", &rsemu.Error{Code: "42501", Message: "permission denied"},
				"Redshift LOCK failed after 1 attempt: ERROR: permission denied (SQLSTATE 42501)"},
		} {
			consume(t, inst, Batch(tc.topic, 100, 1)) // the table exists and is cached
			emu.ResetStatements()
			emu.FailNext(`^`+tc.stmt, 1, tc.err)
			err := inst.Consume(Batch(tc.topic, 0, 30))
			WantStatus(t, err, hostclient.StatusRetry, tc.want)
			if n := emu.CountStatements(`(?i)^begin`); n != 1 {
				t.Errorf("%s: %d transactions, want 1: a permanent error is not retried", tc.topic, n)
			}
			if n := e.Count("perm_" + tc.topic); n != 1 {
				t.Errorf("%s: %d rows, want only the earlier one", tc.topic, n)
			}
			if n := e.Count("staging_perm_" + tc.topic); n != 0 {
				t.Errorf("%s: staging holds %d rows", tc.topic, n)
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("%s: files left in S3: %v", tc.topic, objs)
			}
		}
	})
	// Faults on the first batch of a fresh instance, each in a world of its
	// own; the message is the start of the plugin's.
	for _, tt := range []struct {
		name   string
		config map[string]any
		fault  func(e *rsemu.Server)
		want   string
	}{
		{"role not attached to the cluster", map[string]any{"aws_iam_role": "arn:aws:iam::123456789012:role/NotAttached"}, nil,
			"Redshift COPY failed after 1 attempt: ERROR: Not authorized to get credentials of role arn:aws:iam::123456789012:role/NotAttached (SQLSTATE XX000)"},
		{"INSERT rejected", nil, func(e *rsemu.Server) {
			e.FailNext(`^INSERT`, 1, &rsemu.Error{Code: "XX000", Message: "Invalid digit, Value 'x'"})
		}, "Redshift INSERT failed after 1 attempt: ERROR: Invalid digit, Value 'x' (SQLSTATE XX000)"},
		{"staging cleanup denied", nil, func(e *rsemu.Server) {
			e.FailNext(`^DELETE`, 1, &rsemu.Error{Code: "42501", Message: "permission denied for relation staging_perm"})
		}, "Redshift staging cleanup failed after 1 attempt: ERROR: permission denied for relation staging_perm (SQLSTATE 42501)"},
		{"LOCK denied", nil, func(e *rsemu.Server) {
			e.FailNext(`^LOCK`, 1, &rsemu.Error{Code: "42501", Message: "permission denied"})
		}, "Redshift LOCK failed after 1 attempt: ERROR: permission denied (SQLSTATE 42501)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEnv(t)
			cfg := e.Config(map[string]any{"target_table": "perm", "max_retries": 5})
			for k, v := range tt.config {
				cfg[k] = v
			}
			inst := e.Start(d).Open("permanent", cfg)
			e.Emu.ResetStatements()
			if tt.fault != nil {
				tt.fault(e.Emu)
			}
			err := inst.Consume(Batch("orders", 0, 10))
			se := asStatus(t, err)
			if !strings.HasPrefix(se.Message, tt.want) {
				t.Fatalf("got  %v\nwant %s", se.Message, tt.want)
			}
			if se.Code != hostclient.StatusRetry {
				t.Fatalf("status %v", se.Code)
			}
			if n := e.Emu.CountStatements(`(?i)^begin`); n != 1 {
				t.Errorf("%d transactions, want 1: a permanent error is not retried", n)
			}
			if n := e.Count("perm"); n != 0 {
				t.Errorf("%d rows visible in perm", n)
			}
			if n := e.Count("staging_perm"); n != 0 {
				t.Errorf("%d rows left in staging", n)
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("files left in S3: %v", objs)
			}
		})
	}
}

// NothingVisible checks a failed load left no rows in table, no staged rows
// and no file under prefix.
func (e *Env) NothingVisible(table, prefix string) {
	e.t.Helper()
	if n := e.Count(table); n != 0 {
		e.t.Errorf("%d rows visible in %s", n, table)
	}
	if n := e.Count("staging_" + table); n != 0 {
		e.t.Errorf("%d rows left in staging_%s", n, table)
	}
	if objs := e.Objects(prefix); len(objs) != 0 {
		e.t.Errorf("files left in S3: %v", objs)
	}
}

// retryWaits returns the "attempt=N wait=D" pairs of the WARN retry lines
// among lines.
func retryWaits(lines []string) []string {
	re := regexp.MustCompile(`attempt=(\d+) wait=(\S+)`)
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "WARN Redshift load transaction failed, retrying") {
			if m := re.FindStringSubmatch(l); m != nil {
				out = append(out, m[1]+":"+m[2])
			}
		}
	}
	return out
}

// transientErrors are server errors the spec calls transient, as the
// emulator injects them.
var transientErrors = []struct {
	name string
	err  *rsemu.Error
}{
	{"Redshift 1023 serializable isolation violation", rsemu.SerializableViolation(100167)},
	{"40001 serialization_failure", &rsemu.Error{Code: "40001", Message: "could not serialize access due to concurrent update"}},
	{"40P01 deadlock_detected", &rsemu.Error{Code: "40P01", Message: "deadlock detected"}},
	{"57P01 admin_shutdown, connection closed", rsemu.AdminShutdown()},
}

// TransientFaultsAreRetriedWithLinearBackoff: transient faults (Redshift's
// serializable isolation violation XX000 1023, serialization failures,
// deadlocks, an administrator's 57P01 that also closes the connection) are
// retried up to max_retries attempts with a linear backoff, each attempt a
// whole transaction again from BEGIN; the batch then succeeds. When they
// outlast the attempts the batch fails RETRY with nothing visible.
func TransientFaultsAreRetriedWithLinearBackoff(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("its faults are injected")
	t.Run("one instance, faults at three steps, then exhausted", func(t *testing.T) {
		const delay = 60 * time.Millisecond
		inst := e.Start(d).Open("transient", e.Config(map[string]any{"target_table": "tr_{topic}", "max_retries": 3, "retry_delay": "60ms", "batch_size": 50}))
		for _, tc := range []struct {
			topic string
			stmt  string
			err   *rsemu.Error
		}{
			{"serializable", "COPY", rsemu.SerializableViolation(100167)},
			{"shutdown", "INSERT", rsemu.AdminShutdown()},
			{"commit", "COMMIT", rsemu.SerializableViolation(100168)},
		} {
			e.Emu.ResetStatements()
			before := len(inst.Logs())
			f := e.Emu.FailNext(`(?i)^`+tc.stmt, 2, tc.err)
			start := time.Now()
			consume(t, inst, Batch(tc.topic, 0, 20))
			elapsed := time.Since(start)
			if f.Hits() != 2 {
				t.Fatalf("%s: the fault fired %d times", tc.topic, f.Hits())
			}
			e.ExactlyOnce("tr_"+tc.topic, tc.topic, 0, 19)
			if got := strings.Count(FirstWords(e.Emu), "BEGIN"); got != 3 {
				t.Errorf("%s: %d transactions, want 3: %s", tc.topic, got, FirstWords(e.Emu))
			}
			if n := e.Emu.CountStatements(`(?i)^` + tc.stmt); n != 3 {
				t.Errorf("%s: %s sent %d times, want 3", tc.topic, tc.stmt, n)
			}
			// Waits of retry_delay × 1 and × 2.
			if elapsed < 3*delay {
				t.Errorf("%s: took %v, the waits alone are %v", tc.topic, elapsed, 3*delay)
			}
			var waits []string
			for _, l := range inst.Logs()[before:] {
				level, msg, _ := strings.Cut(l, " ")
				if strings.HasPrefix(msg, "Redshift load transaction failed, retrying") {
					m := regexp.MustCompile(`step=(\S+) attempt=(\d+) wait=(\S+)`).FindStringSubmatch(msg)
					if m == nil || level != "WARN" {
						t.Errorf("retry line %s %q", level, msg)
						continue
					}
					waits = append(waits, m[1]+" "+m[2]+":"+m[3])
				}
			}
			if got, want := strings.Join(waits, ", "), tc.stmt+" 1:60ms, "+tc.stmt+" 2:120ms"; got != want {
				t.Errorf("%s: retry warnings %q, want %q", tc.topic, got, want)
			}
		}
		m := sinkdriver.SinkMetrics(t, inst)
		if m["copy_retries"] != 6 || m["chunks"] != 3 || m["rows_inserted"] != 60 {
			t.Errorf("metrics %v", m)
		}
		if objs := e.Objects(""); len(objs) != 0 {
			t.Errorf("files left: %v", objs)
		}

		// Three faults for three attempts: the batch fails, nothing is visible.
		e.Emu.ResetStatements()
		e.Emu.FailNext(`^COPY`, 3, rsemu.SerializableViolation(100169))
		err := inst.Consume(Batch("exhausted", 0, 20))
		WantStatus(t, err, hostclient.StatusRetry,
			"Redshift COPY failed after 3 attempts: ERROR: 1023 (SQLSTATE XX000); detail: Serializable isolation violation on table - 100169")
		if n := e.Emu.CountStatements(`^COPY`); n != 3 {
			t.Errorf("COPY sent %d times, want 3", n)
		}
		e.NothingVisible("tr_exhausted", "")
		if got := retryWaits(inst.Logs()); len(got) != 8 || got[6] != "1:60ms" || got[7] != "2:120ms" {
			t.Errorf("retry warnings %v", got)
		}
	})

	// Each transient error at each step, in a world of its own.
	for _, te := range transientErrors {
		for _, stmt := range []string{"LOCK", "COPY", "INSERT", "DELETE", "COMMIT"} {
			t.Run("from BEGIN/"+te.name+"/"+stmt, func(t *testing.T) {
				e := NewEnv(t)
				inst := e.Start(d).Open("transient", e.Config(map[string]any{"target_table": "tr", "max_retries": 3, "batch_size": 50}))
				e.Emu.ResetStatements()
				f := e.Emu.FailNext(`(?i)^`+stmt, 2, te.err)
				consume(t, inst, Batch("orders", 0, 20))
				if f.Hits() != 2 {
					t.Fatalf("fault fired %d times", f.Hits())
				}
				if ids, n := e.IDs("tr"); n != 20 || len(ids) != 20 {
					t.Fatalf("%d rows for %d ids", n, len(ids))
				}
				// Every attempt is a whole transaction started again from
				// BEGIN: the statements up to the failing one ran three
				// times, those after it once.
				want := 3
				for _, s := range []string{"BEGIN", "LOCK", "COPY", "INSERT", "DELETE", "COMMIT"} {
					if n := e.Emu.CountStatements(`(?i)^` + s + `\b`); n != want {
						t.Errorf("%s ran %d times, want %d\n%s", s, n, want, FirstWords(e.Emu))
					}
					if s == stmt {
						want = 1
					}
				}
				if m := sinkdriver.SinkMetrics(t, inst); m["copy_retries"] != 2 || m["chunks"] != 1 {
					t.Errorf("metrics %v", m)
				}
				logs := strings.Join(inst.Logs(), "\n")
				if got := strings.Count(logs, "WARN Redshift load transaction failed, retrying"); got != 2 {
					t.Errorf("%d retry warnings:\n%s", got, logs)
				}
			})
		}
	}

	t.Run("backoff is linear", func(t *testing.T) {
		e := NewEnv(t)
		inst := e.Start(d).Open("backoff", e.Config(map[string]any{"target_table": "backoff", "max_retries": 4, "retry_delay": "150ms"}))
		e.Emu.FailNext(`^COPY`, 3, rsemu.SerializableViolation(1))
		start := time.Now()
		consume(t, inst, Batch("orders", 0, 5))
		elapsed := time.Since(start)
		// Waits of 150ms × 1, 2 and 3 after attempts 1, 2 and 3.
		if elapsed < 900*time.Millisecond {
			t.Errorf("took %v, the waits alone are 900ms", elapsed)
		}
		logs := strings.Join(inst.Logs(), "\n")
		waits := regexp.MustCompile(`attempt=(\d) wait=(\S+)`).FindAllStringSubmatch(logs, -1)
		var got []string
		for _, w := range waits {
			got = append(got, w[1]+":"+w[2])
		}
		if strings.Join(got, " ") != "1:150ms 2:300ms 3:450ms" {
			t.Errorf("waits %v\n%s", got, logs)
		}
		if n := e.Emu.CountStatements(`^COPY`); n != 4 {
			t.Errorf("COPY ran %d times, want 4", n)
		}
	})

	t.Run("retries exhausted", func(t *testing.T) {
		e := NewEnv(t)
		inst := e.Start(d).Open("exhaust", e.Config(map[string]any{"target_table": "ex", "max_retries": 3}))
		e.Emu.FailNext(`^COPY`, 3, rsemu.SerializableViolation(100167))
		se := asStatus(t, inst.Consume(Batch("orders", 0, 10)))
		want := "Redshift COPY failed after 3 attempts: ERROR: 1023 (SQLSTATE XX000); detail: Serializable isolation violation on table - 100167"
		if !strings.HasPrefix(se.Message, want) {
			t.Fatalf("got  %v\nwant %s...", se.Message, want)
		}
		if se.Code != hostclient.StatusRetry {
			t.Fatalf("status %v", se.Code)
		}
		if n := e.Emu.CountStatements(`^COPY`); n != 3 {
			t.Errorf("COPY ran %d times", n)
		}
		e.NothingVisible("ex", "")
		if m := sinkdriver.SinkMetrics(t, inst); m["files_uploaded"] != 1 || m["chunks"] != 0 || m["copy_retries"] != 2 {
			t.Errorf("metrics %v", m)
		}
	})
}

// CloseDuringALoadSaysWhatMayHaveCommitted: close() cancels a consume
// while its second chunk's load transaction is on the server (its COPY is
// delayed). The load is one query already sent, so the sink cannot know
// whether it commits: the RETRY says the consume was cancelled by close,
// that the first of the three chunks committed and stays, that the second
// may have committed, and that the replay skips the ids already loaded;
// it never names a statement as the one that failed. The first chunk's rows
// are in the table.
func CloseDuringALoadSaysWhatMayHaveCommitted(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("a load is delayed")
	t.Run("close during the second chunk", func(t *testing.T) {
		inst := e.Start(d).Open("cancelled", e.Config(map[string]any{"target_table": "cancelled", "batch_size": 10}))
		// Every COPY after the first waits on the server long enough for the
		// close below to land during it, whenever the test gets to run.
		held := emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^COPY`), Skip: 1, Times: -1, Delay: 10 * time.Second})
		errs := make(chan error, 1)
		go func() { errs <- inst.Consume(Batch("orders", 0, 30)) }()
		for deadline := time.Now().Add(time.Minute); held.Hits() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the second chunk's COPY never reached the emulator")
			}
		}
		if err := inst.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		held.Remove()
		var err error
		select {
		case err = <-errs:
		case <-time.After(time.Minute):
			t.Fatal("consume did not return after close")
		}
		se := WantStatus(t, err, hostclient.StatusRetry, "consume cancelled by close",
			"chunk 2 of 3 may have committed", `its load transaction into "cancelled" was sent`, "1 of the 3 chunks committed before it and stays",
			"the replay skips the ids already in the table")
		if strings.Contains(se.Message, " failed after ") {
			t.Errorf("the message names a failed statement: %s", se.Message)
		}
		ids, _ := e.IDs("cancelled")
		for off := range 10 {
			if id := fmt.Sprintf("orders:0:%d", off); !ids[id] {
				t.Errorf("the first chunk's id %s is not in the table (%d ids)", id, len(ids))
			}
		}
	})

	// The connection lost after COMMIT ran, its answer never read, on the
	// only attempt: the chunk did commit, and the message must allow it.
	t.Run("connection lost after COMMIT", func(t *testing.T) {
		lost := e.Start(d).Open("lost", e.Config(map[string]any{"target_table": "lost", "max_retries": 1}))
		drop := emu.DropAfter(`(?i)^COMMIT`, 1)
		err := lost.Consume(Batch("orders", 0, 5))
		se := WantStatus(t, err, hostclient.StatusRetry, `Redshift chunk 1 of 1 may have committed: its load transaction into "lost" was sent and`,
			"no chunk committed before it", "the replay skips the ids already in the table")
		if drop.Hits() != 1 || strings.Contains(se.Message, " failed after ") {
			t.Errorf("drop fired %d times; message %s", drop.Hits(), se.Message)
		}
		e.ExactlyOnce("lost", "orders", 0, 4)
		consume(t, lost, Batch("orders", 0, 5))
		e.ExactlyOnce("lost", "orders", 0, 4)
	})
}

package redshift_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

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

func TestTransientFaultsAreRetriedFromBegin(t *testing.T) {
	for _, te := range transientErrors {
		for _, stmt := range []string{"LOCK", "COPY", "INSERT", "DELETE", "COMMIT"} {
			t.Run(te.name+"/"+stmt, func(t *testing.T) {
				r := newRig(t)
				h, logs := r.open("transient", r.config(map[string]any{"target_table": "tr", "max_retries": 3, "batch_size": 50}))
				r.emu.ResetStatements()
				f := r.emu.FailNext(`(?i)^`+stmt, 2, te.err)
				mustConsume(t, h, batch("orders", 0, 20))
				if f.Hits() != 2 {
					t.Fatalf("fault fired %d times", f.Hits())
				}
				if ids, n := r.ids("tr"); n != 20 || len(ids) != 20 {
					t.Fatalf("%d rows for %d ids", n, len(ids))
				}
				// Every attempt is a whole transaction started again from
				// BEGIN: the statements up to the failing one ran three
				// times, those after it once.
				want := 3
				for _, s := range []string{"BEGIN", "LOCK", "COPY", "INSERT", "DELETE", "COMMIT"} {
					if n := r.countStatements(`(?i)^` + s + `\b`); n != want {
						t.Errorf("%s ran %d times, want %d\n%s", s, n, want, strings.Join(r.statements(), " "))
					}
					if s == stmt {
						want = 1
					}
				}
				if m := metrics(t, h); m["copy_retries"] != 2 || m["chunks"] != 1 {
					t.Errorf("metrics %v", m)
				}
				if got := strings.Count(logs.String(), "WARN Redshift load transaction failed, retrying"); got != 2 {
					t.Errorf("%d retry warnings:\n%s", got, logs.String())
				}
			})
		}
	}
}

func TestRetryBackoffIsLinear(t *testing.T) {
	r := newRig(t)
	h, logs := r.open("backoff", r.config(map[string]any{"target_table": "backoff", "max_retries": 4, "retry_delay": "150ms"}))
	r.emu.FailNext(`^COPY`, 3, rsemu.SerializableViolation(1))
	start := time.Now()
	mustConsume(t, h, batch("orders", 0, 5))
	elapsed := time.Since(start)
	// Waits of 150ms × 1, 2 and 3 after attempts 1, 2 and 3.
	if elapsed < 900*time.Millisecond {
		t.Errorf("took %v, the waits alone are 900ms", elapsed)
	}
	waits := regexp.MustCompile(`attempt=(\d) wait=(\S+)`).FindAllStringSubmatch(logs.String(), -1)
	var got []string
	for _, w := range waits {
		got = append(got, w[1]+":"+w[2])
	}
	if strings.Join(got, " ") != "1:150ms 2:300ms 3:450ms" {
		t.Errorf("waits %v\n%s", got, logs.String())
	}
	if n := r.countStatements(`^COPY`); n != 4 {
		t.Errorf("COPY ran %d times, want 4", n)
	}
}

func TestTransientFaultsExhaustTheRetries(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("exhaust", r.config(map[string]any{"target_table": "ex", "max_retries": 3}))
	r.emu.FailNext(`^COPY`, 3, rsemu.SerializableViolation(100167))
	err := sdk.Consume(h, batch("orders", 0, 10))
	want := "Redshift COPY failed after 3 attempts: ERROR: 1023 (SQLSTATE XX000); detail: Serializable isolation violation on table - 100167"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got  %v\nwant %s...", err, want)
	}
	if sdk.StatusOf(err) != sdk.StatusRetry {
		t.Fatalf("status %v", sdk.StatusOf(err))
	}
	if n := r.countStatements(`^COPY`); n != 3 {
		t.Errorf("COPY ran %d times", n)
	}
	assertNothingVisible(t, r, "ex")
	if m := metrics(t, h); m["files_uploaded"] != 1 || m["chunks"] != 0 || m["copy_retries"] != 2 {
		t.Errorf("metrics %v", m)
	}
}

// assertNothingVisible checks a failed load left no rows, no staged rows
// and no file.
func assertNothingVisible(t *testing.T, r *rig, table string) {
	t.Helper()
	if n := r.count(table); n != 0 {
		t.Errorf("%d rows visible in %s", n, table)
	}
	if n := r.count("staging_" + table); n != 0 {
		t.Errorf("%d rows left in staging", n)
	}
	if objs := r.objects(""); len(objs) != 0 {
		t.Errorf("files left in S3: %v", objs)
	}
}

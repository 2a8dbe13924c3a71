package redshift_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// crashPoints are the places a load can die, as the emulator injects them:
// the connection drops when a statement arrives (before it runs) or right
// after it ran, before the client sees the result.
var crashPoints = []struct {
	name  string
	after bool // DropAfter; else DropOn
	stmt  string
}{
	{"after upload, before COPY", false, `^LOCK`},
	{"mid-COPY", false, `^COPY`},
	{"after COPY", true, `^COPY`},
	{"after INSERT", true, `^INSERT`},
	{"after staging cleanup", true, `^DELETE`},
	{"after COMMIT, unacknowledged", true, `^(?i)commit`},
}

func TestCrashThenRedeliveryToANewInstance(t *testing.T) {
	for _, cp := range crashPoints {
		t.Run(cp.name, func(t *testing.T) {
			r := newRig(t)
			cfg := r.config(map[string]any{"target_table": "crash", "batch_size": 10, "max_retries": 1})
			h1, _ := r.open("crash1", cfg)
			mustConsume(t, h1, batch("orders", 0, 10)) // an earlier, committed batch
			if cp.after {
				r.emu.DropAfter(cp.stmt, 1)
			} else {
				r.emu.DropOn(cp.stmt, 1)
			}
			b := batch("orders", 5, 25) // overlaps the committed batch, three chunks
			err := sdk.Consume(h1, b)
			if err == nil {
				t.Fatal("the load survived the dropped connection with max_retries = 1")
			}
			if sdk.StatusOf(err) != sdk.StatusRetry {
				t.Fatalf("status %v: %v", sdk.StatusOf(err), err)
			}
			// The process "dies": the instance goes away, a new one gets
			// the same batch again.
			if err := sdk.Close(h1); err != nil {
				t.Fatal(err)
			}
			h2, _ := r.open("crash2", cfg)
			mustConsume(t, h2, b)
			ids, n := r.ids("crash")
			if n != 30 || len(ids) != 30 {
				t.Fatalf("%d rows for %d ids, want exactly one row for each of 30 records", n, len(ids))
			}
			for off := 0; off < 30; off++ {
				if !ids[fmt.Sprintf("orders:0:%d", off)] {
					t.Errorf("offset %d missing", off)
				}
			}
			if n := r.count("staging_crash"); n != 0 {
				t.Errorf("staging holds %d rows", n)
			}
		})
	}
}

func TestCrashAbsorbedByRetries(t *testing.T) {
	for _, cp := range crashPoints {
		t.Run(cp.name, func(t *testing.T) {
			r := newRig(t)
			h, _ := r.open("absorb", r.config(map[string]any{"target_table": "absorb", "batch_size": 10, "max_retries": 3}))
			if cp.after {
				r.emu.DropAfter(cp.stmt, 1)
			} else {
				r.emu.DropOn(cp.stmt, 1)
			}
			mustConsume(t, h, batch("orders", 0, 25))
			if ids, n := r.ids("absorb"); n != 25 || len(ids) != 25 {
				t.Fatalf("%d rows for %d ids", n, len(ids))
			}
			if n := r.count("staging_absorb"); n != 0 {
				t.Errorf("staging holds %d rows", n)
			}
			if m := metrics(t, h); m["copy_retries"] != 1 {
				t.Errorf("copy_retries %v, want 1", m["copy_retries"])
			}
		})
	}
}

func TestFailedChunkFailsTheBatchAndRedeliveryCompletesIt(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("partial", r.config(map[string]any{"target_table": "partial", "batch_size": 10, "max_retries": 1}))
	// The second chunk's COPY fails for good; the first chunk is committed.
	r.emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^COPY`), Skip: 1,
		Err: &rsemu.Error{Code: "XX000", Message: "Load into table 'staging_partial' failed"}})
	b := batch("orders", 0, 30)
	err := sdk.Consume(h, b)
	if err == nil || !strings.HasPrefix(err.Error(), "Redshift COPY failed after 1 attempt: ") {
		t.Fatalf("%v", err)
	}
	if n := r.count("partial"); n != 10 {
		t.Fatalf("%d rows after the failed batch, want the first chunk's 10", n)
	}
	if strings.Count(strings.Join(r.statements(), " "), "COPY") != 2 {
		t.Fatalf("chunks after the failing one ran: %v", r.statements())
	}
	mustConsume(t, h, b)
	if ids, n := r.ids("partial"); n != 30 || len(ids) != 30 {
		t.Fatalf("%d rows for %d ids", n, len(ids))
	}
}

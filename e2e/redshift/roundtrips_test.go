package redshift_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// A chunk's load transaction is one multi-statement query: one SQL round
// trip per chunk, the same six statements as before. A failure names the
// statement and its SQLSTATE as before and costs one more round trip, the
// ROLLBACK that ends the aborted transaction; the connection is reused and
// the redelivered batch loads.
func TestOneRoundTripPerChunk(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	inst := w.open("trips", w.config(map[string]any{"target_table": "trips", "batch_size": 100, "max_connections": 1}))
	consume(t, inst, batch("orders", 0, 1)) // creates and checks the tables

	w.emu.ResetStatements()
	consume(t, inst, batch("orders", 1, 250)) // chunks of 100, 100, 50
	if n := w.emu.RoundTrips(); n != 3 {
		t.Errorf("%d SQL round trips for 3 chunks, want 3", n)
	}
	chunk := "BEGIN LOCK COPY INSERT DELETE COMMIT"
	if got, want := firstWords(w.emu), strings.TrimSpace(strings.Repeat(chunk+" ", 3)); got != want {
		t.Errorf("statements %s\nwant       %s", got, want)
	}
	w.exactlyOnce("trips", "orders", 0, 250)

	w.emu.ResetStatements()
	w.emu.FailNext(`^INSERT`, 1, &rsemu.Error{Code: "XX000", Message: "Invalid digit, Value 'x'"})
	b := batch("orders", 251, 10)
	err := inst.Consume(b)
	wantStatus(t, err, hostclient.StatusRetry, "Redshift INSERT failed after 1 attempt: ERROR: Invalid digit, Value 'x' (SQLSTATE XX000)")
	if got, want := firstWords(w.emu), "BEGIN LOCK COPY INSERT ROLLBACK"; got != want {
		t.Errorf("statements %s, want %s", got, want)
	}
	if n := w.emu.RoundTrips(); n != 2 {
		t.Errorf("%d SQL round trips for the failed chunk, want 2 (the load, ROLLBACK)", n)
	}
	w.exactlyOnce("trips", "orders", 0, 250) // nothing of the failed chunk is visible

	w.emu.ResetStatements()
	consume(t, inst, b) // the redelivery, on the same (only) connection
	if n := w.emu.RoundTrips(); n != 1 {
		t.Errorf("%d SQL round trips for the redelivered chunk, want 1", n)
	}
	w.exactlyOnce("trips", "orders", 0, 260)
}

// open() warns when batch_size cuts a batch of the runtime's default
// batch_length into many COPYs, naming both keys; the default batch_size
// does not warn (TestPayloadFormatWarnings counts every warning at open).
func TestManyCopiesPerBatchWarning(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	inst := w.open("small_chunks", w.config(map[string]any{"target_table": "small_chunks", "batch_size": 10}))
	var warns []string
	for _, l := range inst.Logs() {
		if l.Level.String() == "WARN" {
			warns = append(warns, l.Message)
		}
	}
	want := "batch_size = 10 loads a batch of 1000 records (the runtime's default batch_length) with 100 COPYs, " +
		"each with a large fixed cost on Redshift: set batch_size near the topic's batch_length (docs/redshift.md, Sizing batch_size)"
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q\nwant exactly %q", warns, want)
	}
	consume(t, inst, batch("orders", 0, 25)) // a warning, not a refusal
	w.exactlyOnce("small_chunks", "orders", 0, 24)
}

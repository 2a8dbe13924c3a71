package redshift_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// nothingVisible checks a failed load left no rows, no staged rows and no
// file under prefix.
func (w *world) nothingVisible(table, prefix string) {
	w.t.Helper()
	if n := w.count(table); n != 0 {
		w.t.Errorf("%d rows visible in %s", n, table)
	}
	if n := w.count("staging_" + table); n != 0 {
		w.t.Errorf("%d rows left in staging_%s", n, table)
	}
	if objs := w.objects(prefix); len(objs) != 0 {
		w.t.Errorf("files left in S3: %v", objs)
	}
}

// A small error buffer truncates the pre-flight message, never into invalid
// UTF-8 or past the buffer (the host checks both). Only the C host has such
// a buffer; the rest of the pre-flight limits are in the suite
// (TestSuite/PreflightLimitsAreFatal).
func TestPreflightMessageFitsASmallErrorBuffer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	text := w.open("fit_text", w.config(map[string]any{"target_table": "fitt_{topic_segment[0]}", "payload_format": "text"}))
	err := text.Consume(func() hostclient.Batch {
		b := batch("größe", 0, 1)
		b.Schema = "raw"
		b.Records[0].Payload = []byte{0xc3}
		return b
	}(), hosttest.ErrCap(27))
	wantStatus(t, err, hostclient.StatusFatal, "record at topic")
}

// A writer that stalls while holding the staging table's lock (here its
// COPY is held up on the cluster) does not block the other writer of the
// table forever: the other one's LOCK is canceled by statement_timeout and
// its batch fails RETRY within the bound, naming the table, while the first
// is still stalled. Once the stall ends, both batches land exactly once.
func TestStalledWriterHoldingTheStagingLockCostsARetry(t *testing.T) {
	t.Parallel()
	w := newWorld(t, hostclient.Workers(2))
	const stall, bound = 5 * time.Second, time.Second
	stalled := w.open("stalled", w.config(map[string]any{"target_table": "shared", "s3_prefix": "stalled"}))
	waiter := w.open("waiter", w.config(map[string]any{"target_table": "shared", "s3_prefix": "waiter", "statement_timeout": "1s"}))

	hold := w.emu.DelayOn(`^COPY `, stall, 1)
	stalledDone := make(chan error, 1)
	go func() { stalledDone <- stalled.ConsumeOn(0, batch("a", 0, 5)) }()
	waitFor(t, 10*time.Second, "the stalled writer's COPY", func() bool { return hold.Hits() > 0 })

	start := time.Now()
	err := waiter.ConsumeOn(1, batch("b", 0, 5))
	waited := time.Since(start)
	wantStatus(t, err, hostclient.StatusRetry,
		`Waiting for the lock on staging table "staging_shared"`, "timed out after 1s (statement_timeout)", "SQLSTATE 57014")
	t.Logf("the waiter got RETRY after %s (bound %s, stall %s)", waited, bound, stall)
	if waited < bound || waited > stall-time.Second {
		t.Errorf("the waiter gave up after %s, want the 1s bound, well before the %s stall ends", waited, stall)
	}
	select {
	case err := <-stalledDone:
		t.Fatalf("the stalled writer finished (%v) before the waiter gave up: nothing was held", err)
	default:
	}
	if n := w.count("shared"); n != 0 {
		t.Errorf("%d rows visible while the stalled load holds the lock and the other failed", n)
	}

	if err := <-stalledDone; err != nil {
		t.Fatalf("stalled writer: %v", err)
	}
	// The runtime redelivers the waiter's batch.
	if err := waiter.ConsumeOn(1, batch("b", 0, 5)); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	w.exactlyOnceTopics("shared", map[string]uint64{"a": 5, "b": 5})
}

// ABI 1.1: with a host that accepts rejections, the records the pre-flight
// check refuses (too long, text not UTF-8) are rejected one by one and the
// rest are loaded; a replay rejects the same records and loads nothing
// twice. The same batch from a 1.0 host fails FATAL before anything loads.
func TestPreflightRejectsSingleRecords(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	text := w.open("rej_text", w.config(map[string]any{"target_table": "rej_{topic_segment[0]}", "payload_format": "text"}))
	b := batch("mix", 100, 10)
	b.Schema = "raw"
	b.Records[3].Payload = []byte(`"` + strings.Repeat("ü", 32767) + `"`)
	b.Records[8].Payload = []byte{'o', 'k', 0xff}

	_, err := text.ConsumeResult(b, hosttest.Batch1_0())
	wantStatus(t, err, hostclient.StatusFatal, `record at topic "mix" offset 103 cannot be loaded into Redshift: column payload needs 65536 bytes but holds at most 65535`)
	if n := w.count("rej_mix"); n != 0 {
		t.Fatalf("1.0 host: %d rows", n)
	}

	b.AcceptRejections = true
	for attempt := uint32(1); attempt <= 2; attempt++ {
		b.Attempt = attempt
		rej, err := text.ConsumeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(rej) != 2 || rej[0].Index != 3 || rej[0].Reason != hostclient.RejectSize ||
			!strings.Contains(rej[0].Message, `offset 103 cannot be loaded into Redshift: column payload needs 65536 bytes`) ||
			rej[1].Index != 8 || rej[1].Reason != hostclient.RejectEncoding ||
			rej[1].Message != `record at topic "mix" offset 108 cannot be loaded into Redshift: column payload is not valid UTF-8 (payload_format = "text" stores the payload as VARCHAR)` {
			t.Fatalf("attempt %d: rejections %+v", attempt, rej)
		}
		var offsets []uint64
		for _, r := range w.rows("rej_mix") {
			offsets = append(offsets, offsetOf(r))
		}
		if fmt.Sprint(offsets) != "[100 101 102 104 105 106 107 109]" {
			t.Fatalf("attempt %d: offsets %v", attempt, offsets)
		}
	}
}

package abi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// close cancels a consume in flight, which returns RETRY (here although the
// sink marks its cancellation FATAL), and returns only after that consume
// has: the sink's mark, written 300 ms after the cancellation, is there
// when close returns.
func TestCloseCancelsAConsumeInFlightAndWaitsForIt(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	h := startHost(t, hostclient.Workers(2))
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := lib.Open(definition(t, "blocked", map[string]any{"record_path": rec, "fail_mode": "block"}))
	if err != nil {
		t.Fatal(err)
	}
	b := hostclient.Batch{Attempt: 1, Topic: "stuck", Schema: "json", Records: []hostclient.Record{{Offset: 1, Payload: []byte(`1`)}}}
	consumed := make(chan error, 1)
	go func() { consumed <- inst.ConsumeOn(0, b) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.WaitLog(ctx, func(l hostclient.LogLine) bool { return strings.HasPrefix(l.Message, "consume blocked") }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := inst.Close(hostclient.OnWorker(1)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if mark, err := os.ReadFile(rec + ".cancelled"); err != nil || string(mark) != "stuck" {
		t.Fatalf("close returned after %v, before the cancelled consume had returned: mark %q, %v", took, mark, err)
	}
	wantStatus(t, <-consumed, hostclient.StatusRetry, "consume cancelled by close", "context canceled")
	if got := readRecorded(t, rec); len(got) != 0 {
		t.Fatalf("the cancelled batch was recorded: %+v", got)
	}
}

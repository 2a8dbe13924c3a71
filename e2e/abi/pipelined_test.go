package abi_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

func pipelinedBatch(topic string, rangeLast uint64, follows *uint64, offsets ...uint64) hostclient.Batch {
	b := hostclient.Batch{Attempt: 1, Topic: topic, Partition: 2, Schema: "json", RangeLast: rangeLast, Follows: follows}
	for _, o := range offsets {
		b.Records = append(b.Records, hostclient.Record{Offset: o, Payload: []byte(`{}`)})
	}
	return b
}

// ABI 1.5 end to end: hostclient's RangeLast and Follows cross the C host
// into a Go plugin's sdk.Batch, and the SDK's sequencer hands the follower
// of a batch still in the plugin its Pred, which the test plugin waits for
// before writing, so the follower's line lands after its predecessor's. A
// 1.4 host's batch carries neither field: RangeLast is the last record's.
func TestPipelinedBatchesReachTheSDK(t *testing.T) {
	h := startHost(t, hostclient.Env("PICOMQ_TEST_PLUGIN_PIPELINED=1", "PICOMQ_TEST_PLUGIN_CONCURRENT=1"))
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "pipelined", map[string]any{"record_path": rec, "delay": "300ms"}))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()

	// The first batch kept back records 12 to 14 (dead letters, say): its
	// range ends at 14. The second is sent while the first is in the
	// plugin.
	perr := make(chan error, 1)
	go func() { perr <- inst.Consume(pipelinedBatch("orders", 14, nil, 10, 11)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.WaitLog(ctx, func(l hostclient.LogLine) bool {
		return l.Ctx == inst.Ctx() && strings.Contains(l.Message, "consume delayed")
	}); err != nil {
		t.Fatalf("the first batch never reached the plugin: %v", err)
	}
	if err := inst.Consume(pipelinedBatch("orders", 16, new(uint64(14)), 15, 16)); err != nil {
		t.Fatalf("follower: %v", err)
	}
	if err := <-perr; err != nil {
		t.Fatalf("predecessor: %v", err)
	}
	// As a 1.4 host would pass it: the plugin sees neither field.
	if err := inst.Consume(pipelinedBatch("orders", 25, new(uint64(16)), 20, 21), hosttest.Batch1_4()); err != nil {
		t.Fatalf("1.4 host's batch: %v", err)
	}

	lines := readRecorded(t, rec)
	if len(lines) != 3 {
		t.Fatalf("%d batches recorded, want 3", len(lines))
	}
	type seen struct {
		rangeLast     uint64
		follows, pred string
	}
	str := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatUint(*p, 10)
	}
	want := []seen{{14, "-", "-"}, {16, "14", "14"}, {21, "-", "-"}}
	for i, l := range lines {
		got := seen{l.RangeLast, str(l.Follows), str(l.Pred)}
		if got != want[i] {
			t.Errorf("batch %d (first offset %d): range_last %d follows %s pred %s, want %+v", i, l.Records[0].Offset, got.rangeLast, got.follows, got.pred, want[i])
		}
	}
}

// The SDK answers RETRY, without calling the sink, a pipelined batch whose
// predecessor was not written; hostclient refuses to send a pipelined batch
// to a library whose describe() does not declare "pipelined", which still
// takes ordinary batches with a RangeLast.
func TestPipelinedBatchNotWrittenOrRefused(t *testing.T) {
	h := startHost(t, hostclient.Env("PICOMQ_TEST_PLUGIN_PIPELINED=1"))
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	// Attempt 1 of any batch fails, so the predecessor (attempt 1) fails
	// and the follower (sent as attempt 2 to tell them apart) would be
	// written if the sink were called.
	inst, err := lib.Open(definition(t, "notwritten", map[string]any{"record_path": rec, "fail_mode": "retry", "fail_attempts": 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	wantStatus(t, inst.Consume(pipelinedBatch("orders", 11, nil, 10, 11)), hostclient.StatusRetry, "asked to fail")
	b := pipelinedBatch("orders", 13, new(uint64(11)), 12, 13)
	b.Attempt = 2
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, "through offset 11) was not written")
	if data, err := os.ReadFile(rec); err != nil || len(data) != 0 {
		t.Fatalf("record file %q (%v), want nothing written", data, err)
	}

	plain := startHost(t) // the test plugin without Pipelined
	lib, err = plain.Load(testPlugin(t, "b"))
	if err != nil {
		t.Fatal(err)
	}
	rec = filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err = lib.Open(definition(t, "plain", map[string]any{"record_path": rec}))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	err = inst.Consume(pipelinedBatch("orders", 13, new(uint64(11)), 12, 13))
	if err == nil || !strings.Contains(err.Error(), `does not declare "pipelined"`) {
		t.Fatalf("pipelined batch to a plugin not declaring it: %v", err)
	}
	if err := inst.Consume(pipelinedBatch("orders", 13, nil, 12, 13)); err != nil {
		t.Fatal(err)
	}
	if lines := readRecorded(t, rec); len(lines) != 1 || lines[0].RangeLast != 13 || lines[0].Follows != nil {
		t.Fatalf("recorded %+v, want the one ordinary batch through 13", lines)
	}
}

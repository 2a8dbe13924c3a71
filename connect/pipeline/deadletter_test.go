package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// readTopic reads every record of topic (partition 0) from the start.
func readTopic(t *testing.T, addrs []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return "<absent>"
}

// errors_tolerance = "all": of a batch of 10, the two records the plugin
// rejects (ABI 1.1) and the one the runtime cannot decode go to
// <topic>.dlq with their key, value and headers plus the pico_* headers;
// the other 7 are written; the offset moves past the batch once the
// broker acknowledged the dead letters.
func TestDeadLetters(t *testing.T) {
	kf := cluster(t, "orders", "orders.dlq")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 10\nerrors_tolerance = \"all\"\n",
		"reject_prefix = '{\"bad\"'\n")
	payloads := jsonPayloads(0, 10)
	payloads[2], payloads[5], payloads[7] = `{"bad":2}`, `{"n":`, `{"bad":7}`
	produce(t, kf, "orders", payloads...)
	h.start()
	until(t, 15*time.Second, "commit at 10", func() bool { return committed(t, kf, group, "orders")["orders"] == 10 })
	if got := offsets(readLines(t, h.records), "orders"); !slices.Equal(got, []uint64{0, 1, 3, 4, 6, 8, 9}) {
		t.Fatalf("written offsets %v", got)
	}
	dlq := readTopic(t, kf.ListenAddrs(), "orders.dlq", 3)
	if len(dlq) != 3 {
		t.Fatalf("%d dead letters, want 3", len(dlq))
	}
	want := []struct{ offset, class, msg, value string }{
		{"2", "value", `test plugin: record at topic "orders" offset 2 starts with "{\"bad\""`, `{"bad":2}`},
		{"5", "encoding", `topic "orders" partition 0 record at offset 5 is not valid JSON (schema = "json")`, `{"n":`},
		{"7", "value", `test plugin: record at topic "orders" offset 7 starts with "{\"bad\""`, `{"bad":7}`},
	}
	for i, w := range want {
		r := dlq[i]
		if header(r, metadata.DeadLetterOffset) != w.offset || header(r, metadata.DeadLetterClass) != w.class ||
			header(r, metadata.DeadLetterMessage) != w.msg || string(r.Value) != w.value || string(r.Key) != "k" ||
			header(r, "h") != "v" || header(r, metadata.DeadLetterTopic) != "orders" || header(r, metadata.DeadLetterPartition) != "0" ||
			!strings.HasPrefix(header(r, metadata.DeadLetterTimestamp), "1") {
			t.Errorf("dead letter %d: key %q value %q headers %v", i, r.Key, r.Value, r.Headers)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// The Observer saw the dead letters, per class.
	var counted map[string]int
	for _, d := range h.seen.d {
		if d.DeadLetters != nil {
			counted = d.DeadLetters
		}
	}
	if counted["value"] != 2 || counted["encoding"] != 1 {
		t.Errorf("observed dead letters %v", counted)
	}
}

// errors_tolerance = "none" (the default): the plugin is not offered
// rejections and fails the batch FATAL, as the spec says; nothing commits.
func TestToleranceNoneStopsOnABadRecord(t *testing.T) {
	kf := cluster(t, "orders", "orders.dlq")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\n", "reject_prefix = '{\"bad\"'\n")
	produce(t, kf, "orders", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Fatal || !strings.Contains(err.Error(), `offset 1 starts with`) {
		t.Fatalf("Run = %v, want a FATAL stop", err)
	}
	if got := committed(t, kf, group, "orders")["orders"]; got != -1 {
		t.Errorf("committed %d", got)
	}
	if n := len(readLines(t, h.records)); n != 0 {
		t.Errorf("%d batches written", n)
	}
}

// A pattern block with errors_tolerance = "all" and the default
// "<topic>.dlq" naming never consumes its own dead letters, although
// 'orders\..*' matches orders.eu.dlq: the dead letter lands once, the sink
// keeps running, and the plugin never sees it.
func TestPatternDoesNotConsumeItsDeadLetters(t *testing.T) {
	kf := cluster(t, "orders.eu", "orders.eu.dlq")
	h := newHarness(t, kf, "[[topics]]\npattern = 'orders\\..*'\nschema = \"json\"\nbatch_length = 3\npoll_interval = \"50ms\"\nerrors_tolerance = \"all\"\n",
		"reject_prefix = '{\"bad\"'\n")
	produce(t, kf, "orders.eu", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	h.start()
	until(t, 15*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "orders.eu")["orders.eu"] == 3 })
	produce(t, kf, "orders.eu", `{"n":3}`)
	until(t, 15*time.Second, "commit at 4", func() bool { return committed(t, kf, group, "orders.eu")["orders.eu"] == 4 })
	if dlq := readTopic(t, kf.ListenAddrs(), "orders.eu.dlq", 1); len(dlq) != 1 || string(dlq[0].Value) != `{"bad":1}` {
		t.Fatalf("dead letters %d, want the one bad record", len(dlq))
	}
	for _, l := range readLines(t, h.records) {
		if l.Topic != "orders.eu" {
			t.Errorf("the plugin got a batch of %s", l.Topic)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatalf("the sink stopped: %v", err)
	}
}

// A tombstone (an empty value) on a schema = "json" topic is not malformed
// JSON to the runtime: it reaches the plugin, which decides what a
// tombstone gets. The test plugin relies on the SDK's payload check, which
// refuses it (FATAL from the plugin); before, the runtime refused it itself
// (Invalid) and no sink could choose (Delta's skip_empty_payloads, Redshift
// storing an empty value).
func TestTombstonesReachThePlugin(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\n", "")
	produce(t, kf, "orders", `{"n":0}`, ``, `{"n":2}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Fatal || !strings.Contains(err.Error(), `topic "orders" offset 1: payload is not a JSON value`) {
		t.Fatalf("Run = %v, want the plugin's FATAL for the tombstone at offset 1", err)
	}
}

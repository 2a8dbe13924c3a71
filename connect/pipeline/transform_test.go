package pipeline_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// transformBlock unwraps a Debezium-style envelope (a null after is
// dropped), drops the records whose op is "r", removes a secret and adds
// the offset.
const transformBlock = `[[topics]]
topics = ["orders"]
schema = "json"
batch_length = 6
%s
[[topics.transforms]]
type = "unwrap_envelope"
field = "after"

[[topics.transforms]]
type = "filter_records"
field = "op"
equals = "r"
action = "drop"

[[topics.transforms]]
type = "delete_fields"
paths = ["secret"]

[[topics.transforms]]
type = "add_fields"
fields = [{ name = "pico_offset", compute = "offset" }]
`

func block(tolerance string) string {
	return strings.Replace(transformBlock, "%s", tolerance, 1)
}

// payloads returns what the plugin was handed, offset by offset.
func payloads(lines []line) map[uint64]string {
	out := map[uint64]string{}
	for _, l := range lines {
		for _, r := range l.Records {
			out[r.Offset] = string(r.Payload)
		}
	}
	return out
}

func filtered(h *harness) int {
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	n := 0
	for _, d := range h.seen.d {
		if d.Outcome == pipeline.OK {
			n += d.Filtered
		}
	}
	return n
}

// The plugin gets each record as the transforms left it, in the block's
// order, numbers exact; the records they drop never reach it, are counted,
// and the offset moves past them.
func TestTransformsRewriteAndDrop(t *testing.T) {
	both(t, func() *fakeplugin.Plugin { return &fakeplugin.Plugin{} }, "", func(t *testing.T, p plug) {
		kf := cluster(t, "orders")
		h := newHarness(t, kf, block(""), p)
		produce(t, kf, "orders",
			`{"after":{"id":12345678901234567890,"op":"c","secret":"x","price":1.10}}`,
			`{"after":null,"op":"d"}`,
			`{"after":{"id":2,"op":"r"}}`,
			`{"after":{"id":3,"op":"u","n":{"b":1,"a":2}}}`,
			`{"after":{"id":4},"op":"d"}`,
			`{"after":{"op":"c"}}`)
		h.start()
		poll.Until(t, 15*time.Second, "commit at 6", func() bool { return committed(t, kf, group, "orders")["orders"] == 6 })
		got := payloads(h.lines())
		want := map[uint64]string{
			0: `{"id":12345678901234567890,"op":"c","price":1.10,"pico_offset":0}`,
			3: `{"id":3,"op":"u","n":{"b":1,"a":2},"pico_offset":3}`,
			4: `{"id":4,"pico_offset":4}`,
			5: `{"op":"c","pico_offset":5}`,
		}
		if len(got) != len(want) {
			t.Fatalf("plugin got %v", got)
		}
		for off, w := range want {
			if got[off] != w {
				t.Errorf("offset %d: got %s, want %s", off, got[off], w)
			}
		}
		if n := filtered(h); n != 2 {
			t.Errorf("filtered %d, want 2", n)
		}
	})
}

// An empty payload (a tombstone) is not transformed: it reaches the plugin
// as it does without transforms, which decides what it gets.
func TestTransformsPassTombstones(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, strings.Replace(block(""), "batch_length = 6", "batch_length = 2", 1), fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders", ``, `{"after":{"id":1}}`)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 2", func() bool { return committed(t, kf, group, "orders")["orders"] == 2 })
	if got := payloads(h.lines()); len(got) != 2 || got[0] != "" || got[1] != `{"id":1,"pico_offset":1}` {
		t.Fatalf("plugin got %v", got)
	}
}

// A batch whose every record a transform dropped reaches no plugin and is
// committed past, as a batch of only dead letters is.
func TestTransformsDropWholeBatch(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, strings.Replace(block(""), "batch_length = 6", "batch_length = 3", 1), fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders", `{"after":null}`, `{"after":{"op":"r"}}`, `{"after":null}`)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "orders")["orders"] == 3 })
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d batches reached the plugin", n)
	}
	if n := filtered(h); n != 3 {
		t.Errorf("filtered %d, want 3", n)
	}
	if got := h.seen.outcomes(); !slices.Equal(got, []string{"orders@0#0:ok"}) {
		t.Errorf("outcomes %v", got)
	}
}

// errors_tolerance = "all": a record that is not JSON (class encoding) and
// one a transform cannot apply to (class value) go to the dead-letter
// topic as they were consumed; the rest is written and the offset moves.
func TestTransformErrorsDeadLettered(t *testing.T) {
	kf := cluster(t, "orders", "orders.dlq")
	h := newHarness(t, kf, block(`errors_tolerance = "all"`), fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders",
		`{"after":{"id":0}}`,
		`{"after":`,
		`{"before":{"id":2}}`,
		`{"after":[3]}`,
		`{"after":null}`,
		`{"after":{"id":5}}`)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 6", func() bool { return committed(t, kf, group, "orders")["orders"] == 6 })
	if got := payloads(h.lines()); len(got) != 2 || got[0] != `{"id":0,"pico_offset":0}` || got[5] != `{"id":5,"pico_offset":5}` {
		t.Fatalf("plugin got %v", got)
	}
	dlq := readTopic(t, kf.ListenAddrs(), "orders.dlq", 3)
	want := []struct{ offset, class, msg, value string }{
		{"1", "encoding", `topic "orders" partition 0 record at offset 1 is not valid JSON (schema = "json")`, `{"after":`},
		{"2", "value", `topic "orders" partition 0 record at offset 2: transform 1 (unwrap_envelope): envelope field "after" is missing`, `{"before":{"id":2}}`},
		{"3", "value", `topic "orders" partition 0 record at offset 3: transform 1 (unwrap_envelope): envelope field "after" is an array, not an object`, `{"after":[3]}`},
	}
	if len(dlq) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(dlq), len(want))
	}
	for i, w := range want {
		r := dlq[i]
		if header(r, metadata.DeadLetterOffset) != w.offset || header(r, metadata.DeadLetterClass) != w.class ||
			header(r, metadata.DeadLetterMessage) != w.msg || string(r.Value) != w.value || header(r, "h") != "v" {
			t.Errorf("dead letter %d: value %q headers %v", i, r.Value, r.Headers)
		}
	}
	if n := filtered(h); n != 1 {
		t.Errorf("filtered %d, want 1", n)
	}
}

// errors_tolerance = "none": a record a transform cannot apply to stops
// the consumer naming its offset; the batch never reaches the plugin and
// nothing is committed.
func TestTransformErrorStops(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, strings.Replace(block(""), "batch_length = 6", "batch_length = 3", 1), fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders", `{"after":{"id":0}}`, `{"after":"x"}`, `{"after":{"id":2}}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Invalid || se.Offset != 0 ||
		!strings.Contains(err.Error(), `record at offset 1: transform 1 (unwrap_envelope): envelope field "after" is a string, not an object`) {
		t.Fatalf("Run = %v, want an invalid stop naming offset 1", err)
	}
	if got := committed(t, kf, group, "orders")["orders"]; got != -1 {
		t.Errorf("committed %d", got)
	}
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d batches written", n)
	}
}

// A filter_records whose field no record has (misspelled) drops every
// record: the first such drop is one warning for the block, not one per
// batch.
func TestFilterAbsentFieldWarnsOnce(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, `[[topics]]
topics = ["orders"]
schema = "json"
batch_length = 2

[[topics.transforms]]
type = "filter_records"
field = "stauts"
equals = "ok"
`, fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders", `{"status":"ok"}`, `{"status":"ok"}`, `{"status":"ok"}`, `{"status":"ok"}`)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 4", func() bool { return committed(t, kf, group, "orders")["orders"] == 4 })
	logs := h.logs.String()
	if n := strings.Count(logs, "event=filter_field_absent"); n != 1 || !strings.Contains(logs, `transform 1 (filter_records) dropped a record whose field \"stauts\" is missing or null`) {
		t.Fatalf("%d filter_field_absent warnings, want 1; logs:\n%s", n, logs)
	}
	if n := filtered(h); n != 4 {
		t.Errorf("filtered %d, want 4", n)
	}
}

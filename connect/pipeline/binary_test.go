package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// A binary-format block (schema = "avro" here; the pipeline does not look
// at the format) decodes each payload through the block's decode.Decoder:
// these tests use a fake Codec, whose "binary" payloads are 0x01 then a
// text, and a fake Decoder around it that can fail transiently, as a
// registry that does not answer.

// binBlock is a [[topics]] block of schema avro on topics, with extra lines.
func binBlock(topics, extra string) string {
	return "[[topics]]\ntopics = [" + topics + "]\nschema = \"avro\"\navro_schema_json = '\"string\"'\n" + extra
}

// textCodec is the fake Codec: 0x01 then a text is {"v":"<text>"};
// anything else is the payload's error.
type textCodec struct{}

func (textCodec) AppendJSON(dst, payload []byte) ([]byte, error) {
	if len(payload) == 0 || payload[0] != 1 {
		return dst, fmt.Errorf("no 0x01 header (%d bytes)", len(payload))
	}
	dst = append(dst, `{"v":"`...)
	dst = append(dst, payload[1:]...)
	return append(dst, `"}`...), nil
}

// bin encodes texts as textCodec payloads; "" stays empty (a tombstone)
// and a text starting with "!" is sent as is (not decodable).
func bin(texts ...string) []string {
	var out []string
	for _, s := range texts {
		switch {
		case s == "", strings.HasPrefix(s, "!"):
			out = append(out, s)
		default:
			out = append(out, "\x01"+s)
		}
	}
	return out
}

// flaky is a fake Decoder, as the registry's: Static over textCodec, but
// its first `down` calls fail with an error that is not the record's. It
// counts the calls running at once.
type flaky struct {
	down            atomic.Int64
	calls           atomic.Int64
	running, maxRun atomic.Int64
	// meet, when set, holds every call until that many ran at once (or
	// 5 s passed): proof that batches decode concurrently.
	meet   int64
	static decode.Static
}

func newFlaky(down int) *flaky {
	f := &flaky{static: decode.Static{Codec: textCodec{}}}
	f.down.Store(int64(down))
	return f
}

func (f *flaky) AppendJSON(ctx context.Context, topic string, dst, payload []byte) ([]byte, error) {
	f.calls.Add(1)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for m := f.maxRun.Load(); n > m && !f.maxRun.CompareAndSwap(m, n); m = f.maxRun.Load() {
	}
	for deadline := time.Now().Add(5 * time.Second); f.meet > 0 && f.maxRun.Load() < f.meet && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	if f.down.Add(-1) >= 0 {
		return dst, errors.New("schema registry: dial tcp 10.0.0.1:8081: connection refused")
	}
	return f.static.AppendJSON(ctx, topic, dst, payload)
}

// payloadsInOrder returns what the plugin was handed, in delivery order.
func payloadsInOrder(l []line) []string {
	var out []string
	for _, b := range l {
		for _, r := range b.Records {
			out = append(out, string(r.Payload))
		}
	}
	return out
}

// Decoded payloads reach the plugin as JSON, in a batch of schema "json";
// a tombstone passes as an empty payload, not decoded.
func TestBinaryDecodedToJSON(t *testing.T) {
	kf := cluster(t, "a")
	p := &fakeplugin.Plugin{}
	h := newHarness(t, kf, binBlock(`"a"`, "batch_length = 5\n"), fake(p))
	dec := newFlaky(0)
	h.decoders = map[int]decode.Decoder{1: dec}
	produce(t, kf, "a", bin("zero", "one", "", "three", "four")...)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 5", func() bool { return committed(t, kf, group, "a")["a"] == 5 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	l := h.lines()
	if len(l) != 1 || l[0].Schema != "json" || l[0].Attempt != 1 {
		t.Fatalf("batches %+v", l)
	}
	want := []string{`{"v":"zero"}`, `{"v":"one"}`, ``, `{"v":"three"}`, `{"v":"four"}`}
	if got := payloadsInOrder(l); !slices.Equal(got, want) {
		t.Errorf("payloads %q, want %q", got, want)
	}
	if n := dec.calls.Load(); n != 4 {
		t.Errorf("%d decoder calls, want 4 (the tombstone is not decoded)", n)
	}
	if d := h.seen.d; len(d) != 1 || d[0].Decoded != 4 || d[0].DecodeTook <= 0 {
		t.Errorf("observed %+v, want one delivery of 4 records decoded", d)
	}
	// Keys and headers pass as they came.
	if r := l[0].Records[1]; r.Key == nil || *r.Key != "aw==" || len(r.Headers) != 1 || r.Headers[0] != [2]string{"h", "v"} {
		t.Errorf("record %+v", r)
	}
}

// errors_tolerance = "all": a record the codec cannot decode goes to the
// dead-letter topic with its original bytes (class encoding); the others
// reach the plugin decoded and the offset moves past the batch.
func TestBinaryRecordErrorsDeadLettered(t *testing.T) {
	kf := cluster(t, "a", "a.dlq")
	h := newHarness(t, kf, binBlock(`"a"`, "batch_length = 6\nerrors_tolerance = \"all\"\n"), fake(&fakeplugin.Plugin{}))
	h.decoders = map[int]decode.Decoder{1: decode.Static{Codec: textCodec{}}}
	produce(t, kf, "a", bin("zero", "!one", "two", "three", "!\x02four", "five")...)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 6", func() bool { return committed(t, kf, group, "a")["a"] == 6 })
	if got, want := payloadsInOrder(h.lines()), []string{`{"v":"zero"}`, `{"v":"two"}`, `{"v":"three"}`, `{"v":"five"}`}; !slices.Equal(got, want) {
		t.Errorf("payloads %q, want %q", got, want)
	}
	if got := offsets(h.lines(), "a"); !slices.Equal(got, []uint64{0, 2, 3, 5}) {
		t.Errorf("offsets %v", got)
	}
	dlq := readTopic(t, kf.ListenAddrs(), "a.dlq", 2)
	if len(dlq) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dlq))
	}
	for i, w := range []struct{ offset, value string }{{"1", "!one"}, {"4", "!\x02four"}} {
		r := dlq[i]
		msg := header(r, metadata.DeadLetterMessage)
		if string(r.Value) != w.value || header(r, metadata.DeadLetterOffset) != w.offset || header(r, metadata.DeadLetterClass) != "encoding" ||
			!strings.Contains(msg, `topic "a" partition 0 record at offset `+w.offset+` cannot be decoded (schema = "avro"): no 0x01 header`) {
			t.Errorf("dead letter %d: value %q headers %v", i, r.Value, r.Headers)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	var counted map[string]int
	for _, d := range h.seen.d {
		if d.DeadLetters != nil {
			counted = d.DeadLetters
		}
	}
	if counted["encoding"] != 2 {
		t.Errorf("observed dead letters %v", counted)
	}
}

// errors_tolerance = "none": a record that cannot be decoded stops the
// consumer naming topic, partition and offset (outcome invalid, as a
// payload that is not JSON); nothing reaches the plugin or commits.
func TestBinaryRecordErrorStops(t *testing.T) {
	kf := cluster(t, "a")
	h := newHarness(t, kf, binBlock(`"a"`, "batch_length = 3\n"), fake(&fakeplugin.Plugin{}))
	h.decoders = map[int]decode.Decoder{1: decode.Static{Codec: textCodec{}}}
	produce(t, kf, "a", bin("zero", "one", "!two")...)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Invalid || !decode.IsRecordError(err) ||
		!strings.Contains(err.Error(), `topic a partition 0 offset 0: invalid after 0 attempt(s): record at offset 2 cannot be decoded (schema = "avro"): no 0x01 header`) {
		t.Fatalf("Run = %v, want an invalid stop naming offset 2", err)
	}
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d batches delivered", n)
	}
	if got := committed(t, kf, group, "a")["a"]; got != -1 {
		t.Errorf("committed %d", got)
	}
}

// A decoder that fails transiently (a registry that does not answer) more
// times than a plugin's RETRY would be allowed: the batch is decoded again
// after each backoff, never dead-lettered, never handed to the plugin
// until it decodes; then it is delivered once, as attempt 1, and its
// offset commits.
func TestBinaryTransientErrorRetried(t *testing.T) {
	kf := cluster(t, "a", "a.dlq")
	p := &fakeplugin.Plugin{}
	h := newHarness(t, kf, binBlock(`"a"`, "batch_length = 4\nerrors_tolerance = \"all\"\n"), fake(p))
	const down = pipeline.MaxAttempts + 3
	dec := newFlaky(down)
	h.decoders = map[int]decode.Decoder{1: dec}
	produce(t, kf, "a", bin("zero", "one", "two", "three")...)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 4", func() bool { return committed(t, kf, group, "a")["a"] == 4 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	calls := p.Calls()
	if len(calls) != 1 || calls[0].Batch.Attempt != 1 || len(calls[0].Batch.Records) != 4 {
		t.Fatalf("plugin calls %+v, want the batch once, attempt 1", calls)
	}
	if got := payloadsInOrder(h.lines()); !slices.Equal(got, []string{`{"v":"zero"}`, `{"v":"one"}`, `{"v":"two"}`, `{"v":"three"}`}) {
		t.Errorf("payloads %q", got)
	}
	if got := h.decodeBackoff.get(); len(got) != down || got[down-1] != down {
		t.Errorf("decode backoff after attempts %v, want 1 to %d", got, down)
	}
	if len(h.backoff.get()) != 0 {
		t.Errorf("plugin backoff used: %v", h.backoff.get())
	}
	if !h.logged("event=decode_retry") || !h.logged("connection refused") {
		t.Error("no decode_retry line with the decoder's error")
	}
	if dlq := readTopic(t, kf.ListenAddrs(), "a.dlq", 1); len(dlq) != 0 {
		t.Errorf("%d dead letters", len(dlq))
	}
	var seen []string
	for _, d := range h.seen.d {
		seen = append(seen, fmt.Sprintf("%s#%d:%d", d.Outcome, d.Attempt, d.Decoded))
	}
	want := slices.Repeat([]string{"decode_retry#0:0"}, down)
	if want = append(want, "ok#1:4"); !slices.Equal(seen, want) {
		t.Errorf("observed %v, want %v", seen, want)
	}
}

// A registry outage when the runtime is asked to stop: the wait between
// decode attempts ends at once, the batch is neither delivered nor
// committed (it comes first on restart), and the stop is clean.
func TestBinaryTransientErrorAtShutdown(t *testing.T) {
	for _, inFlight := range []int{1, 2} {
		t.Run(fmt.Sprintf("max_in_flight=%d", inFlight), func(t *testing.T) { testBinaryTransientErrorAtShutdown(t, inFlight) })
	}
}

func testBinaryTransientErrorAtShutdown(t *testing.T, inFlight int) {
	kf := cluster(t, "a", "b")
	p := &fakeplugin.Plugin{}
	h := newHarness(t, kf, binBlock(`"a"`, fmt.Sprintf("batch_length = 2\nmax_in_flight = %d\n", inFlight))+
		"[[topics]]\ntopics = [\"b\"]\nschema = \"json\"\nbatch_length = 1\n", fake(p))
	h.decoders = map[int]decode.Decoder{1: newFlaky(1 << 30)}
	h.decodeBackoff.d = time.Hour
	produce(t, kf, "a", bin("zero", "one")...)
	produce(t, kf, "b", `{"n":0}`)
	h.start()
	poll.Until(t, 15*time.Second, "a decode retry", func() bool { return h.logged("event=decode_retry") })
	poll.Until(t, 15*time.Second, "b committed", func() bool { return committed(t, kf, group+"-2", "b")["b"] == 1 })
	start := time.Now()
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("stop took %v", took)
	}
	if got := committed(t, kf, group, "a")["a"]; got != -1 {
		t.Errorf("committed %d", got)
	}
	if got := offsets(h.lines(), "a"); len(got) != 0 {
		t.Errorf("delivered %v", got)
	}
	if st, err := h.sink.State(); st != pipeline.StateStopped {
		t.Errorf("state %s %v", st, err)
	}
}

// max_in_flight > 1: batches of several partitions decode at once through
// the one Decoder, each into its own buffers; every record arrives decoded
// exactly once, in order per partition.
func TestBinaryInFlight(t *testing.T) {
	topics := []string{"a", "b", "c", "d"}
	kf := cluster(t, topics...)
	p := &fakeplugin.Plugin{Concurrent: true}
	h := newHarness(t, kf, binBlock(`"a", "b", "c", "d"`, "batch_length = 10\nmax_in_flight = 4\npoll_interval = \"50ms\"\n"), fake(p))
	dec := newFlaky(0)
	dec.meet = 2
	h.decoders = map[int]decode.Decoder{1: dec}
	const n = 200
	for _, topic := range topics {
		var texts []string
		for i := range n {
			texts = append(texts, fmt.Sprintf("%s-%d", topic, i))
		}
		produce(t, kf, topic, bin(texts...)...)
	}
	h.start()
	poll.Until(t, 30*time.Second, "everything committed", func() bool {
		c := committed(t, kf, group, topics...)
		return c["a"] == n && c["b"] == n && c["c"] == n && c["d"] == n
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		var got []string
		for _, l := range h.lines() {
			if l.Topic == topic {
				if l.Schema != "json" {
					t.Fatalf("schema %q", l.Schema)
				}
				for _, r := range l.Records {
					got = append(got, string(r.Payload))
				}
			}
		}
		if len(got) != n {
			t.Fatalf("%s: %d records, want %d", topic, len(got), n)
		}
		for i, s := range got {
			if want := fmt.Sprintf(`{"v":"%s-%d"}`, topic, i); s != want {
				t.Fatalf("%s record %d: %s, want %s", topic, i, s, want)
			}
		}
	}
	if s := p.Snapshot(); s.Overlaps != 0 {
		t.Errorf("%d overlapping batches of one partition", s.Overlaps)
	}
	if m := dec.maxRun.Load(); m < 2 {
		t.Errorf("at most %d decoder calls at once, want batches decoding together", m)
	}
}

// A binary-format block without a decoder is refused before the plugin
// opens: its bytes must never reach the plugin as they are.
func TestBinaryWithoutDecoderRefused(t *testing.T) {
	kf := cluster(t, "a")
	p := &fakeplugin.Plugin{}
	h := newHarness(t, kf, binBlock(`"a"`, ""), fake(p))
	h.start()
	err := h.wait(10 * time.Second)
	var re *pipeline.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `test.toml: [[topics]] block 1: schema "avro": no decoder was built for it`) {
		t.Fatalf("Run = %v", err)
	}
	if p.Opens() != 0 {
		t.Errorf("%d opens", p.Opens())
	}
}
